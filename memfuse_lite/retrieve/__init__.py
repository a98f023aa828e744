"""Retrieval: pipelines over the derived indexes."""

from ..config import PIPELINES
from .rrf import rrf
from .search import Searcher

__all__ = ["PIPELINES", "Searcher", "rrf"]
