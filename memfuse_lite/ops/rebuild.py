"""Running fusion again over every event, and rebuilding the indexes from SQLite."""

from __future__ import annotations

from .. import derived
from ..engine import Engine
from ..errors import MemFuseError
from ..fusion.graph import FusionGraph
from ..fusion.model import load_views
from ..fusion.runtime import mark_documents_stale, reindex_documents
from ..store import fused as fused_sql


def rebuild_fusion(engine: Engine, *, batch: int = 64) -> dict[str, int]:
    """Re-run fusion over every event in ingestion order with the current config (after
    changing thresholds or the arbitration LLM); returns counts. Each step is applied as
    ingestion applies a batch; the text index's fused documents are rewritten once at the
    end (a commit per step would cost seconds per thousand batches)."""
    fusion = engine.fusion
    if fusion is None:
        raise MemFuseError("fusion is disabled in this memory's config")
    store, text = engine.store, engine.text
    with engine.lock:
        with store.atomic() as db:
            fused_sql.clear(db)
            # the text index's fused documents are stale until rewritten at the end: a
            # crash before then has them rewritten at the next open
            mark_documents_stale(db)
        fusion.graph.close()
        fusion.graph = FusionGraph(store)
        fusion.agent.reset()
        with store.reading() as db:
            ids = [int(r[0]) for r in db.execute("SELECT id FROM events ORDER BY id")]
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            with store.atomic() as db:
                views = load_views(db, chunk)
                change = fusion.agent.fuse(db, [views[i] for i in chunk])
            fusion.apply(change, None)  # documents: once, below
        reindex_documents(store, text)
        engine.views.invalidate()
    counts = store.counts()
    return {"events": len(ids), "fused_memories": counts["fused_memories"],
            "edges": counts["edges"]}


def rebuild_indexes(engine: Engine) -> None:
    """Drop every derived index and rebuild it from SQLite, fused documents included."""
    with engine.lock:
        derived.rebuild(engine.store, engine.indexes)
        if engine.fusion is not None:
            reindex_documents(engine.store, engine.text)
