"""``MemFuse``: one memory, opened on a directory.

The core is synchronous; the asynchronous edge is ingestion (``ingest``, ``ingest_many``,
``flush``), whose blocking work runs in a thread off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

from .answer import Answer, Citation, compose
from .answer.stream import AnswerStream
from .config import MemFuseConfig
from .embed.base import Embedder
from .engine import Engine, open_engine, owner_running, refresh
from .errors import (
    InvalidConfig,
    InvalidObservation,
    InvalidQuery,
    MemFuseError,
    MemoryClosed,
    MemoryInUse,
    NotFound,
)
from .ingest.processor import BatchProcessor, StageTimes
from .ingest.queue import IngestQueue
from .llm.base import LLM, Usage
from .ops import forget as forget_ops
from .ops import rebuild as rebuild_ops
from .ops.canonical import canonicalise
from .ops.export import export_log
from .records import (
    AtomicEvent,
    Card,
    Edge,
    ForgetResult,
    FusedMemory,
    IngestResult,
    Observation,
    SearchResult,
    can_see,
)
from .retrieve.rank import check_rank_model
from .retrieve.registry import PIPELINES, names
from .retrieve.search import Searcher
from .store import fused as fused_sql
from .sync import SyncReport
from .sync import sync as sync_folder
from .sync_keys import SyncKey
from .text.tokens import tokenize

log = logging.getLogger("memfuse_lite")


REF_KINDS = {"": "event", "event": "event", "e": "event", "obs": "obs", "observation": "obs",
             "o": "obs", "fused": "fused", "f": "fused"}


def parse_ref(ref: str) -> tuple[str, int]:
    """``ID`` or ``event:ID``, ``obs:ID``, ``fused:ID`` as (``event``|``obs``|``fused``, id)."""
    prefix, _, raw = ref.strip().rpartition(":")
    kind = REF_KINDS.get(prefix.lower())
    if kind is None:
        raise InvalidQuery(f"{ref!r}: unknown kind {prefix!r}; use ID, event:ID, obs:ID or "
                           "fused:ID")
    try:
        ident = int(raw)
    except ValueError:
        raise InvalidQuery(f"{ref!r} is not an id (ID, event:ID, obs:ID or fused:ID)") from None
    return kind, ident


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
        mode: Literal["auto", "owner"] = "auto",
    ) -> None:
        """Open the memory in ``path``, creating it unless ``create`` is false (then a
        missing memory raises :class:`NotFound`). ``embedder`` replaces the configured
        one; ``llms`` maps LLM names used in ``config`` (``answer_llm``, ``plan_llm`` …)
        to ready models, which are used instead of loading GGUF files by those names.

        One process owns a memory and ingests; while it does, others open it as readers
        (:attr:`role`): they search, ask and read everything the owner has committed,
        and what they ingest waits in the inbox for the owner (``flush`` waits for it, and
        takes the memory over if the owner stops). ``mode="owner"`` refuses to be a
        reader (:class:`MemoryInUse`)."""
        self.path = Path(path).expanduser()
        self.config = config if config is not None else MemFuseConfig()
        # pipelines may be registered after a config is made: its default is checked here
        if self.config.retrieval.default_pipeline not in PIPELINES:
            raise InvalidConfig("default_pipeline must be one of "
                                f"{', '.join(PIPELINES)}")
        check_rank_model(self.config.retrieval)
        self._llms = llms
        self._engine = open_engine(self.path, config=self.config, embedder=embedder,
                                   llms=llms, create=create, mode=mode)
        try:
            self._processor = BatchProcessor(self._engine)
        except BaseException:
            self._engine.close()
            raise
        self._searcher = Searcher(self._engine)
        self._queue: IngestQueue | None = None
        self._poller: asyncio.Task[None] | None = None
        self._inbox_lock: asyncio.Lock | None = None
        self._queued: set[int] = set()
        self._awaiting: set[int] = set()  # a reader's observations the owner has not processed
        self._start_lock: asyncio.Lock | None = None
        self._start_lock_loop: asyncio.AbstractEventLoop | None = None
        self._warming: threading.Thread | None = None
        self._closed = False

    def warm_up(self) -> threading.Thread:
        """Load, in a background thread, what a first search would otherwise stop to
        load: the embedder (and its first run), the names the planner knows, for a
        memory holding Chinese text the word dictionary, and the fusion graph's edges
        (which searches read from SQLite until then).
        Returns the started thread at once (the same one if called again); a search
        meanwhile waits only for the part it needs. ``memfuse mcp`` and ``memfuse ui``
        call it as they start."""
        self._check_open()
        if self._warming is None:
            self._warming = threading.Thread(target=self._warm, name="memfuse-warm-up",
                                             daemon=True)
            self._warming.start()
        return self._warming

    def _warm(self) -> None:
        engine = self._engine
        try:
            # what a first search needs first: meanwhile it reads edges from SQLite
            engine.embedder.embed_query("warm up")
            engine.views.people()
            if engine.store.holds_chinese():
                tokenize("中文")  # loads the word dictionary a Chinese question needs
            if engine.graph is not None:
                engine.graph.read_all()
        except Exception as exc:  # noqa: BLE001 - a search meets it again and says so
            log.warning("warming up %s failed: %s", self.path, exc)

    @property
    def engine(self) -> Engine:
        """The components (store, embedder, indexes, fusion, LLMs), for tools and
        diagnostics that inspect them; use the methods of this class to change a memory."""
        return self._engine

    @property
    def embedder(self) -> Embedder:
        """The embedder this memory's vectors come from."""
        return self._engine.embedder

    @property
    def role(self) -> str:
        """``owner`` (this process ingests) or ``reader`` (another process owns it)."""
        return self._engine.role

    @property
    def tz(self) -> str:
        """The IANA zone in which times given without an offset are read."""
        return self._engine.clock.zone_name

    def instant(self, value: datetime | str | None, what: str = "time") -> datetime | None:
        """A time argument (a datetime or an ISO-8601 string; None stays None) as an instant
        on this memory's clock; :class:`InvalidQuery`, naming ``what``, if it is neither."""
        return self._engine.clock.instant(value, what)

    def llm_usage(self) -> dict[str, Usage]:
        """LLM tokens per operation, summed over the loaded models."""
        return self._engine.llms.usage()

    def ingest_times(self) -> StageTimes:
        """Seconds spent per ingestion stage since the memory was opened."""
        return self._processor.times

    # -- whole-memory operations ------------------------------------------------

    def rebuild_fusion(self, *, batch: int = 64) -> dict[str, int]:
        """Re-run fusion over every event in ingestion order with the current config
        (after changing thresholds or the arbitration LLM); returns counts."""
        self._check_owner()
        return rebuild_ops.rebuild_fusion(self._engine, batch=batch)

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
        self._check_owner()
        return forget_ops.forget(self._engine, observation=observation, source=source,
                                 user=user, before=self.instant(before, "before"))

    def forget_own(self, *, viewer: str, observation: Sequence[int] | None = None,
                   source: str | None = None, before: datetime | str | None = None
                   ) -> ForgetResult:
        """:meth:`forget` on behalf of ``viewer``, who may delete only their own records:
        an observation id of another user's record is NotFound, as if it did not exist,
        and a source or time deletes only ``viewer``'s records of it (what the MCP server
        and the inspector call)."""
        if not observation and source is None and before is None:
            raise InvalidQuery("give observation ids, a source or a time")
        if observation:
            self._check_open()
            owned = {s.id for s in self._engine.store.load_observations(list(observation))
                     if s.observation.user == viewer}
            if missing := sorted(set(observation) - owned):
                raise NotFound(f"{viewer} has no observation {missing}")
        return self.forget(observation=list(observation) if observation else None,
                           source=source, user=viewer, before=before)

    async def sync(self, folder: str | Path, *, device: str | None = None,
                   keys: Sequence[SyncKey] = ()) -> SyncReport:
        """Sync with the household's other devices through ``folder``, a folder an
        existing service replicates (:mod:`memfuse_lite.sync`): send this memory's new
        records and forgets, then apply what the others sent. ``device`` names this memory
        in the folder (needed at its first sync, then remembered). ``keys``
        (:class:`SyncKey`) seal the household's segments and let this device send and
        receive the records of the people whose keys it holds; a record only some users
        may see never leaves the device without one. Needs the owner."""
        self._check_owner()
        return await sync_folder(self, Path(folder), device, keys)

    def export(self, out: IO[str]) -> int:
        """Write every observation as a JSONL line (the ingest format), in canonical
        order; returns the count."""
        self._check_open()
        return export_log(self._engine.store, out)

    def canonicalise(self) -> dict[str, int]:
        """Renumber events in canonical order (observation time, user, source, text),
        re-embed them in that order and rebuild the indexes and fusion, so the memory no
        longer depends on the order in which logs arrived (run after merging other
        devices' logs; costs one embedding pass); returns counts."""
        self._check_owner()
        return canonicalise(self._engine)

    def rebuild_indexes(self) -> None:
        """Drop and rebuild every derived index from SQLite."""
        self._check_owner()
        rebuild_ops.rebuild_indexes(self._engine)

    # -- ingestion (async edge) -------------------------------------------------------

    async def _ensure_worker(self) -> IngestQueue | None:
        """The owner's ingestion worker, started on first use: it replays the inbox and
        then watches it for observations other processes put there; None for a reader."""
        if self._closed:
            raise MemoryClosed("this memory is closed")
        if self._engine.role != "owner":
            return None
        loop = asyncio.get_running_loop()
        if self._queue is not None and self._queue.loop is loop:
            return self._queue
        if self._start_lock is None or self._start_lock_loop is not loop:
            self._start_lock, self._start_lock_loop = asyncio.Lock(), loop
        async with self._start_lock:
            if self._queue is None or self._queue.loop is not loop:
                # A model that cannot load fails here, before anything is acknowledged,
                # not later in the worker (which would dead-letter every observation).
                await asyncio.to_thread(self._engine.embedder.load)
                # The replay is queued before any producer can see the queue, so an
                # observation acknowledged meanwhile is never queued twice.
                queue = IngestQueue(self._processor.prepare, self._processor.commit,
                                    self.config.ingest, executors=(self._processor.preparer,
                                                                   self._processor.committer))
                pending = await asyncio.to_thread(self._engine.store.pending)
                if pending:
                    log.info("replaying %d unprocessed observations from the inbox",
                             len(pending))
                    await queue.put(pending)
                self._queued = set(pending)
                self._inbox_lock = asyncio.Lock()
                self._queue = queue
                self._poller = loop.create_task(self._watch_inbox(queue), name="memfuse-inbox")
        return self._queue

    async def _watch_inbox(self, queue: IngestQueue) -> None:
        """Queue what other processes (readers) put in the inbox, every
        ``inbox_poll_s``; ids this process queued itself are never queued twice."""
        assert self._inbox_lock is not None
        while True:
            await asyncio.sleep(self.config.ingest.inbox_poll_s)
            try:
                async with self._inbox_lock:
                    pending = await asyncio.to_thread(self._engine.store.pending)
                    self._queued &= set(pending)  # the others are done
                    fresh = [i for i in pending if i not in self._queued]
                    self._queued.update(fresh)
            except MemFuseError as exc:
                log.warning("could not read the inbox: %s", exc)
                continue
            if fresh:
                await queue.put(fresh)

    async def ingest(self, observation: Observation) -> IngestResult:
        """Store one observation durably and queue it; returns once it is committed."""
        return (await self.ingest_many([observation]))[0]

    async def ingest_many(self, observations: Iterable[Observation]) -> list[IngestResult]:
        """Store observations durably in one transaction and queue them for processing
        (a reader leaves them in the inbox for the owner)."""
        items = list(observations)
        for item in items:
            if not isinstance(item, Observation):
                raise InvalidObservation("observation", f"expected Observation, got "
                                         f"{type(item).__name__}")
        items = [self._engine.clock.observation(item) for item in items]
        queue = await self._ensure_worker()
        insert = self._engine.store.insert_observations
        if queue is None or self._inbox_lock is None:
            results = await asyncio.to_thread(insert, items)
            self._awaiting.update(r.observation_id for r in results if r.status == "accepted")
            return results
        async with self._inbox_lock:
            results = await asyncio.to_thread(insert, items)
            accepted = [r.observation_id for r in results if r.status == "accepted"]
            self._queued.update(accepted)
        await queue.put(accepted)
        return results

    async def flush(self) -> None:
        """Return when every acknowledged observation is searchable. A reader waits for
        the owner to process what it ingested, and takes the memory over when the owner
        has stopped."""
        queue = await self._ensure_worker()
        if queue is not None:
            await queue.join()
            return
        store = self._engine.store
        while self._awaiting:
            self._awaiting &= set(await asyncio.to_thread(store.pending))
            if not self._awaiting:
                break
            if not await asyncio.to_thread(owner_running, self.path) and \
                    await asyncio.to_thread(self._take_over):
                self._awaiting.clear()  # the new owner's worker replays the inbox
                await self.flush()
                return
            await asyncio.sleep(self.config.ingest.inbox_poll_s)

    def _take_over(self) -> bool:
        """Become the owner (its process stopped); False when another process was
        quicker. The models stay loaded."""
        old = self._engine
        new = open_engine(self.path, config=self.config, embedder=old.embedder,
                          llms={**(self._llms or {}), **old.llms.models()})
        if new.role != "owner":
            new.close(keep_models=True)
            return False
        self._processor.close()
        old.close(keep_models=True)
        self._engine = new
        self._processor = BatchProcessor(new)
        self._searcher = Searcher(new)
        log.info("the owner of %s stopped; this process owns it now", self.path)
        return True

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
        """Top-k events the viewer may see, with provenance; ``pipeline`` names one in
        ``memfuse_lite.retrieve.PIPELINES`` (dense, bm25, hybrid, fused, agentic); ``now``
        is when the question is asked (only what was recorded by then is searched)."""
        self._check_open()
        return self._searcher.search(query, viewer=viewer, k=k, pipeline=pipeline,
                                     now=self.instant(now, "now"))

    def get_event(self, event_id: int, *, viewer: str | None = None) -> AtomicEvent:
        """One event with its source trail; ``viewer`` hides what they may not see."""
        self._check_open()
        event = self._engine.store.get_events([event_id]).get(event_id)
        if event is None or (viewer is not None and not can_see(viewer, event.audience)):
            raise NotFound(f"no event {event_id}")  # the same whether hidden or missing
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
        """Answer from memory with citations to the source records (a grounded pipeline:
        ``fused`` or ``agentic``; the local LLM writes the answer when ``answer_llm`` is
        configured).
        ``choices`` (letter → option text) makes it a multiple-choice question: the answer's
        ``choice`` is one of the letters."""
        self._check_open()
        self._check_ask(pipeline, choices)
        now = self.instant(now, "now")
        return await asyncio.to_thread(self._ask, question, viewer, now, pipeline, k, choices)

    def ask_stream(
        self,
        question: str,
        *,
        viewer: str,
        now: datetime | None = None,
        pipeline: str = "fused",
        k: int | None = None,
        choices: Mapping[str, str] | None = None,
    ) -> AnswerStream:
        """:meth:`ask`, with the model's answer streamed as it writes it: ``async for piece
        in stream`` yields its text, then ``stream.answer`` is the checked :class:`Answer`
        (see :class:`~memfuse_lite.answer.stream.AnswerStream`)."""
        self._check_open()
        self._check_ask(pipeline, choices)
        instant = self.instant(now, "now")
        return AnswerStream(lambda push: self._ask(question, viewer, instant, pipeline, k,
                                                   choices, on_answer=push))

    @staticmethod
    def _check_ask(pipeline: str, choices: Mapping[str, str] | None) -> None:
        if pipeline not in PIPELINES or not PIPELINES[pipeline].grounded:
            raise InvalidQuery(f"ask() needs a grounded pipeline: "
                               f"{' or '.join(names(grounded=True))}")
        if choices is not None and (
                not isinstance(choices, Mapping) or not 2 <= len(choices) <= 26
                or not all(isinstance(a, str) and a.strip() and isinstance(b, str)
                           for a, b in choices.items())):
            raise InvalidQuery("choices must map 2 to 26 option letters to option texts")

    def _ask(self, question: str, viewer: str, now: datetime | None, pipeline: str,
             k: int | None, choices: Mapping[str, str] | None = None,
             on_answer: Callable[[str], None] | None = None) -> Answer:
        t0 = time.perf_counter()
        llm = self._answer_llm()
        before = llm.meter.total() if llm is not None else Usage()
        result = self.search(question, viewer=viewer, now=now, pipeline=pipeline, k=k)
        draft = compose(question, result.hits, result.fused, now, llm, choices,
                        embed=self._engine.embedder.embed if choices else None,
                        evidence_tokens=self.config.answer_evidence_tokens,
                        on_answer=on_answer)
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
                      mode=draft.mode, rejected=draft.rejected)

    def _answer_llm(self) -> LLM | None:
        return self._engine.llms.optional(self.config.answer_llm)

    def get_fused(self, fused_id: int, *, viewer: str) -> FusedMemory:
        """A fused memory as ``viewer`` may see it (summary built from visible members)."""
        return self.timeline(fused_id, viewer=viewer)[0]

    def timeline(self, fused_id: int, *, viewer: str
                 ) -> tuple[FusedMemory, list[AtomicEvent], list[Edge]]:
        """A fused memory, its visible members in time order and the edges among them."""
        self._check_open()
        return self._engine.views.timeline(fused_id, viewer)

    def timeline_page(self, *, viewer: str, before: tuple[float, int] | None = None,
                      size: int = 20) -> tuple[list[Card], tuple[float, int] | None]:
        """One page of what ``viewer`` may see, newest first: fused memories (and events
        in none), each once, placed at its newest visible member; and the cursor for the
        next page (``before``), None after the oldest record. Reads a page's worth of
        events, never the whole memory."""
        self._check_open()
        if size < 1:
            raise InvalidQuery("size must be at least 1")
        return self._engine.views.page(viewer, before, size)

    def counts(self, *, viewer: str) -> list[tuple[str, str, int]]:
        """(source, user, events) of everything ``viewer`` may see, most first."""
        self._check_open()
        return self._engine.views.counts(viewer)

    def edges_of(self, event_id: int, *, viewer: str) -> list[Edge]:
        """Fusion-graph edges of an event whose other end the viewer may also see."""
        return self._engine.views.edges_of(self.get_event(event_id, viewer=viewer), viewer)

    def fused_of(self, event_id: int) -> int | None:
        """The fused memory an event belongs to."""
        graph = self._engine.graph
        return graph.fused_of(event_id) if graph is not None else None

    def events_of_observation(self, observation_id: int) -> list[int]:
        """Event ids derived from one observation."""
        return self._engine.store.events_of_observation(observation_id)

    def events_of_ref(self, kind: str, ident: int, *, viewer: str | None) -> list[AtomicEvent]:
        """The events a reference names (:func:`parse_ref`: ``event`` or ``obs``) that
        ``viewer`` may see; NotFound says the same whether they are hidden or missing."""
        self._check_open()
        if kind == "event":
            return [self.get_event(ident, viewer=viewer)]
        found = self._engine.store.get_events(self.events_of_observation(ident))
        events = [e for e in found.values() if viewer is None or can_see(viewer, e.audience)]
        if not events:
            raise NotFound(f"no events of observation {ident}")
        return sorted(events, key=lambda e: e.id)

    def stats(self) -> dict[str, Any]:
        """Counts, models and index state."""
        self._check_open()
        engine = self._engine
        graph = engine.graph
        return {
            "path": str(self.path),
            "role": self.role,
            "time_zone": self.tz,
            "schema_version": engine.store.schema_version(),
            **engine.store.counts(),
            "embedder": engine.embedder.info.model_id,
            "dims": engine.embedder.info.dims,
            "dense_index": {"size": len(engine.dense), "watermark": engine.dense.watermark},
            "sparse_index": {"size": engine.text.event_count(),
                             "watermark": engine.text.watermark},
            "graph_edges": self._edge_counts() if graph is not None else {},
        }

    def _edge_counts(self) -> dict[str, int]:
        """What the graph counts, read from SQLite: stats never waits for it to load."""
        with self._engine.store.looking_up() as db:
            return fused_sql.edge_counts(db)

    def dead_letters(self) -> Sequence[tuple[int, str]]:
        """Observations that failed processing, with their error."""
        return self._engine.store.dead_letters()

    # -- lifecycle ----------------------------------------------------------------------

    def _check_open(self) -> None:
        """Refuse a closed memory; a reader first reads what the owner committed since."""
        if self._closed:
            raise MemoryClosed("this memory is closed")
        refresh(self._engine)

    def _check_owner(self) -> None:
        self._check_open()
        if self._engine.role != "owner":
            raise MemoryInUse(f"{self.path} is owned by another process (an MCP server, an "
                              "ingest); this needs the owner: stop that process first")

    def close(self) -> None:
        """Persist the indexes and close the store (queued work stays in the inbox)."""
        if self._closed:
            return
        if self._warming is not None:
            self._warming.join()
        self._closed = True
        self._processor.close()
        self._engine.close()

    async def aclose(self) -> None:
        """Drain the ingestion queue, stop the worker, then close."""
        if self._closed:
            return
        if self._queue is not None and self._queue.loop is asyncio.get_running_loop():
            try:
                await self._queue.join()
            finally:
                if self._poller is not None:
                    self._poller.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._poller
                await self._queue.close()
        self._queue = None
        self._poller = None
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
