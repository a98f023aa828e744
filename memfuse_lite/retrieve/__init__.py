"""Retrieval: named pipelines over the derived indexes and the fusion graph."""

from .base import Context, Pipeline, Request
from .registry import PIPELINES, register
from .rrf import rrf
from .search import Searcher

__all__ = ["PIPELINES", "Context", "Pipeline", "Request", "Searcher", "register", "rrf"]
