"""Renumbering events canonically, so a memory merged from several devices' logs does
not depend on the order in which the logs arrived."""

from __future__ import annotations

from ..engine import Engine
from ..store import fused as fused_sql
from .rebuild import rebuild_fusion, rebuild_indexes
from .reembed import reembed_events


def canonicalise(engine: Engine) -> dict[str, int]:
    """Renumber events in canonical order (observation time, user, source, external id,
    text), re-embed them in that order and rebuild the indexes and fusion; returns the
    counts of the fusion rebuild (empty when fusion is off)."""
    store = engine.store
    with engine.lock:
        with store.atomic() as db:
            db.execute("PRAGMA defer_foreign_keys = ON")
            fused_sql.clear(db)
            db.execute("DELETE FROM event_terms")  # stored again by the re-fusion below
            row = db.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
            top = int(row[0]) if row is not None else 0
            db.execute("DROP TABLE IF EXISTS temp.renumber")
            db.execute(
                "CREATE TEMP TABLE renumber AS SELECT e.id AS old, ? + row_number() OVER ("
                " ORDER BY e.ts_epoch, e.user, e.source, min(o.external_id), e.text, e.id)"
                " AS new FROM events e JOIN event_sources es ON es.event_id = e.id"
                " JOIN observations o ON o.id = es.observation_id GROUP BY e.id", (top,))
            db.execute("CREATE INDEX temp.renumber_old ON renumber (old)")
            db.execute("UPDATE events SET id = (SELECT new FROM renumber WHERE old = id)"
                       " WHERE id IN (SELECT old FROM renumber)")
            db.execute("UPDATE event_sources SET event_id = (SELECT new FROM renumber"
                       " WHERE old = event_id) WHERE event_id IN (SELECT old FROM renumber)")
            db.execute("DROP TABLE temp.renumber")
            db.execute("UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(id), 0)"
                       " FROM events)) WHERE name = 'events'")
        reembed_events(store, engine.embedder)
        rebuild_indexes(engine)
        return rebuild_fusion(engine) if engine.fusion is not None else {}
