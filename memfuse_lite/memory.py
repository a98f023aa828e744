"""``MemFuse``: one memory, opened on a directory.

The core is synchronous; the asynchronous edge is ingestion (``ingest``, ``ingest_many``,
``flush``), whose blocking work runs in a thread off the event loop.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from . import maintenance
from .answer import Answer, Citation, compose
from .config import MemFuseConfig
from .embed.base import Embedder
from .errors import (
    IndexMismatch,
    InvalidObservation,
    InvalidQuery,
    LLMError,
    MemFuseError,
    MemoryClosed,
    MemoryInUse,
    NotFound,
)
from .fusion.agent import FusionAgent
from .fusion.graph import FusionGraph
from .fusion.model import load_views
from .fusion.summary import member_rows, refresh_summary, template_summary, viewer_rows
from .fusion.terms import backfill as backfill_terms
from .index.base import DerivedIndex
from .index.dense import HnswIndex
from .index.sparse import TantivyIndex
from .ingest.processor import BatchProcessor, FusionRuntime
from .ingest.queue import IngestQueue
from .llm.base import LLM, Usage
from .maintenance import FUSED_DOCS_DIRTY
from .records import (
    AtomicEvent,
    Edge,
    ForgetResult,
    FusedMemory,
    IngestResult,
    Observation,
    SearchResult,
    can_see,
)
from .retrieve.agentic import AgenticRetriever
from .retrieve.fused import FusedRetriever
from .retrieve.search import Searcher
from .store.sqlite import Store

log = logging.getLogger("memfuse_lite")

DB_FILE = "memfuse.db"
LOCK_FILE = "memfuse.lock"


def require_memory(path: Path) -> None:
    """Raise :class:`NotFound` unless ``path`` holds a memory."""
    if not (path / DB_FILE).is_file():
        raise NotFound(f"no memory at {path} (no {DB_FILE} there): check the path, or "
                       "create one with `memfuse ingest --db PATH FILE.jsonl`")


def load_default_embedder(config: MemFuseConfig) -> Embedder:
    """The configured embedder (a manifest name or a prepared model directory), loaded on
    first use: opening a memory for BM25 search, ``show`` or ``stats`` loads no model."""
    from .embed.onnx import OnnxEmbedder
    from .prepare.registry import resolve_embedder_dir

    return OnnxEmbedder(resolve_embedder_dir(config.embedder, config.model_dir),
                        threads=config.threads, lazy=True)


class MemFuse:
    """A multi-source episodic memory stored in one directory.

    >>> async with MemFuse("~/mem") as mem:                       # doctest: +SKIP
    ...     await mem.ingest(Observation(source="sms", user="ana", ts="2025-01-02T09:00",
    ...                                  text="Dentist moved to Thursday 4pm"))
    ...     await mem.flush()
    ...     mem.search("when is the dentist?", viewer="ana").hits[0].provenance
    """

    def __init__(
        self,
        path: str | Path,
        *,
        config: MemFuseConfig | None = None,
        embedder: Embedder | None = None,
        llms: Mapping[str, LLM] | None = None,
        create: bool = True,
    ) -> None:
        """Open the memory in ``path``, creating it unless ``create`` is false (then a
        missing memory raises :class:`NotFound`). ``embedder`` replaces the configured
        one; ``llms`` maps LLM names used in ``config`` (``answer_llm``, ``plan_llm`` …)
        to ready models, which are used instead of loading GGUF files by those names."""
        self.path = Path(path).expanduser()
        if not create:
            require_memory(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.config = config if config is not None else MemFuseConfig()
        self._lockfile = _lock_directory(self.path)
        try:
            self.store = Store(self.path / DB_FILE, durability=self.config.durability)
        except BaseException:
            self._lockfile.close()
            raise
        try:
            self.embedder = embedder if embedder is not None else load_default_embedder(
                self.config)
            self._check_model()
            self._view_lock = threading.RLock()
            key = self.embedder.info.key()
            self.dense = HnswIndex(self.path, dims=self.embedder.info.dims, model_key=key,
                                   cfg=self.config.index)
            self.sparse = TantivyIndex(self.path)
            self._catch_up()
        except BaseException:
            self.store.close()
            self._lockfile.close()
            raise
        self.llms: dict[str, LLM] = dict(llms or {})
        self.fusion = self._fusion_runtime() if self.config.fusion.enabled else None
        if self.fusion is not None and (self._sparse_refilled
                                        or self.store.meta_get(FUSED_DOCS_DIRTY)):
            # Refilled, or a forget committed in SQLite before its fused documents were
            # rewritten (a crash between the two): the documents may hold forgotten text.
            self._reindex_fused()
        extractor = None
        if self.config.extract_llm:
            from .ingest.llm_extract import LLMExtractor

            extractor = LLMExtractor(self._load_llm(self.config.extract_llm))
        self.processor = BatchProcessor(self.store, self.embedder, self.indexes, self._view_lock,
                                        fusion=self.fusion, extractor=extractor)
        fused = FusedRetriever(
            self.store, self.embedder, self.dense, self.sparse,
            lambda: self.fusion.graph if self.fusion is not None else None,
            self.config.retrieval, self._view_lock, self._fused_view, self._people,
            planner_llm=lambda: self._load_llm(self.config.plan_llm)
            if self.config.plan_llm else None)
        agentic = AgenticRetriever(fused, self.config.retrieval, self._answer_llm)
        self.searcher = Searcher(self.store, self.embedder, self.dense, self.sparse,
                                 self.config.retrieval, self._view_lock,
                                 fused_of=self.fused_of, fused=fused, agentic=agentic)
        self._people_cache: tuple[int, tuple[list[str], list[str]]] | None = None
        self._summaries: dict[tuple[int, tuple[int, ...]], str | None] = {}
        self._queue: IngestQueue | None = None
        self._start_lock: asyncio.Lock | None = None
        self._start_lock_loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def _load_llm(self, name: str) -> LLM:
        """A local LLM by name or path (one instance each, shared by the tasks using it)."""
        if name not in self.llms:
            from .llm.llamacpp import LlamaCppLLM
            from .prepare.registry import resolve_llm_file

            self.llms[name] = LlamaCppLLM(resolve_llm_file(name, self.config.model_dir),
                                          n_ctx=self.config.llm_ctx, threads=self.config.threads)
        return self.llms[name]

    def llm_usage(self) -> dict[str, Any]:
        """LLM tokens per operation, summed over the loaded models."""
        out: dict[str, Any] = {}
        for llm in self.llms.values():
            for op, usage in llm.meter.snapshot().items():
                prev = out.get(op)
                out[op] = usage if prev is None else prev + usage
        return out

    def _fusion_runtime(self) -> FusionRuntime:
        arbiter = None
        if self.config.fusion_llm:
            from .fusion.arbiter import LLMArbiter

            arbiter = LLMArbiter(self._load_llm(self.config.fusion_llm))
        agent = FusionAgent(self.config.fusion, self.dense.search_all, arbiter)
        if agent.model is not None:  # events fused before terms were kept have none
            with self.store.atomic() as db:
                backfill_terms(db)
        with self.store.reading() as db:
            agent.load_zone(db)
            graph = FusionGraph.load(db)
        return FusionRuntime(agent, graph)

    @property
    def indexes(self) -> list[DerivedIndex]:
        """The derived indexes, in update order."""
        return [self.dense, self.sparse]

    # -- opening ----------------------------------------------------------------

    def _check_model(self) -> None:
        info = self.embedder.info
        stored = self.store.meta_get("embedder")
        current = json.dumps({"model_id": info.model_id, "dims": info.dims,
                              "pooling": info.pooling, "content_hash": info.content_hash})
        if stored is None:
            self.store.meta_set("embedder", current)
            return
        if json.loads(stored) != json.loads(current):
            was = json.loads(stored)
            raise IndexMismatch(
                f"{self.path} was built with embedder {was['model_id']} ({was['dims']}-d, "
                f"{was['content_hash'][:12]}), not {info.model_id} ({info.dims}-d, "
                f"{info.content_hash[:12]}): open it with the original embedder, or re-embed "
                f"with `memfuse reembed --db {self.path} --embedder {info.model_id}`"
            )

    def _catch_up(self) -> None:
        """Bring every derived index up to the store's last event (rebuild when needed)."""
        top = self.store.max_event_id()
        self._sparse_refilled = False
        live: set[int] = set()
        for batch in self.store.index_rows(after=0, batch=5000):
            live.update(row.id for row in batch)
            self.dense.describe(batch)
        for index in self.indexes:
            if index.watermark > top:
                log.warning("%s index is ahead of the store; rebuilding it", index.name)
                index.reset()
            behind = 0
            for rows in self.store.index_rows(after=index.watermark):
                index.add(rows)
                behind += len(rows)
            stale = index.labels() - live  # type: ignore[attr-defined]
            if stale:
                index.remove(sorted(stale))  # type: ignore[attr-defined]
            if behind and index is self.sparse:
                self._sparse_refilled = True
            if behind or stale:
                if index.rebuilt_reason:
                    log.warning("rebuilt the %s index from SQLite (%d events): %s", index.name,
                                behind, index.rebuilt_reason)
                else:
                    log.info("%s index caught up %d events, dropped %d", index.name, behind,
                             len(stale))
                index.persist()

    def rebuild_fusion(self, *, batch: int = 64) -> dict[str, int]:
        """Re-run fusion over every event in ingestion order with the current config
        (after changing thresholds or the arbitration LLM); returns counts."""
        self._check_open()
        if self.fusion is None:
            raise MemFuseError("fusion is disabled in this memory's config")
        agent = self.fusion.agent
        with self._view_lock:
            with self.store.atomic() as db:
                db.execute("DELETE FROM edges; DELETE FROM fused_members;"
                           " DELETE FROM fused_memories;")
            agent.zone.clear()
            with self.store.reading() as db:
                ids = [int(r[0]) for r in db.execute("SELECT id FROM events ORDER BY id")]
            for start in range(0, len(ids), batch):
                chunk = ids[start : start + batch]
                with self.store.atomic() as db:
                    views = load_views(db, chunk)
                    outcome = agent.fuse(db, [views[i] for i in chunk])
                agent.commit(outcome)
                self.fusion.llm_calls += outcome.llm_calls
            with self.store.reading() as db:
                self.fusion.graph = FusionGraph.load(db)
                stale = [-i for i in self.sparse.fused_ids()]
            self.sparse.remove(stale)
            self._reindex_fused()
        counts = self.store.counts()
        return {"events": len(ids), "fused_memories": counts["fused_memories"],
                "edges": counts["edges"]}

    def _reindex_fused(self) -> None:
        """Re-index every fused memory's document in the sparse index (after it was
        rebuilt or caught up: fused documents are derived from SQLite like the rest)."""
        with self.store.reading() as db:
            ids = [int(r[0]) for r in db.execute("SELECT id FROM fused_memories")]
        stale = sorted(self.sparse.fused_ids() - set(ids))
        if stale:
            self.sparse.remove_fused(stale)
        docs = []
        with self.store.atomic() as db:
            for fid in ids:
                docs.append((fid, *refresh_summary(db, fid)))
        for start in range(0, len(docs), 1000):
            self.sparse.upsert_fused(docs[start : start + 1000])
        with self.store.atomic() as db:
            db.execute("DELETE FROM meta WHERE key = ?", (FUSED_DOCS_DIRTY,))

    def forget(
        self,
        *,
        observation: int | Sequence[int] | None = None,
        source: str | None = None,
        user: str | None = None,
        before: datetime | str | None = None,
    ) -> ForgetResult:
        """Delete observations matching every given criterion and everything derived from
        them: events, fused-memory membership (summaries rebuilt, empty memories deleted),
        edges, index entries and caches. The same record may be ingested again later."""
        self._check_open()
        return maintenance.forget(self, observation=observation, source=source, user=user,
                                  before=before)

    def export(self, out: IO[str]) -> int:
        """Write every observation as a JSONL line (the ingest format), in canonical
        order; returns the count."""
        self._check_open()
        return maintenance.export_log(self.store, out)

    def canonicalise(self) -> dict[str, int]:
        """Renumber events in canonical order (observation time, user, source, text),
        re-embed them in that order and rebuild the indexes and fusion, so the memory no
        longer depends on the order in which logs arrived (run after merging other
        devices' logs; costs one embedding pass); returns counts."""
        self._check_open()
        return maintenance.canonicalise(self)

    def rebuild_indexes(self) -> None:
        """Drop and rebuild every derived index from SQLite."""
        with self._view_lock:
            for index in self.indexes:
                index.reset()
            self._catch_up()

    # -- ingestion (async edge) -------------------------------------------------------

    async def _ensure_worker(self) -> IngestQueue:
        if self._closed:
            raise MemoryClosed("this memory is closed")
        loop = asyncio.get_running_loop()
        if self._queue is not None and self._queue.loop is loop:
            return self._queue
        if self._start_lock is None or self._start_lock_loop is not loop:
            self._start_lock, self._start_lock_loop = asyncio.Lock(), loop
        async with self._start_lock:
            if self._queue is None or self._queue.loop is not loop:
                # A model that cannot load fails here, before anything is acknowledged,
                # not later in the worker (which would dead-letter every observation).
                await asyncio.to_thread(self.embedder.load)
                # The replay is queued before any producer can see the queue, so an
                # observation acknowledged meanwhile is never queued twice.
                queue = IngestQueue(self.processor.process, self.config.ingest)
                pending = await asyncio.to_thread(self.store.pending)
                if pending:
                    log.info("replaying %d unprocessed observations from the inbox",
                             len(pending))
                    await queue.put(pending)
                self._queue = queue
        return self._queue

    async def ingest(self, observation: Observation) -> IngestResult:
        """Store one observation durably and queue it; returns once it is committed."""
        return (await self.ingest_many([observation]))[0]

    async def ingest_many(self, observations: Iterable[Observation]) -> list[IngestResult]:
        """Store observations durably in one transaction and queue them for processing."""
        items = list(observations)
        for item in items:
            if not isinstance(item, Observation):
                raise InvalidObservation("observation", f"expected Observation, got "
                                         f"{type(item).__name__}")
        queue = await self._ensure_worker()
        results = await asyncio.to_thread(self.store.insert_observations, items)
        await queue.put([r.observation_id for r in results if r.status == "accepted"])
        return results

    async def flush(self) -> None:
        """Return when every acknowledged observation is searchable."""
        queue = await self._ensure_worker()
        await queue.join()

    # -- reading (sync core) -----------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        viewer: str,
        k: int | None = None,
        now: datetime | None = None,
        pipeline: str | None = None,
    ) -> SearchResult:
        """Top-k events the viewer may see, with provenance; ``pipeline`` is dense, bm25,
        hybrid, fused or agentic; ``now`` is when the question is asked."""
        self._check_open()
        return self.searcher.search(query, viewer=viewer, k=k, now=now, pipeline=pipeline)

    def get_event(self, event_id: int, *, viewer: str | None = None) -> AtomicEvent:
        """One event with its source trail; ``viewer`` hides what they may not see."""
        self._check_open()
        event = self.store.get_events([event_id]).get(event_id)
        if event is None or (viewer is not None and not can_see(viewer, event.audience)):
            raise NotFound(f"no event {event_id}" + (f" visible to {viewer}" if viewer else ""))
        return event

    async def ask(
        self,
        question: str,
        *,
        viewer: str,
        now: datetime | None = None,
        pipeline: str = "fused",
        k: int | None = None,
        choices: Mapping[str, str] | None = None,
    ) -> Answer:
        """Answer from memory with citations to the source records (``fused`` or ``agentic``
        retrieval; the local LLM writes the answer when ``answer_llm`` is configured).
        ``choices`` (letter → option text) makes it a multiple-choice question: the answer's
        ``choice`` is one of the letters."""
        self._check_open()
        if pipeline not in ("fused", "agentic"):
            raise InvalidQuery("ask() uses the fused or agentic pipeline")
        if choices is not None and (
                not isinstance(choices, Mapping) or not 2 <= len(choices) <= 26
                or not all(isinstance(a, str) and a.strip() and isinstance(b, str)
                           for a, b in choices.items())):
            raise InvalidQuery("choices must map 2 to 26 option letters to option texts")
        return await asyncio.to_thread(self._ask, question, viewer, now, pipeline, k, choices)

    def _ask(self, question: str, viewer: str, now: datetime | None, pipeline: str,
             k: int | None, choices: Mapping[str, str] | None = None) -> Answer:
        t0 = time.perf_counter()
        llm = self._answer_llm()
        before = llm.meter.total() if llm is not None else Usage()
        result = self.search(question, viewer=viewer, now=now, pipeline=pipeline, k=k)
        draft = compose(question, result.hits, result.fused, now, llm, choices)
        by_id = {h.event_id: h for h in result.hits}
        usage = Usage()
        if llm is not None:
            after = llm.meter.total()
            usage = Usage(after.prompt_tokens - before.prompt_tokens,
                          after.completion_tokens - before.completion_tokens,
                          after.calls - before.calls)
        return Answer(question=question, text=draft.text, known=draft.known,
                      citations=tuple(Citation(i, by_id[i].provenance) for i in draft.cited),
                      evidence=result.hits, fused=result.fused, pipeline=pipeline,
                      rounds=result.rounds, usage=usage,
                      latency_ms=(time.perf_counter() - t0) * 1000.0, choice=draft.choice,
                      mode=draft.mode)

    def _answer_llm(self) -> LLM | None:
        return self._load_llm(self.config.answer_llm) if self.config.answer_llm else None

    def _fused_view(self, fused_id: int, viewer: str) -> FusedMemory | None:
        try:
            return self.get_fused(fused_id, viewer=viewer)
        except NotFound:
            return None

    def _people(self) -> tuple[list[str], list[str]]:
        """Users of this memory and contacts named often enough to plan with (cached)."""
        top = self.store.max_event_id()
        if self._people_cache is None or self._people_cache[0] != top:
            with self.store.reading() as db:
                users = [r[0] for r in db.execute("SELECT DISTINCT user FROM events")]
                counts: dict[str, int] = {}
                for (actors,) in db.execute("SELECT actors FROM events WHERE actors != '[]'"):
                    for a in json.loads(actors):
                        counts[a] = counts.get(a, 0) + 1
            contacts = [a for a, n in sorted(counts.items(), key=lambda kv: -kv[1])[:500]]
            self._people_cache = (top, (users, contacts))
        return self._people_cache[1]

    def get_fused(self, fused_id: int, *, viewer: str) -> FusedMemory:
        """A fused memory as ``viewer`` may see it (summary built from visible members)."""
        return self.timeline(fused_id, viewer=viewer)[0]

    def timeline(self, fused_id: int, *, viewer: str
                 ) -> tuple[FusedMemory, list[AtomicEvent], list[Edge]]:
        """A fused memory, its visible members in time order and the edges among them."""
        self._check_open()
        with self.store.reading() as db:
            rows = viewer_rows(member_rows(db, fused_id), viewer)
        if not rows:
            raise NotFound(f"no fused memory {fused_id} visible to {viewer}")
        events = self.store.get_events([r[0] for r in rows])
        members = [events[r[0]] for r in rows if r[0] in events]
        ids = {e.id for e in members}
        edges: list[Edge] = []
        graph = self.fusion.graph if self.fusion is not None else None
        if graph is not None:
            seen: set[tuple[str, int, int]] = set()
            for eid in sorted(ids):
                for edge in graph.edges_of(eid):
                    key = (edge.kind, edge.src, edge.dst)
                    if edge.src in ids and edge.dst in ids and key not in seen:
                        seen.add(key)
                        edges.append(edge)
        summary, start, end = template_summary(rows)
        if self.config.summary_llm:
            summary = self._llm_summary(fused_id, rows) or summary
        participants = sorted({a for e in members for a in e.actors} | {e.user for e in members})
        fused = FusedMemory(
            id=fused_id, member_ids=tuple(e.id for e in members), start=start, end=end,
            participants=tuple(participants), sources=tuple(sorted({e.source for e in members})),
            users=tuple(sorted({e.user for e in members})), summary=summary,
            conflicts=tuple(e.reason for e in edges if e.kind == "conflicts_with"))
        return fused, members, edges

    def _llm_summary(self, fused_id: int, rows: Sequence[tuple[Any, ...]]) -> str | None:
        """An LLM-written summary of exactly these (visible) members, cached per member set."""
        key = (fused_id, tuple(r[0] for r in rows))
        if key not in self._summaries:
            from .prompts import summarize

            llm = self._load_llm(str(self.config.summary_llm))
            records = "\n".join(f"- {(r[5] or r[4] or '')[:16]} {r[2]}/{r[1]}: "
                                 f"{' '.join(r[3].split())[:140]}" for r in rows[:8])
            try:
                value, _ = llm.complete_json(summarize.messages(records), summarize.SCHEMA,
                                             max_tokens=96, operation="summary")
                self._summaries[key] = str(value.get("summary") or "").strip() or None
            except LLMError as exc:
                log.warning("LLM summary of fused memory %s failed: %s", fused_id, exc)
                return None
        return self._summaries[key]

    def edges_of(self, event_id: int, *, viewer: str) -> list[Edge]:
        """Fusion-graph edges of an event whose other end the viewer may also see."""
        event = self.get_event(event_id, viewer=viewer)
        if self.fusion is None:
            return []
        edges = self.fusion.graph.edges_of(event.id)
        others = self.store.get_events([e.dst if e.src == event.id else e.src for e in edges])
        return [e for e in edges
                if (o := others.get(e.dst if e.src == event.id else e.src)) is not None
                and can_see(viewer, o.audience)]

    def fused_of(self, event_id: int) -> int | None:
        """The fused memory an event belongs to."""
        return self.fusion.graph.fused_of(event_id) if self.fusion is not None else None

    def events_of_observation(self, observation_id: int) -> list[int]:
        """Event ids derived from one observation."""
        return self.store.events_of_observation(observation_id)

    def stats(self) -> dict[str, Any]:
        """Counts, models and index state."""
        self._check_open()
        counts = self.store.counts()
        return {
            "path": str(self.path),
            "schema_version": self.store.schema_version(),
            **counts,
            "embedder": self.embedder.info.model_id,
            "dims": self.embedder.info.dims,
            "dense_index": {"size": len(self.dense), "watermark": self.dense.watermark},
            "sparse_index": {"size": self.sparse.event_count(),
                             "watermark": self.sparse.watermark},
            "graph_edges": self.fusion.graph.counts() if self.fusion is not None else {},
        }

    def dead_letters(self) -> Sequence[tuple[int, str]]:
        """Observations that failed processing, with their error."""
        return self.store.dead_letters()

    # -- lifecycle ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryClosed("this memory is closed")

    def close(self) -> None:
        """Persist the indexes and close the store (queued work stays in the inbox)."""
        if self._closed:
            return
        self._closed = True
        with self._view_lock:
            for index in self.indexes:
                index.close()
            self.store.close()
            for llm in self.llms.values():
                llm.close()
            self._lockfile.close()

    async def aclose(self) -> None:
        """Drain the ingestion queue, stop the worker, then close."""
        if self._closed:
            return
        if self._queue is not None and self._queue.loop is asyncio.get_running_loop():
            try:
                await self._queue.join()
            finally:
                await self._queue.close()
        self._queue = None
        self.close()

    def __enter__(self) -> MemFuse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemFuse:
        await self._ensure_worker()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _lock_directory(path: Path) -> IO[bytes]:
    """Hold an exclusive lock on the directory for as long as the memory is open (two
    writers would corrupt the derived indexes); released by close() or process exit."""
    handle = open(path / LOCK_FILE, "a+b")  # noqa: SIM115 - held until close()
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        raise MemoryInUse(f"{path} is already open (in this or another process); close it "
                          "there first") from exc
    return handle


def reembed(
    path: str | Path,
    *,
    config: MemFuseConfig | None = None,
    embedder: Embedder | None = None,
    batch: int = 256,
) -> int:
    """Recompute every event's embedding with a new model; returns events re-embedded.

    The dense index is rebuilt from the new vectors the next time the memory opens.
    """
    import numpy as np

    config = config if config is not None else MemFuseConfig()
    embedder = embedder if embedder is not None else load_default_embedder(config)
    root = Path(path).expanduser()
    require_memory(root)
    lock = _lock_directory(root)
    try:
        store = Store(root / DB_FILE, durability=config.durability)
    except BaseException:
        lock.close()
        raise
    done = 0
    try:
        last = 0
        while True:
            with store.reading() as db:
                rows: list[tuple[Any, ...]] = db.execute(
                    "SELECT id, text FROM events WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
                ).fetchall()
            if not rows:
                break
            vectors = embedder.embed([r[1] for r in rows])
            with store.atomic() as db:
                db.executemany(
                    "UPDATE events SET embedding = ? WHERE id = ?",
                    [(np.asarray(v, np.float32).tobytes(), r[0])
                     for r, v in zip(rows, vectors, strict=True)],
                )
            done += len(rows)
            last = rows[-1][0]
        info = embedder.info
        store.meta_set("embedder", json.dumps({"model_id": info.model_id, "dims": info.dims,
                                                "pooling": info.pooling,
                                                "content_hash": info.content_hash}))
    finally:
        store.close()
        lock.close()
    for name in ("dense.hnsw", "dense.json"):
        (root / name).unlink(missing_ok=True)
    return done
