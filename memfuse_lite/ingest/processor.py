"""The blocking half of ingestion, one batch at a time, in two steps:

``prepare``: extract events from the inbox's observations → embed them (no lock, no write:
the queue prepares the next batch while the previous one commits, so the embedder keeps
working while fusion runs);
``commit``: one transaction (insert the events, fuse them, take the observations off the
inbox) → apply the fusion change to the graph and the text index → add the events to the
indexes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from ..engine import Engine
from ..event import EventRecord
from ..fusion.model import view_of
from ..heap import HeapTrimmer
from ..store.sqlite import StoredObservation, finish_inbox, insert_events
from .extract import extract_events
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
class Prepared:
    """A batch extracted and embedded, not yet written."""

    items: list[StoredObservation]
    records: list[EventRecord]
    dead: dict[int, str]
    """Observation id → why it cannot be processed (dead-lettered at commit)."""


class BatchProcessor:
    """Turns inbox observations into committed, fused, indexed events."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        llm = engine.llms.optional(engine.config.extract_llm)
        self.extractor = LLMExtractor(llm) if llm is not None else None
        self.times = StageTimes()
        # One thread for each step, for the memory's lifetime: the embedder's buffers are
        # then always allocated by the same thread (spread over a pool's threads, each keeps
        # its own malloc arena of freed buffers: about 330 MB more resident at 10k events).
        self.preparer = ThreadPoolExecutor(1, thread_name_prefix="memfuse-prepare")
        self.committer = ThreadPoolExecutor(1, thread_name_prefix="memfuse-commit")
        self.trimmer = HeapTrimmer(engine.config.ingest.trim_interval_s)

    def close(self) -> None:
        """Wait for a step in progress, then stop the threads."""
        self.preparer.shutdown(wait=True)
        self.committer.shutdown(wait=True)

    def prepare(self, observation_ids: Sequence[int]) -> Prepared:
        """Extract and embed the still-pending ids among ``observation_ids``."""
        store, times = self.engine.store, self.times
        pending = set(store.pending())
        wanted = [i for i in dict.fromkeys(observation_ids) if i in pending]
        items = store.load_observations(wanted)
        if not items:
            return Prepared([], [], {})
        t0 = time.perf_counter()
        drafts, dead = self._extract(items)
        t1 = time.perf_counter()
        vectors, more_dead = self._embed(drafts)
        dead.update(more_dead)
        records = [replace(d, embedding=v) for d, v in zip(drafts, vectors, strict=True)
                   if v is not None and d.observation_ids[0] not in dead]
        times.extract += t1 - t0
        times.embed += time.perf_counter() - t1
        return Prepared(items, records, dead)

    def commit(self, batch: Prepared) -> int:
        """Write a prepared batch in one transaction, fused; then update the indexes."""
        engine, store, times = self.engine, self.engine.store, self.times
        if not batch.items:
            return 0
        t2 = time.perf_counter()
        fuse_seconds = 0.0
        with engine.lock:
            # forget() may have deleted some of these observations while they were being
            # embedded, and an id queued twice (by this process and by the inbox watch)
            # may have been committed by the batch before: both hold this lock, so only
            # what is still in the inbox here is this batch's to commit.
            alive = store.in_inbox([i.id for i in batch.items])
            records = [r for r in batch.records if alive.issuperset(r.observation_ids)]
            dead = {oid: why for oid, why in batch.dead.items() if oid in alive}
            change = None
            with store.atomic() as db:
                committed = insert_events(db, records)
                if engine.fusion is not None:
                    f0 = time.perf_counter()
                    change = engine.fusion.agent.fuse(db, [view_of(r) for r in committed])
                    fuse_seconds = time.perf_counter() - f0
                finish_inbox(db, done=[i.id for i in batch.items if i.id in alive], dead=dead)
            t3 = time.perf_counter()
            if change is not None and engine.fusion is not None:
                # the text index commits the fused documents with the events' own
                engine.fusion.apply(change, engine.text, commit=False)
            for index in engine.indexes:
                index.add(committed)
        t4 = time.perf_counter()
        times.commit += t3 - t2 - fuse_seconds
        times.fuse += fuse_seconds
        times.index += t4 - t3
        times.batches += 1
        times.observations += len(batch.items)
        times.dead += len(dead)
        self.trimmer.maybe_release()
        return len(committed)

    def _extract(self, items: Sequence[StoredObservation]
                 ) -> tuple[list[EventRecord], dict[int, str]]:
        drafts: list[EventRecord] = []
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

    def _embed(self, drafts: Sequence[EventRecord]
               ) -> tuple[list[np.ndarray | None], dict[int, str]]:
        """Vectors of the drafts' texts: each distinct text once, and a text the dense
        index already holds (a recurring call log or reminder) not at all."""
        if not drafts:
            return [], {}
        known: dict[str, np.ndarray | None] = {}
        for text in dict.fromkeys(d.text for d in drafts):
            known[text] = self.engine.dense.vector_of(text)
        todo = [t for t, v in known.items() if v is None]
        try:
            if todo:
                known.update(zip(todo, self.engine.embedder.embed(todo), strict=True))
            return [known[d.text] for d in drafts], {}
        except Exception as exc:  # find the poison record(s) one by one
            log.warning("batch embedding failed (%r); retrying one by one", exc)
        vectors: list[np.ndarray | None] = []
        dead: dict[int, str] = {}
        for d in drafts:
            try:
                vector = known.get(d.text)
                vectors.append(vector if vector is not None else
                               self.engine.embedder.embed([d.text])[0])
            except Exception as exc:
                vectors.append(None)
                dead[d.observation_ids[0]] = f"embed: {exc!r}"
        return vectors, dead
