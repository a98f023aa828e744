"""Search pipelines: ``dense``, ``bm25`` and ``hybrid`` (RRF of both)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

from ..config import PIPELINES, RetrievalConfig
from ..embed.base import Embedder
from ..errors import InvalidQuery
from ..index.base import IndexFilter
from ..index.dense import HnswIndex
from ..index.sparse import TantivyIndex
from ..records import Hit, SearchResult, can_see
from ..store.sqlite import Store
from ..timeutil import to_epoch
from .agentic import AgenticRetriever
from .fused import FusedContext, FusedRetriever
from .rrf import rrf

MAX_QUERY_CHARS = 4096
MAX_K = 1000


def check_query(query: object, viewer: object, k: int, pipeline: str) -> str:
    """Validate search arguments; returns the query text."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidQuery("query must be a non-empty string")
    if "\x00" in query:
        raise InvalidQuery("query contains a NUL character")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"query longer than {MAX_QUERY_CHARS} characters")
    if not isinstance(viewer, str) or not viewer.strip():
        raise InvalidQuery("viewer must name a user")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidQuery(f"k must be an integer in 1..{MAX_K}")
    if pipeline not in PIPELINES:
        raise InvalidQuery(f"unknown pipeline {pipeline!r}; choose one of {', '.join(PIPELINES)}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidQuery("query is not valid Unicode") from exc
    return query


class Searcher:
    """Runs a pipeline over the indexes and hydrates hits from the store."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        dense: HnswIndex,
        sparse: TantivyIndex,
        cfg: RetrievalConfig,
        view_lock: threading.RLock,
        fused_of: Callable[[int], int | None] = lambda _eid: None,
        fused: FusedRetriever | None = None,
        agentic: AgenticRetriever | None = None,
    ) -> None:
        self.fused_of = fused_of
        self.fused = fused
        self.agentic = agentic
        self.store = store
        self.embedder = embedder
        self.dense = dense
        self.sparse = sparse
        self.cfg = cfg
        self.view_lock = view_lock

    def search(
        self,
        query: str,
        *,
        viewer: str,
        k: int | None = None,
        now: datetime | None = None,
        pipeline: str | None = None,
    ) -> SearchResult:
        """Top-k events for ``viewer`` by the chosen pipeline."""
        k = self.cfg.final_k if k is None else k
        pipeline = pipeline or self.cfg.default_pipeline
        check_query(query, viewer, k, pipeline)
        t0 = time.perf_counter()
        if pipeline in ("fused", "agentic"):
            ctx, rounds = self.context(query, viewer=viewer, k=k, now=now, pipeline=pipeline)
            return SearchResult(query=query, viewer=viewer, pipeline=pipeline, hits=ctx.hits,
                                latency_ms=(time.perf_counter() - t0) * 1000.0,
                                fused=ctx.fused, rounds=rounds)
        depth = max(k, self.cfg.seed_k)
        # Only what was recorded by ``now`` is searched, in every pipeline.
        where = IndexFilter(observed_before=to_epoch(now)) if now is not None else None
        qvec = self.embedder.embed_query(query) if pipeline in ("dense", "hybrid") else None
        with self.view_lock:
            dense = self.dense.search(qvec, viewer, depth, where=where) \
                if qvec is not None else []
            sparse = self.sparse.search_events(query, viewer, depth, where=where) \
                if pipeline != "dense" else []
            if pipeline == "dense":
                ranked = dense
            elif pipeline == "bm25":
                ranked = sparse
            else:
                ranked = rrf([dense, sparse], k=self.cfg.rrf_k)
            ranked = ranked[:k]
            events = self.store.get_events([i for i, _ in ranked])
        hits = tuple(
            Hit(event_id=i, score=s, text=events[i].text, provenance=events[i].provenance,
                fused_id=self.fused_of(i))
            for i, s in ranked
            if i in events and can_see(viewer, events[i].audience)  # defence in depth
        )
        latency = (time.perf_counter() - t0) * 1000.0
        return SearchResult(query=query, viewer=viewer, pipeline=pipeline, hits=hits,
                            latency_ms=latency)

    def context(self, query: str, *, viewer: str, k: int, now: datetime | None,
                pipeline: str) -> tuple[FusedContext, int]:
        """The fused or agentic context and the rounds it took."""
        if self.fused is None or self.agentic is None:
            raise InvalidQuery(f"pipeline {pipeline!r} needs fusion enabled")
        if pipeline == "agentic":
            return self.agentic.retrieve(query, viewer=viewer, now=now, k=k)
        return self.fused.retrieve(query, viewer=viewer, now=now, k=k), 1
