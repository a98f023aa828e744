"""Prompts, one module per task, each with its JSON schema beside it."""
