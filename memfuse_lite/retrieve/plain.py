"""The plain pipelines, with no fusion: ``dense``, ``bm25`` and ``hybrid`` (RRF of both)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import PAPER_SEED_K
from ..index.base import IndexFilter
from ..records import Hit, can_see
from ..timeutil import to_epoch
from .base import Context, Pipeline, Request
from .rrf import rrf

if TYPE_CHECKING:
    from ..engine import Engine


def _search(engine: Engine, req: Request, *, dense: bool, text: bool) -> Context:
    cfg = engine.config.retrieval
    # the paper's depth, not the fused pipeline's seed_k: these are the baselines
    depth = max(req.k, PAPER_SEED_K)
    where = IndexFilter(observed_before=to_epoch(req.now)) if req.now is not None else None
    qvec = engine.embedder.embed_query(req.query) if dense else None
    with engine.lock:
        by_vector = engine.dense.search(qvec, req.viewer, depth, where=where) \
            if qvec is not None else []
        by_words = engine.text.search_events(req.query, req.viewer, depth, where=where) \
            if text else []
        if dense and text:
            ranked = rrf([by_vector, by_words], k=cfg.rrf_k)
        else:
            ranked = by_vector if dense else by_words
        ranked = ranked[: req.k]
        events = engine.store.get_events([i for i, _ in ranked])
        graph = engine.graph
    return Context(tuple(
        Hit(event_id=i, score=s, text=events[i].text, provenance=events[i].provenance,
            fused_id=graph.fused_of(i) if graph is not None else None)
        for i, s in ranked
        if i in events and can_see(req.viewer, events[i].audience)))  # defence in depth


def dense(engine: Engine, req: Request) -> Context:
    """Nearest embeddings."""
    return _search(engine, req, dense=True, text=False)


def bm25(engine: Engine, req: Request) -> Context:
    """BM25 over the text index (loads no model)."""
    return _search(engine, req, dense=False, text=True)


def hybrid(engine: Engine, req: Request) -> Context:
    """Reciprocal-rank fusion of the dense and BM25 rankings."""
    return _search(engine, req, dense=True, text=True)


PIPELINES = (
    Pipeline("dense", dense, "nearest embeddings"),
    Pipeline("bm25", bm25, "BM25 keyword search (no model loaded)"),
    Pipeline("hybrid", hybrid, "RRF of dense and BM25"),
)
