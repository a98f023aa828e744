"""The one place where concrete index classes are named: backends by name, built from
config. A new backend is a :class:`DenseIndex` or :class:`TextIndex` subclass registered
here (or into these dicts by the application) and chosen in ``IndexConfig``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..config import IndexConfig
from ..errors import MemFuseError
from .base import DenseIndex, DerivedIndex, TextIndex
from .dense import HnswIndex
from .sparse import TantivyIndex

DenseFactory = Callable[[Path, int, str, IndexConfig], DenseIndex]
"""(memory directory, dimensions, embedding model key, config) → a dense index."""
TextFactory = Callable[[Path, IndexConfig], TextIndex]
"""(memory directory, config) → a text index."""

DENSE_BACKENDS: dict[str, DenseFactory] = {
    "hnsw": lambda path, dims, key, cfg: HnswIndex(path, dims=dims, model_key=key, cfg=cfg),
}
TEXT_BACKENDS: dict[str, TextFactory] = {
    "tantivy": lambda path, cfg: TantivyIndex(path, commit_every_s=cfg.text_commit_every_s),
}


@dataclass(frozen=True, slots=True)
class Indexes:
    """A memory's derived indexes."""

    dense: DenseIndex
    text: TextIndex

    def __iter__(self) -> Iterator[DerivedIndex]:
        """In update order."""
        return iter((self.dense, self.text))


def open_indexes(path: Path, cfg: IndexConfig, *, dims: int, model_key: str) -> Indexes:
    """Open (or start) the configured backends in ``path``."""
    for name, known in ((cfg.dense_backend, DENSE_BACKENDS), (cfg.text_backend, TEXT_BACKENDS)):
        if name not in known:
            raise MemFuseError(f"no index backend {name!r}; known: {', '.join(sorted(known))}")
    dense = DENSE_BACKENDS[cfg.dense_backend](path, dims, model_key, cfg)
    try:
        text = TEXT_BACKENDS[cfg.text_backend](path, cfg)
    except BaseException:
        dense.close()
        raise
    return Indexes(dense, text)
