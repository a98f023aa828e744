"""Local LLMs: the interface, token accounting and the llama.cpp backend."""

from .base import LLM, Completion, Message, TokenMeter, Usage
from .llamacpp import LlamaCppLLM

__all__ = ["LLM", "Completion", "LlamaCppLLM", "Message", "TokenMeter", "Usage"]
