"""Retrieval: pipelines over the derived indexes."""

from .rrf import rrf
from .search import PIPELINES, Searcher

__all__ = ["PIPELINES", "Searcher", "rrf"]
