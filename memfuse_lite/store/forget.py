"""Deleting observations and everything derived from them, in one transaction.

An event goes when any observation it was derived from goes; a fused memory loses those
members (and is deleted when none remain); every edge touching a deleted event goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from . import fused as fused_sql
from .sql import chunks, marks


@dataclass(frozen=True, slots=True)
class Deleted:
    """What one forget removed or changed in SQLite (the indexes follow from it)."""

    observations: tuple[int, ...]
    events: tuple[int, ...]
    edges: int
    fused_removed: tuple[int, ...]
    fused_changed: tuple[int, ...]
    """Fused memories that lost members and still have some (their summaries are stale)."""


def select_observations(db: apsw.Connection, *, observations: Sequence[int] | None,
                        source: str | None, user: str | None, before: float | None
                        ) -> list[int]:
    """Ids of the observations matching every given criterion."""
    clauses: list[str] = []
    args: list[int | float | str] = []
    if observations is not None:
        if not observations:
            return []
        clauses.append(f"id IN ({','.join('?' * len(observations))})")
        args.extend(int(o) for o in observations)
    if source is not None:
        clauses.append("source = ?")
        args.append(source)
    if user is not None:
        clauses.append("user = ?")
        args.append(user)
    if before is not None:
        clauses.append("ts_epoch < ?")
        args.append(before)
    sql = "SELECT id FROM observations WHERE " + " AND ".join(clauses) + " ORDER BY id"
    return [int(r[0]) for r in db.execute(sql, tuple(args))]


def delete_observations(db: apsw.Connection, ids: Sequence[int]) -> Deleted:
    """Delete the observations and what was derived from them (call inside a transaction)."""
    events: set[int] = set()
    for chunk in chunks(ids):
        events.update(int(r[0]) for r in db.execute(
            f"SELECT DISTINCT event_id FROM event_sources WHERE observation_id IN ({marks(chunk)})",
            tuple(chunk)))
    ev = sorted(events)
    touched, edges = fused_sql.detach_events(db, ev)
    for chunk in chunks(ev):
        m = marks(chunk)
        db.execute(f"DELETE FROM event_terms WHERE event_id IN ({m})", tuple(chunk))
        db.execute(f"DELETE FROM event_sources WHERE event_id IN ({m})", tuple(chunk))
        db.execute(f"DELETE FROM events WHERE id IN ({m})", tuple(chunk))
    for chunk in chunks(ids):
        m = marks(chunk)
        # Other events may cite these observations too only through event_sources rows
        # already removed with their events.
        for table, column in (("inbox", "observation_id"), ("dead_letters", "observation_id"),
                              ("event_sources", "observation_id"), ("observations", "id")):
            db.execute(f"DELETE FROM {table} WHERE {column} IN ({m})", tuple(chunk))
    removed = [fid for fid in sorted(touched) if fused_sql.delete_if_empty(db, fid)]
    changed = sorted(touched - set(removed))
    return Deleted(tuple(ids), tuple(ev), edges, tuple(removed), tuple(changed))
