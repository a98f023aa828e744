"""The blocking half of ingestion: extract, embed, commit one transaction, update indexes."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import numpy as np

from ..embed.base import Embedder
from ..fusion.agent import BatchOutcome, FusionAgent
from ..fusion.graph import FusionGraph
from ..fusion.model import load_views
from ..index.base import DerivedIndex
from ..index.sparse import TantivyIndex
from ..store.sqlite import IndexRow, NewEvent, Store, StoredObservation
from ..timeutil import parse_ts, to_epoch
from .extract import EventDraft, extract_events
from .llm_extract import LLMExtractor

log = logging.getLogger("memfuse_lite.ingest")


@dataclass
class StageTimes:
    """Seconds spent per stage, summed over batches (read by the benchmarks)."""

    extract: float = 0.0
    embed: float = 0.0
    commit: float = 0.0
    index: float = 0.0
    fuse: float = 0.0
    batches: int = 0
    observations: int = 0
    dead: int = 0


@dataclass
class FusionRuntime:
    """The fusion agent and the in-memory graph it keeps up to date."""

    agent: FusionAgent
    graph: FusionGraph
    llm_calls: int = 0


class BatchProcessor:
    """Turns inbox observations into committed, indexed events."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        indexes: Sequence[DerivedIndex],
        view_lock: threading.RLock,
        fusion: FusionRuntime | None = None,
        extractor: LLMExtractor | None = None,
    ) -> None:
        self.fusion = fusion
        self.extractor = extractor
        self.sparse = next((i for i in indexes if isinstance(i, TantivyIndex)), None)
        self._fuse_seconds = 0.0
        self.store = store
        self.embedder = embedder
        self.indexes = indexes
        self.view_lock = view_lock
        self.times = StageTimes()

    def process(self, observation_ids: Sequence[int]) -> int:
        """Process the still-pending ids among ``observation_ids``; returns events written."""
        self._fuse_seconds = 0.0
        pending = set(self.store.pending())
        wanted = [i for i in dict.fromkeys(observation_ids) if i in pending]
        items = self.store.load_observations(wanted)
        if not items:
            return 0
        t0 = time.perf_counter()
        drafts, dead = self._extract(items)
        t1 = time.perf_counter()
        vectors, more_dead = self._embed(drafts)
        dead.update(more_dead)
        kept = [(d, v) for d, v in zip(drafts, vectors, strict=True)
                if v is not None and d.observation_id not in dead]
        t2 = time.perf_counter()
        events = [
            NewEvent(
                observation_ids=(d.observation_id,),
                user=d.user,
                source=d.source,
                ts=d.ts,
                ts_epoch=d.ts_epoch,
                text=d.text,
                audience=d.audience,
                embedding=v,
                event_start=d.event_start,
                event_end=d.event_end,
                actors=d.actors,
                place=d.place,
                entities=d.entities,
            )
            for d, v in kept
        ]
        with self.view_lock:
            # forget() may have deleted some of these observations while they were being
            # embedded; it holds the same lock, so checking here is race-free.
            alive = self.store.existing_observations([i.id for i in items])
            events = [ev for ev in events if alive.issuperset(ev.observation_ids)]
            dead = {oid: why for oid, why in dead.items() if oid in alive}
            t3 = time.perf_counter()
            ids, outcome = self.store.commit_batch(
                events, done=[i.id for i in items if i.id in alive], dead=dead,
                on_events=self._fuse if self.fusion is not None else None)
            t4 = time.perf_counter()
            if outcome is not None and self.fusion is not None:
                self.fusion.agent.commit(outcome)
                self.fusion.graph.add_members(outcome.members)
                self.fusion.graph.move_members(outcome.moved)
                self.fusion.graph.remove_fused(outcome.removed)
                self.fusion.graph.add_edges(outcome.edges)
                self.fusion.llm_calls += outcome.llm_calls
            rows = [
                IndexRow(eid, ev.text, ev.audience, ev.ts_epoch, ev.embedding, ev.user,
                         ev.source, to_epoch(parse_ts(ev.event_start)) if ev.event_start
                         else None)
                for eid, ev in zip(ids, events, strict=True)
            ]
            for index in self.indexes:
                index.add(rows)
            if outcome is not None and self.sparse is not None:
                self.sparse.remove_fused(sorted(outcome.removed))
                self.sparse.upsert_fused(outcome.fused_docs)
        t5 = time.perf_counter()
        times = self.times
        times.extract += t1 - t0
        times.embed += t2 - t1
        times.commit += (t3 - t2) + (t4 - t3) - self._fuse_seconds
        times.fuse += self._fuse_seconds
        times.index += t5 - t4
        times.batches += 1
        times.observations += len(items)
        times.dead += len(dead)
        return len(ids)

    def _fuse(self, db: apsw.Connection, ids: list[int]) -> BatchOutcome:
        assert self.fusion is not None
        t0 = time.perf_counter()
        views = load_views(db, ids)
        outcome = self.fusion.agent.fuse(db, [views[i] for i in ids])
        self._fuse_seconds = time.perf_counter() - t0
        return outcome

    def _extract(self, items: Sequence[StoredObservation]) -> tuple[list[EventDraft], dict[int, str]]:
        drafts: list[EventDraft] = []
        dead: dict[int, str] = {}
        for item in items:
            try:
                found = extract_events(item)
                if self.extractor is not None:
                    found = [self.extractor.refine(d) for d in found]
                drafts.extend(found)
            except Exception as exc:  # one bad record must not stop the queue
                log.warning("observation %s dead-lettered in extraction: %r", item.id, exc)
                dead[item.id] = f"extract: {exc!r}"
        return drafts, dead

    def _embed(self, drafts: Sequence[EventDraft]) -> tuple[list[np.ndarray | None], dict[int, str]]:
        if not drafts:
            return [], {}
        try:
            return list(self.embedder.embed([d.text for d in drafts])), {}
        except Exception as exc:  # find the poison record(s) one by one
            log.warning("batch embedding failed (%r); retrying one by one", exc)
        vectors: list[np.ndarray | None] = []
        dead: dict[int, str] = {}
        for d in drafts:
            try:
                vectors.append(self.embedder.embed([d.text])[0])
            except Exception as exc:
                vectors.append(None)
                dead[d.observation_id] = f"embed: {exc!r}"
        return vectors, dead
