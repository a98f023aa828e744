"""Whole-memory operations over an engine's components: catching indexes up, forgetting,
rebuilding fusion, renumbering canonically, re-embedding and exporting the log."""
