"""Derived indexes: dense (hnswlib) and text (tantivy BM25), rebuilt from SQLite.

Retrieval and fusion see them through :class:`DenseIndex` and :class:`TextIndex`; the
backends are chosen by name in :class:`~memfuse_lite.config.IndexConfig` and built by
:func:`open_indexes`, the one place that names a concrete class.
"""

from .base import EVENT, FUSED, DenseIndex, DerivedIndex, DocKind, IndexFilter, TextHit, TextIndex
from .factory import DENSE_BACKENDS, TEXT_BACKENDS, Indexes, open_indexes

__all__ = ["DENSE_BACKENDS", "EVENT", "FUSED", "TEXT_BACKENDS", "DenseIndex", "DerivedIndex",
           "DocKind", "IndexFilter", "Indexes", "TextHit", "TextIndex", "open_indexes"]
