"""Whole-memory operations: forgetting, exporting the observation log, and renumbering
events canonically after logs of several devices were merged."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING

import numpy as np

from .errors import InvalidQuery
from .fusion.graph import FusionGraph
from .records import ForgetResult
from .store.forget import delete_observations, select_observations
from .store.sqlite import Store
from .timeutil import parse_ts, to_epoch

if TYPE_CHECKING:
    from .memory import MemFuse

log = logging.getLogger("memfuse_lite")

FUSED_DOCS_DIRTY = "sparse_fused_dirty"
"""Meta flag: fused documents in the sparse index may be stale (set while a forget runs)."""


def forget(mem: MemFuse, *, observation: int | Sequence[int] | None, source: str | None,
           user: str | None, before: datetime | str | None) -> ForgetResult:
    """See :meth:`MemFuse.forget`. SQLite commits first; the indexes follow, and a crash
    in between is repaired on the next open (stale labels dropped, fused documents
    rewritten because the dirty flag is still set)."""
    if observation is None and source is None and user is None and before is None:
        raise InvalidQuery("forget() needs observation, source, user or before")
    if isinstance(observation, bool) or (observation is not None and not isinstance(
            observation, int | list | tuple)):
        raise InvalidQuery("observation must be an observation id or a list of ids")
    ids = [observation] if isinstance(observation, int) else observation
    cutoff = to_epoch(parse_ts(before)) if before is not None else None
    with mem._view_lock:
        with mem.store.atomic() as db:
            chosen = select_observations(db, observations=ids, source=source, user=user,
                                         before=cutoff)
            gone = delete_observations(db, chosen)
            if gone.fused_removed or gone.fused_changed:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (FUSED_DOCS_DIRTY,))
        mem.dense.remove(gone.events)
        mem.sparse.remove(list(gone.events) + [-f for f in gone.fused_removed])
        mem.sparse.upsert_fused(list(gone.fused_changed))
        compacted = mem.dense.compact_if_worthwhile(mem.store.index_rows)
        for index in mem.indexes:
            index.persist()
        mem.store.meta_delete(FUSED_DOCS_DIRTY)
        if mem.fusion is not None:
            with mem.store.reading() as db:
                mem.fusion.agent.load_zone(db)
                mem.fusion.graph = FusionGraph.load(db)
        mem._summaries.clear()
        mem._people_cache = None
        mem.store.checkpoint()
    log.info("forgot %d observations, %d events, %d fused memories", len(gone.observations),
             len(gone.events), len(gone.fused_removed))
    return ForgetResult(observations=len(gone.observations), events=len(gone.events),
                        edges=gone.edges, fused_removed=len(gone.fused_removed),
                        fused_updated=len(gone.fused_changed), dense_compacted=compacted)


def export_log(store: Store, out: IO[str]) -> int:
    """Every observation as one JSONL line, ordered by time, user, source and id."""
    n = 0
    last: tuple[float, str, str, str] | None = None
    while True:
        with store.reading() as db:
            if last is None:
                rows = db.execute(
                    "SELECT ts_epoch, user, source, external_id, device, ts, text, meta,"
                    " visibility FROM observations ORDER BY ts_epoch, user, source, external_id"
                    " LIMIT 2000").fetchall()
            else:
                rows = db.execute(
                    "SELECT ts_epoch, user, source, external_id, device, ts, text, meta,"
                    " visibility FROM observations WHERE (ts_epoch, user, source, external_id)"
                    " > (?, ?, ?, ?) ORDER BY ts_epoch, user, source, external_id LIMIT 2000",
                    last).fetchall()
        if not rows:
            return n
        for _, user, source, ext, device, ts, text, meta, vis in rows:
            out.write(json.dumps({"source": source, "external_id": ext, "user": user,
                                  "device": device, "ts": ts, "text": text,
                                  "meta": json.loads(str(meta)),
                                  "visibility": json.loads(str(vis))},
                                 ensure_ascii=False) + "\n")
            n += 1
        last = tuple(rows[-1][:4])  # type: ignore[assignment]


def canonicalise(mem: MemFuse) -> dict[str, int]:
    """See :meth:`MemFuse.canonicalise`: renumber, re-embed in the new order, rebuild."""
    with mem._view_lock:
        with mem.store.atomic() as db:
            db.execute("PRAGMA defer_foreign_keys = ON")
            db.execute("DELETE FROM edges; DELETE FROM fused_members; DELETE FROM fused_memories;"
                       " DELETE FROM event_terms;")  # re-stored by the re-fusion below
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
        _reembed_in_order(mem)
        mem.rebuild_indexes()
        counts = mem.rebuild_fusion() if mem.fusion is not None else {}
    return counts


def _reembed_in_order(mem: MemFuse, chunk: int = 1024) -> None:
    """Embed every event again in id order and fixed chunks. A dynamically quantised
    model's output depends slightly on the other texts of its batch, so vectors from
    differently ordered ingests differ in the last digits, which is enough to tip a
    borderline fusion decision."""
    last = 0
    while True:
        with mem.store.reading() as db:
            rows = db.execute("SELECT id, text FROM events WHERE id > ? ORDER BY id LIMIT ?",
                              (last, chunk)).fetchall()
        if not rows:
            return
        vectors = mem.embedder.embed([str(r[1]) for r in rows])
        with mem.store.atomic() as db:
            db.executemany("UPDATE events SET embedding = ? WHERE id = ?",
                           [(np.asarray(v, np.float32).tobytes(), r[0])
                            for r, v in zip(rows, vectors, strict=True)])
        last = int(rows[-1][0])  # type: ignore[arg-type]
