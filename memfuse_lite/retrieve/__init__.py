"""Retrieval: pipelines over the derived indexes."""

from .rrf import rrf
from ..config import PIPELINES
from .search import Searcher

__all__ = ["PIPELINES", "Searcher", "rrf"]
