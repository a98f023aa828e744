"""Dense index: hnswlib (cosine) persisted to ``dense.hnsw`` with a ``dense.json`` sidecar.

Visibility is applied inside the HNSW search through hnswlib's filter callback, so a
viewer's k results are k results it may see (never a short list post-filtered to nothing).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import hnswlib
import numpy as np

from ..config import IndexConfig
from ..prepare.checksums import sha256_file
from ..store.sqlite import IndexRow
from .base import DerivedIndex, log, read_sidecar, write_sidecar

FORMAT = 1


class HnswIndex(DerivedIndex):
    """Approximate nearest neighbours over event embeddings."""

    name = "dense"

    def __init__(self, directory: Path, *, dims: int, model_key: str, cfg: IndexConfig) -> None:
        self.path = Path(directory) / "dense.hnsw"
        self.sidecar = Path(directory) / "dense.json"
        self.dims = dims
        self.model_key = model_key
        self.cfg = cfg
        self._lock = threading.Lock()
        self._restricted: dict[int, frozenset[str]] = {}
        self._deleted: set[int] = set()
        self._last_save = time.monotonic()
        self._dirty = False
        self.watermark = 0
        self._load()

    def _new(self, capacity: int = 1024) -> hnswlib.Index:
        index = hnswlib.Index(space="cosine", dim=self.dims)
        index.init_index(
            max_elements=capacity,
            ef_construction=self.cfg.hnsw_ef_construction,
            M=self.cfg.hnsw_m,
            allow_replace_deleted=False,
        )
        index.set_ef(self.cfg.hnsw_ef_search)
        return index

    def _load(self) -> None:
        meta = read_sidecar(self.sidecar)
        reason = None
        if meta is None:
            reason = "no sidecar" if not self.path.exists() else "unreadable sidecar"
        elif meta.get("format") != FORMAT or meta.get("model") != self.model_key:
            reason = "built by another model or format"
        elif not self.path.exists():
            reason = "index file missing"
        elif self.path.stat().st_size != meta.get("size") or sha256_file(self.path) != meta.get(
            "sha256"
        ):
            reason = "index file does not match its checksum"
        if reason is None:
            try:
                index = hnswlib.Index(space="cosine", dim=self.dims)
                index.load_index(str(self.path), max_elements=int(meta["capacity"]))  # type: ignore[index]
                index.set_ef(self.cfg.hnsw_ef_search)
                self.index = index
                self.watermark = int(meta["watermark"])  # type: ignore[index]
                return
            except (RuntimeError, ValueError, KeyError, TypeError) as exc:
                reason = f"load failed: {exc}"
        if self.path.exists() or meta is not None:
            log.warning("dense index at %s will be rebuilt from SQLite: %s", self.path, reason)
        self.rebuilt_reason = reason
        self.index = self._new()
        self.watermark = 0

    def set_restricted(self, restricted: dict[int, frozenset[str]]) -> None:
        """Labels visible only to some users (everything else is household-visible)."""
        with self._lock:
            self._restricted = dict(restricted)

    def reset(self) -> None:
        """Drop everything."""
        with self._lock:
            self.index = self._new()
            self._restricted = {}
            self._deleted = set()
            self.watermark = 0
            self._dirty = True

    def add(self, rows: Sequence[IndexRow]) -> None:
        """Add or replace vectors; grows the index by doubling."""
        if not rows:
            return
        with self._lock:
            need = self.index.element_count + len(rows)
            if need > self.index.get_max_elements():
                self.index.resize_index(max(need, 2 * self.index.get_max_elements()))
            vecs = np.stack([r.embedding for r in rows]).astype(np.float32)
            self.index.add_items(vecs, np.array([r.id for r in rows], dtype=np.int64), num_threads=1)
            for r in rows:
                self._deleted.discard(r.id)
                if r.audience is not None:
                    self._restricted[r.id] = frozenset(r.audience)
                else:
                    self._restricted.pop(r.id, None)
            self.watermark = max(self.watermark, max(r.id for r in rows))
            self._dirty = True
        if time.monotonic() - self._last_save > self.cfg.save_every_s:
            self.persist()

    def remove(self, ids: Sequence[int]) -> None:
        """Hide ids from every search (hnswlib mark_deleted)."""
        with self._lock:
            for i in ids:
                if int(i) in self._deleted:
                    continue
                try:
                    self.index.mark_deleted(int(i))
                except RuntimeError:
                    continue  # never added
                self._deleted.add(int(i))
                self._restricted.pop(int(i), None)
            self._dirty = True

    def __len__(self) -> int:
        return int(self.index.get_current_count()) - len(self._deleted)

    def labels(self) -> set[int]:
        """Every live label."""
        with self._lock:
            return set(self.index.get_ids_list()) - self._deleted

    def search(self, query: np.ndarray, viewer: str, k: int) -> list[tuple[int, float]]:
        """The k nearest events the viewer may see, as (event id, cosine similarity)."""
        with self._lock:
            hidden = sum(1 for aud in self._restricted.values() if viewer not in aud)
            k = min(k, len(self) - hidden)
            if k <= 0:
                return []
            restricted = self._restricted
            filt = None
            if hidden:
                def filt(label: int) -> bool:
                    aud = restricted.get(label)
                    return aud is None or viewer in aud
            self.index.set_ef(max(self.cfg.hnsw_ef_search, k))
            try:
                labels, dists = self.index.knn_query(query.reshape(1, -1), k=k, filter=filt)
            except RuntimeError:
                # Fewer reachable than k (deleted or filtered out): ask for what exists.
                return self._search_exact(query, viewer, k)
        return [(int(lab), float(1.0 - d)) for lab, d in zip(labels[0], dists[0], strict=True)]

    def search_all(self, query: np.ndarray, k: int, below: int | None = None
                   ) -> list[tuple[int, float]]:
        """The k nearest live events regardless of audience (fusion is household-internal;
        visibility is applied when fused memories are read); ``below`` keeps only ids
        smaller than it (rebuilding fusion sees only what came before, as online)."""
        with self._lock:
            k = min(k, len(self), below - 1 if below is not None else len(self))
            if k <= 0:
                return []
            self.index.set_ef(max(self.cfg.hnsw_ef_search, k))
            filt = (lambda label: label < below) if below is not None else None
            try:
                labels, dists = self.index.knn_query(query.reshape(1, -1), k=k, filter=filt)
            except RuntimeError:
                return []
        return [(int(lab), float(1.0 - d)) for lab, d in zip(labels[0], dists[0], strict=True)]

    def _search_exact(self, query: np.ndarray, viewer: str, k: int) -> list[tuple[int, float]]:
        ids = [i for i in self.index.get_ids_list()
               if i not in self._deleted
               and (i not in self._restricted or viewer in self._restricted[i])]
        if not ids:
            return []
        vecs = np.asarray(self.index.get_items(ids), dtype=np.float32)
        sims = vecs @ query / np.maximum(np.linalg.norm(vecs, axis=1), 1e-12)
        order = np.argsort(-sims)[:k]
        return [(int(ids[i]), float(sims[i])) for i in order]

    def persist(self) -> None:
        """Write the index file and then its sidecar (both atomically)."""
        with self._lock:
            if not self._dirty and self.path.exists():
                return
            tmp = self.path.with_suffix(".hnsw.tmp")
            self.index.save_index(str(tmp))
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            write_sidecar(
                self.sidecar,
                {
                    "format": FORMAT,
                    "model": self.model_key,
                    "dims": self.dims,
                    "watermark": self.watermark,
                    "capacity": int(self.index.get_max_elements()),
                    "size": self.path.stat().st_size,
                    "sha256": sha256_file(self.path),
                },
            )
            self._dirty = False
            self._last_save = time.monotonic()

    def close(self) -> None:
        """Persist."""
        self.persist()
