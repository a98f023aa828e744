"""Running a named pipeline: validate the request, run it, time it."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import InvalidQuery
from ..records import SearchResult
from .base import Context, Request
from .registry import PIPELINES

if TYPE_CHECKING:
    from ..engine import Engine

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
    """Runs pipelines from the registry over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def context(self, query: str, *, viewer: str, k: int | None = None,
                now: datetime | None = None, pipeline: str | None = None
                ) -> tuple[str, Context]:
        """The pipeline's name and its context for a validated request."""
        cfg = self.engine.config.retrieval
        k = cfg.final_k if k is None else k
        pipeline = pipeline or cfg.default_pipeline
        check_query(query, viewer, k, pipeline)
        chosen = PIPELINES[pipeline]
        if chosen.needs_fusion and self.engine.fusion is None:
            raise InvalidQuery(f"pipeline {pipeline!r} needs fusion enabled")
        return pipeline, chosen.run(self.engine, Request(query, viewer, k, now))

    def search(self, query: str, *, viewer: str, k: int | None = None,
               now: datetime | None = None, pipeline: str | None = None) -> SearchResult:
        """Top-k events for ``viewer`` by the chosen pipeline."""
        t0 = time.perf_counter()
        name, ctx = self.context(query, viewer=viewer, k=k, now=now, pipeline=pipeline)
        return SearchResult(query=query, viewer=viewer, pipeline=name, hits=ctx.hits,
                            latency_ms=(time.perf_counter() - t0) * 1000.0, fused=ctx.fused,
                            rounds=ctx.rounds)
