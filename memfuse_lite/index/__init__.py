"""Derived indexes: dense (hnswlib) and sparse (tantivy BM25), rebuilt from SQLite."""

from .base import DerivedIndex
from .dense import HnswIndex
from .sparse import TantivyIndex
from .tokenize import tokenize

__all__ = ["DerivedIndex", "HnswIndex", "TantivyIndex", "tokenize"]
