"""Dense index: hnswlib (cosine) persisted to ``dense.hnsw`` with a ``dense.json`` sidecar.

Events with the same text share one point of the graph (a call log's "Outgoing call to
HomeCare Repairs, 5 min" recurs hundreds of times): on the generated household that is a
third fewer vectors, a third smaller index and a faster build at the same recall
(``bench ann`` against ``--point-per-record``). A point found stands for its events,
newest first.

Visibility is applied inside the HNSW search through hnswlib's filter callback, so a
viewer's k results are k results it may see (never a short list post-filtered to nothing);
a point passes when one of its events does. What the filters read of each event (time,
user, source, audience, live) and which point holds its vector are kept in arrays saved
beside the graph (``dense.filters.npz``, checksummed in the sidecar); without a matching
file the index is rebuilt from SQLite.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np

from ..checksums import sha256_file
from ..config import IndexConfig
from ..event import EventRecord
from .base import DenseIndex, IndexFilter, VectorSource, log, read_sidecar, write_sidecar
from .cost import (
    EXACT_BLOCK,
    INDEX_ROW_US,
    OVERSAMPLE,
    OVERSAMPLE_WIDEST,
    STORED_ROW_US,
    exact_pays,
)
from .filters import ARRAYS, EventFilters, grow

FORMAT = 2
"""2: events with the same text share a point (1: a point per event)."""
PERSIST_SPACING = 20
"""Periodic saves wait at least this many times as long as the last save took."""
PASSING_HELD = 4
"""Filters whose passing events and points are kept for the next searches (the rewrites of
one question search under one filter; each kept filter holds two bytes per event id)."""
FILTER_ARRAYS = (*ARRAYS, "point")
"""The per-event arrays saved in ``dense.filters.npz`` (with the removed events and the
text keys of the points)."""


def text_key(text: str) -> int:
    """A stable 64-bit key of an event's text (the same in every process)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class HnswIndex(DenseIndex):
    """Approximate nearest neighbours over event embeddings."""

    name = "dense"

    def __init__(self, directory: Path, *, dims: int, model_key: str, cfg: IndexConfig) -> None:
        self.path = Path(directory) / "dense.hnsw"
        self.sidecar = Path(directory) / "dense.json"
        self.filters_path = Path(directory) / "dense.filters.npz"
        self.dims = dims
        self.model_key = model_key
        self.cfg = cfg
        self._lock = threading.RLock()
        self.filters = EventFilters()
        self._deleted: set[int] = set()
        # The graph point holding each event's vector (-1: not in the index); an event's
        # point is the first event added with its text, so the smallest id of its group.
        self._point = np.zeros(0, dtype=np.int64)
        self._copies: dict[int, list[int]] = {}  # point -> its other events, ascending
        self._by_text: dict[int, int] = {}  # text key -> point
        self._dead_points: set[int] = set()  # points whose events are all removed
        self._present = 0  # events added since the last reset, removed ones included
        self._last_save = time.monotonic()
        self._persist_seconds = 0.0
        self._dirty = False
        self.watermark = 0
        # (viewer, filter) -> events and points passing it, read-only; emptied with _seen
        self._passing: dict[tuple[str, IndexFilter | None], tuple[np.ndarray, np.ndarray]] = {}
        self._stored: VectorSource | None = None  # where exact scoring reads vectors
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
                if not self._load_filters(meta):  # type: ignore[arg-type]
                    raise ValueError("its filter arrays are missing or damaged")
                self.watermark = int(meta["watermark"])  # type: ignore[index]
                return
            except (RuntimeError, ValueError, KeyError, TypeError) as exc:
                reason = f"load failed: {exc}"
        if self.path.exists() or meta is not None:
            log.warning("dense index at %s will be rebuilt from SQLite: %s", self.path, reason)
        self.rebuilt_reason = reason
        self.index = self._new()
        self.watermark = 0

    def _load_filters(self, meta: dict[str, object]) -> bool:
        """Restore the filter arrays saved with this very index file; False when they are
        missing or do not match their checksum (then the index is rebuilt)."""
        path = self.filters_path
        if meta.get("filters_sha256") is None or not path.exists():
            return False
        if path.stat().st_size != meta.get("filters_size") or \
                sha256_file(path) != meta.get("filters_sha256"):
            log.warning("%s does not match its checksum", path)
            return False
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in FILTER_ARRAYS + ("deleted", "keys", "points")}
            codes = [str(c) for c in meta["codes"]]  # type: ignore[attr-defined]
            audiences = [frozenset(str(u) for u in a)
                         for a in meta["audiences"]]  # type: ignore[attr-defined]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("%s unreadable (%s)", path, exc)
            return False
        self.filters.restore(arrays, codes, audiences)
        self._point = arrays["point"].astype(np.int64)
        self._deleted = {int(i) for i in arrays["deleted"]}
        self._by_text = dict(zip(arrays["keys"].tolist(), arrays["points"].tolist(),
                                 strict=True))
        events = np.flatnonzero(self._point >= 0)
        self._present = len(events)
        self._copies = {}
        for e in events[self._point[events] != events].tolist():  # ascending
            self._copies.setdefault(int(self._point[e]), []).append(e)
        alive = np.zeros(len(self._point), dtype=bool)
        alive[self._point[self.filters.live & (self._point >= 0)]] = True
        self._dead_points = {int(p) for p in events[self._point[events] == events]
                             if not alive[p]}
        self._changed()
        return True

    def _save_filters(self) -> dict[str, object]:
        """Write the filter arrays (temp file + fsync + rename); the sidecar fields."""
        tmp = self.filters_path.with_suffix(".tmp.npz")
        arrays: dict[str, Any] = {
            **self.filters.arrays(), "point": self._point,
            "deleted": np.asarray(sorted(self._deleted), dtype=np.int64),
            "keys": np.fromiter(self._by_text, dtype=np.uint64, count=len(self._by_text)),
            "points": np.fromiter(self._by_text.values(), dtype=np.int64,
                                  count=len(self._by_text))}
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.filters_path)
        return {"filters_size": self.filters_path.stat().st_size,
                "filters_sha256": sha256_file(self.filters_path), **self.filters.names()}

    def _changed(self) -> None:
        """Forget what passed the filters (an event's liveness or audience changed)."""
        self.filters.changed()
        self._passing = {}

    def _reserve(self, top: int) -> None:
        """Room in the per-event arrays for ids below ``top``."""
        if top <= len(self._point):
            return
        size = max(top, 2 * len(self._point), 1024)
        self.filters.reserve(size)
        self._point = grow(self._point, size, -1)

    def describe(self, rows: Sequence[EventRecord]) -> None:
        """Record what filters need of each event (its vector may already be indexed)."""
        if not rows:
            return
        with self._lock:
            self._reserve(max(r.id for r in rows) + 1)
            self._changed()
            self.filters.describe(rows, self._deleted)

    def reset(self) -> None:
        """Drop everything."""
        with self._lock:
            self.index = self._new()
            self.filters.clear()
            self._deleted = set()
            self._changed()
            self._point[:] = -1
            self._copies, self._by_text, self._dead_points = {}, {}, set()
            self._present = 0
            self.watermark = 0
            self._dirty = True

    def add(self, rows: Sequence[EventRecord]) -> None:
        """Add events: a text already indexed joins that text's point, a new text gets a
        point of its own (labelled with its event id); re-adding an event replaces its
        point's vector. Grows the index by doubling."""
        if not rows:
            return
        with self._lock:
            self._reserve(max(r.id for r in rows) + 1)
            fresh: dict[int, np.ndarray] = {}  # point -> vector to (re)write
            for r in rows:
                point = int(self._point[r.id])
                if point < 0:
                    key = text_key(r.text)
                    point = self._by_text.setdefault(key, r.id)
                    self._point[r.id] = point
                    self._present += 1
                    if point != r.id:
                        bisect.insort(self._copies.setdefault(point, []), r.id)
                if point == r.id or point in self._dead_points:
                    fresh[point] = r.vector  # (writing a removed point revives it)
                self._deleted.discard(r.id)
                self._dead_points.discard(point)
            if fresh:
                need = self.index.element_count + len(fresh)
                if need > self.index.get_max_elements():
                    self.index.resize_index(max(need, 2 * self.index.get_max_elements()))
                self.index.add_items(np.stack(list(fresh.values())).astype(np.float32),
                                     np.fromiter(fresh, dtype=np.int64, count=len(fresh)),
                                     num_threads=1)
            self.describe(rows)
            self.watermark = max(self.watermark, max(r.id for r in rows))
            self._dirty = True
        # Writing the graph costs time in proportion to its size: saves are spaced so they take at most 1/PERSIST_SPACING of the time.
        # What is not saved is caught up from SQLite after a crash.
        wait = max(self.cfg.save_every_s, PERSIST_SPACING * self._persist_seconds)
        if time.monotonic() - self._last_save > wait:
            self.persist()

    def remove(self, ids: Sequence[int]) -> None:
        """Hide events from every search; a point goes (hnswlib mark_deleted) with the
        last of its events."""
        with self._lock:
            for i in map(int, ids):
                if i in self._deleted or i >= len(self._point) or self._point[i] < 0:
                    continue  # never added, or already removed
                self._deleted.add(i)
                self.filters.live[i] = False
                point = int(self._point[i])
                if point in self._deleted and all(
                        c in self._deleted for c in self._copies.get(point, ())):
                    self.index.mark_deleted(point)
                    self._dead_points.add(point)
            self._changed()
            self._dirty = True

    def erase(self) -> None:
        """Overwrite the vectors of removed points with noise, then mark them removed
        again (hnswlib's mark_deleted keeps a vector in the graph and in the saved file),
        and forget their texts' keys: nothing of a removed text stays in the index or its
        files. A point erased before has no key left and is not written again."""
        with self._lock:
            keyed = {point: key for key, point in self._by_text.items()}
            todo = sorted(p for p in self._dead_points if p in keyed)
            if not todo:
                return
            noise = np.random.default_rng(len(todo)).standard_normal(
                (len(todo), self.dims)).astype(np.float32)
            self.index.add_items(noise, np.asarray(todo, dtype=np.int64), num_threads=1)
            for point in todo:
                self.index.mark_deleted(point)
                del self._by_text[keyed[point]]
            self._changed()
            self._dirty = True

    def compact_if_worthwhile(self, rows: Callable[[], Iterable[Sequence[EventRecord]]]) -> bool:
        """Rebuild without removed points (mark_deleted keeps them in the file) once they
        reach ``compact_deleted_ratio`` of the index; ``rows`` yields every live event."""
        with self._lock:
            total = int(self.index.get_current_count())
            if not self._dead_points or \
                    len(self._dead_points) < self.cfg.compact_deleted_ratio * total:
                return False
            watermark = self.watermark
            self.reset()
            for batch in rows():
                self.add(batch)
            self.watermark = max(self.watermark, watermark)
            self._dirty = True
            return True

    def __len__(self) -> int:
        return self._present - len(self._deleted)

    def event_count(self) -> int:
        """Live events."""
        return len(self)

    def labels(self) -> set[int]:
        """Every live event."""
        with self._lock:
            return set(np.flatnonzero(self._point >= 0).tolist()) - self._deleted

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """The live points of the graph and how many live events each stands for."""
        with self._lock:
            events = np.flatnonzero(self.filters.live & (self._point >= 0))
            points, copies = np.unique(self._point[events], return_counts=True)
            return points, copies

    def _live_points(self) -> int:
        return int(self.index.get_current_count()) - len(self._dead_points)

    def allowed(self, viewer: str, where: IndexFilter | None = None) -> np.ndarray:
        """Boolean mask over event ids: live, visible to ``viewer`` and within ``where``
        (a fresh array the caller may change)."""
        return self.filters.allowed(viewer, where)

    def _passing_of(self, viewer: str, where: IndexFilter | None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The events (:meth:`allowed`) and the points (:meth:`_points_of`) passing a
        viewer's filter, read-only, kept for the next searches under the same filter
        until an event changes."""
        key = (viewer, where)
        found = self._passing.get(key)
        if found is None:
            mask = self.allowed(viewer, where)
            points = self._points_of(mask)  # (mask itself when no text repeats)
            mask.flags.writeable = points.flags.writeable = False
            if len(self._passing) >= PASSING_HELD:
                del self._passing[next(iter(self._passing))]
            found = self._passing[key] = (mask, points)
        return found

    def _points_of(self, mask: np.ndarray) -> np.ndarray:
        """The points holding at least one event of ``mask``."""
        if not self._copies:
            return mask
        points = np.zeros(len(mask), dtype=bool)
        points[self._point[np.flatnonzero(mask)]] = True
        return points

    def _events(self, found: Iterable[tuple[int, float]], k: int,
                passes: Callable[[int], bool]) -> list[tuple[int, float]]:
        """The first k events of the points ``found`` (point, cosine), each point's events
        that ``passes`` newest first."""
        out: list[tuple[int, float]] = []
        for point, sim in found:
            group = self._copies.get(point)
            members = [point] if group is None else [*reversed(group), point]
            out += [(e, sim) for e in members if passes(e)]
            if len(out) >= k:
                break
        return out[:k]

    def search(self, query: np.ndarray, viewer: str, k: int,
               where: IndexFilter | None = None) -> list[tuple[int, float]]:
        """The k nearest events the viewer may see within ``where``, as (id, cosine).

        The filter runs inside the HNSW search; when few events pass it, they are scored
        exactly instead (a filtered graph walk over a small share of the points visits
        most of the graph to find them: :func:`exact_pays`)."""
        with self._lock:
            mask, points = self._passing_of(viewer, where)
            available = int(mask.sum())
            k = min(k, available)
            if k <= 0:
                return []
            passing, total = int(points.sum()), self._live_points()
            row_us = INDEX_ROW_US if self._stored is None else STORED_ROW_US
            if exact_pays(available, passing, total, self.cfg.hnsw_ef_filtered, row_us):
                return self._exact(query, np.flatnonzero(mask), k)
            want = min(k, passing)  # as many points hold at least k passing events
            passes = mask.__getitem__
            # Enough points pass: search unfiltered for a few times k and filter after,
            # instead of a Python filter callback at every visited graph node.
            wide = min(total, max(4 * want, want + 50, -(-OVERSAMPLE * want * total // passing)))
            if passing < total and wide <= OVERSAMPLE_WIDEST:
                self.index.set_ef(max(self.cfg.hnsw_ef_search, wide))
                try:
                    labels, dists = self.index.knn_query(query.reshape(1, -1), k=wide)
                except RuntimeError:
                    labels = None
                if labels is not None:
                    kept = self._events(((int(lab), float(1.0 - d)) for lab, d in
                                         zip(labels[0], dists[0], strict=True)
                                         if points[int(lab)]), k, passes)
                    if len(kept) >= k:
                        return kept
            found = self.walk(query, None if passing == total else points, want)
            if found is None:
                return self._exact(query, np.flatnonzero(mask), k)
            return self._events(found, k, passes)

    def walk(self, query: np.ndarray, points: np.ndarray | None, k: int,
             ef: int | None = None) -> list[tuple[int, float]] | None:
        """The k nearest points (point, cosine) among ``points`` (a boolean mask over
        labels; None: all) by one graph walk, at ``ef`` (default: ``hnsw_ef_search``
        unfiltered, ``hnsw_ef_filtered`` filtered); None when hnswlib cannot find k."""
        if ef is None:
            ef = self.cfg.hnsw_ef_search if points is None else self.cfg.hnsw_ef_filtered
        self.index.set_ef(max(ef, k))
        # hnswlib calls the filter at every node it visits: index bytes, not numpy
        filt = None if points is None else points.view(np.uint8).tobytes().__getitem__
        try:
            labels, dists = self.index.knn_query(query.reshape(1, -1), k=k, filter=filt)
        except RuntimeError:
            return None
        return [(int(lab), float(1.0 - d)) for lab, d in zip(labels[0], dists[0], strict=True)]

    def vector_blocks(self, ids: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(event ids, their vectors) in blocks of :data:`EXACT_BLOCK`: reading many
        vectors at once would hold that many small copies in the heap after use."""
        for start in range(0, len(ids), EXACT_BLOCK):
            block = np.asarray(ids[start:start + EXACT_BLOCK], dtype=np.int64)
            vecs = self.index.get_items(self._point[block].tolist())
            yield block, np.asarray(vecs, dtype=np.float32)

    def vector_of(self, text: str) -> np.ndarray | None:
        """The vector of this text's point, while one of its events lives."""
        with self._lock:
            point = self._by_text.get(text_key(text))
            if point is None or point in self._dead_points:
                return None
            return np.asarray(self.index.get_items([point])[0], dtype=np.float32)

    def read_vectors_from(self, source: VectorSource) -> None:
        """Exact scoring reads vectors from ``source`` (the store) instead of hnswlib:
        about 7 times faster per vector."""
        self._stored = source

    def _scoring_blocks(self, ids: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(event ids, their vectors) to score, in blocks of :data:`EXACT_BLOCK`: from
        the store when one is attached (ids it no longer holds are left out), else from
        hnswlib."""
        if self._stored is None:
            yield from self.vector_blocks(ids)
            return
        for start in range(0, len(ids), EXACT_BLOCK):
            found, vecs = self._stored(ids[start:start + EXACT_BLOCK].tolist())
            if len(found):
                yield found, vecs

    def _exact(self, query: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k ids most similar to ``query``, scored block by block; ties (events of one
        text) go to the newer id."""
        best_ids = np.zeros(0, dtype=np.int64)
        best_sims = np.zeros(0, dtype=np.float32)
        for block, vecs in self._scoring_blocks(ids):
            sims = (vecs @ query / np.maximum(np.linalg.norm(vecs, axis=1), 1e-12)
                    ).astype(np.float32)
            best_ids = np.concatenate([best_ids, block])
            best_sims = np.concatenate([best_sims, sims])
            order = np.lexsort((-best_ids, -best_sims))[:k]
            best_ids, best_sims = best_ids[order], best_sims[order]
        return [(int(i), float(s)) for i, s in zip(best_ids, best_sims, strict=True)]

    def similarities(self, query: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of ``query`` with each indexed id (ids not indexed are left out)."""
        with self._lock:
            live = self.filters.live
            known = [int(i) for i in ids if int(i) < len(live) and live[int(i)]]
            if not known:
                return {}
            return dict(self._exact(query, np.asarray(known), len(known)))

    def search_all(self, query: np.ndarray, k: int, below: int | None = None,
                   ef: int | None = None) -> list[tuple[int, float]]:
        """The k nearest live events regardless of audience (fusion is household-internal;
        visibility is applied when fused memories are read); ``below`` keeps only ids
        smaller than it (rebuilding fusion sees only what came before, as online)."""
        with self._lock:
            want = min(k, self._live_points(), below - 1 if below is not None else k)
            if want <= 0:
                return []
            self.index.set_ef(max(self.cfg.hnsw_ef_search if ef is None else ef, want))
            # Online, every indexed event is older than the new one: no filter callback
            # (a Python call per visited node) on the ingest path; rebuilds need it. A
            # point is its text's oldest event, so a point below ``below`` has events
            # below it.
            filt = (lambda label: label < below) if below is not None and \
                below <= self.watermark else None
            try:
                labels, dists = self.index.knn_query(query.reshape(1, -1), k=want, filter=filt)
            except RuntimeError:
                return []
            deleted, top = self._deleted, below if below is not None else self.watermark + 1
            return self._events(((int(lab), float(1.0 - d)) for lab, d in
                                 zip(labels[0], dists[0], strict=True)), k,
                                lambda e: e < top and e not in deleted)

    def persist(self) -> None:
        """Write the index file and then its sidecar (both atomically)."""
        with self._lock:
            if not self._dirty and self.path.exists():
                return
            started = time.monotonic()
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
                    **self._save_filters(),
                },
            )
            self._dirty = False
            self._last_save = time.monotonic()
            self._persist_seconds = self._last_save - started

    def close(self) -> None:
        """Persist."""
        self.persist()
