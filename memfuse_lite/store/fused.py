"""The cluster layer in SQLite: fused memories, their members and the graph's edges.

Every statement that reads or writes ``fused_memories``, ``fused_members`` or ``edges``
lives here; fusion, forgetting and rebuilding call these inside their transactions.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apsw

from ..records import Edge
from .sql import chunks, marks

MemberRow = tuple[int, str, str, str, str | None, str | None, str | None]
"""(event id, user, source, text, ts, event_start, audience JSON) of one member."""


def new_fused(db: apsw.Connection, continues: int | None = None) -> int:
    """A new, empty fused memory (``continues``: the full one it carries on from)."""
    db.execute("INSERT INTO fused_memories (continues) VALUES (?)", (continues,))
    return int(db.last_insert_rowid())


def add_member(db: apsw.Connection, fused_id: int, event_id: int) -> None:
    """Put an event into a fused memory."""
    db.execute("INSERT INTO fused_members VALUES (?, ?)", (fused_id, event_id))


def size(db: apsw.Connection, fused_id: int) -> int:
    """How many events a fused memory holds."""
    row: tuple[Any, ...] | None = db.execute(
        "SELECT count(*) FROM fused_members WHERE fused_id = ?", (fused_id,)).fetchone()
    return int(row[0]) if row is not None else 0


def fused_of(db: apsw.Connection, event_ids: Sequence[int]) -> dict[int, int]:
    """The fused memory of each event that has one (the newest, for continuations)."""
    out: dict[int, int] = {}
    for chunk in chunks(event_ids):
        for eid, fid in db.execute(
                f"SELECT event_id, max(fused_id) FROM fused_members WHERE event_id IN"
                f" ({marks(chunk)}) GROUP BY event_id", tuple(chunk)):
            out[int(eid)] = int(fid)
    return out


def merge_into(db: apsw.Connection, target: int, other: int) -> list[int]:
    """Move every member of ``other`` into ``target`` and delete ``other``; returns the
    moved event ids."""
    moved = [int(r[0]) for r in db.execute(
        "SELECT event_id FROM fused_members WHERE fused_id = ?", (other,))]
    db.execute("UPDATE fused_members SET fused_id = ? WHERE fused_id = ?", (target, other))
    db.execute("UPDATE fused_memories SET continues = ? WHERE continues = ?", (target, other))
    db.execute("DELETE FROM fused_memories WHERE id = ?", (other,))
    return moved


def member_texts(db: apsw.Connection, fused_id: int) -> list[tuple[str, str]]:
    """(text, actors JSON) of a fused memory's members."""
    return [(str(t), str(a)) for t, a in db.execute(
        "SELECT e.text, e.actors FROM fused_members m JOIN events e ON e.id = m.event_id"
        " WHERE m.fused_id = ?", (fused_id,))]


def member_rows(db: apsw.Connection, fused_id: int) -> list[MemberRow]:
    """A fused memory's members, in event-time order."""
    return [
        (int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6])
        for r in db.execute(
            "SELECT e.id, e.user, e.source, e.text, e.ts, e.event_start, e.audience"
            " FROM fused_members m JOIN events e ON e.id = m.event_id WHERE m.fused_id = ?"
            " ORDER BY coalesce(e.event_start, e.ts), e.id", (fused_id,))
    ]


def set_summary(db: apsw.Connection, fused_id: int, summary: str, start: str | None,
                end: str | None) -> None:
    """Store a fused memory's household summary and time span."""
    db.execute("UPDATE fused_memories SET summary = ?, start = ?, end = ? WHERE id = ?",
               (summary, start, end, fused_id))


def fused_ids(db: apsw.Connection) -> list[int]:
    """Every fused memory."""
    return [int(r[0]) for r in db.execute("SELECT id FROM fused_memories ORDER BY id")]


def insert_edges(db: apsw.Connection, edges: Iterable[Edge]) -> None:
    """Add edges (a repeated (kind, src, dst) is ignored)."""
    db.executemany("INSERT OR IGNORE INTO edges (kind, src, dst, weight, reason)"
                   " VALUES (?, ?, ?, ?, ?)",
                   [(e.kind, e.src, e.dst, e.weight, e.reason) for e in edges])


def member_ids(db: apsw.Connection, fused_id: int) -> list[int]:
    """The events of a fused memory, in id order."""
    return [int(r[0]) for r in db.execute(
        "SELECT event_id FROM fused_members WHERE fused_id = ? ORDER BY event_id", (fused_id,))]


def membership_count(db: apsw.Connection) -> int:
    """How many (event, fused memory) pairs there are."""
    row = db.execute("SELECT count(*) FROM fused_members").fetchone()
    return int(row[0]) if row is not None else 0


def edge_counts(db: apsw.Connection) -> dict[str, int]:
    """Stored edges per kind, and memberships as ``member_of`` (when there are any)."""
    out = {str(k): int(n) for k, n in db.execute(
        "SELECT kind, count(*) FROM edges GROUP BY kind")}
    if members := membership_count(db):
        out["member_of"] = members
    return out


EdgeRow = tuple[Any, int, int, float, str]
"""(kind, src, dst, weight, reason) of one stored edge."""


def all_edge_rows(db: apsw.Connection) -> Iterator[EdgeRow]:
    """Every stored edge, oldest first (kinds and reasons repeat: one string object
    each)."""
    for k, s, d, w, r in db.execute(
            "SELECT kind, src, dst, weight, reason FROM edges ORDER BY id"):
        yield sys.intern(k), int(s), int(d), float(w), sys.intern(r)


def edge_rows_of(db: apsw.Connection, event_id: int, direction: str) -> list[EdgeRow]:
    """The edges leaving (``out``) or entering (``in``) an event, newest first (the order
    the in-memory graph keeps them in)."""
    column = "src" if direction == "out" else "dst"
    return [(k, int(s), int(d), float(w), str(r)) for k, s, d, w, r in db.execute(
        f"SELECT kind, src, dst, weight, reason FROM edges WHERE {column} = ? "
        "ORDER BY id DESC", (event_id,))]


def linked_pairs(db: apsw.Connection, event_ids: Sequence[int]) -> list[tuple[int, int]]:
    """(src, dst) of every edge that touches one of the events."""
    out: list[tuple[int, int]] = []
    for chunk in chunks(event_ids):
        m = marks(chunk)
        out.extend((int(s), int(d)) for s, d in db.execute(
            f"SELECT src, dst FROM edges WHERE src IN ({m}) "
            f"UNION ALL SELECT src, dst FROM edges WHERE dst IN ({m})", tuple(chunk) * 2))
    return out


def clear(db: apsw.Connection, *, edges: bool = True) -> None:
    """Delete the whole cluster layer (before fusion is run again over every event);
    ``edges=False`` keeps the graph's edges and drops only the fused memories."""
    if edges:
        db.execute("DELETE FROM edges")
    db.execute("DELETE FROM fused_members; DELETE FROM fused_memories;")


def detach_events(db: apsw.Connection, event_ids: Sequence[int]) -> tuple[set[int], int]:
    """Remove events from their fused memories and delete their edges; returns the fused
    memories that lost members and the number of edges deleted."""
    touched: set[int] = set()
    edges = 0
    for chunk in chunks(event_ids):
        m = marks(chunk)
        touched.update(int(r[0]) for r in db.execute(
            f"SELECT DISTINCT fused_id FROM fused_members WHERE event_id IN ({m})",
            tuple(chunk)))
        row = db.execute(f"SELECT count(*) FROM edges WHERE src IN ({m}) OR dst IN ({m})",
                         tuple(chunk) * 2).fetchone()
        edges += int(row[0]) if row is not None else 0
        db.execute(f"DELETE FROM edges WHERE src IN ({m}) OR dst IN ({m})", tuple(chunk) * 2)
        db.execute(f"DELETE FROM fused_members WHERE event_id IN ({m})", tuple(chunk))
    return touched, edges


def delete_if_empty(db: apsw.Connection, fused_id: int) -> bool:
    """Delete a fused memory that has no members left; returns whether it was deleted."""
    if size(db, fused_id):
        return False
    db.execute("UPDATE fused_memories SET continues = NULL WHERE continues = ?", (fused_id,))
    db.execute("DELETE FROM fused_memories WHERE id = ?", (fused_id,))
    return True


PageRow = tuple[int, float, str | None, int | None]
"""(event id, ts_epoch, audience JSON, fused id or None) of one event in time order."""


def events_before(db: apsw.Connection, before: tuple[float, int] | None,
                  limit: int) -> list[PageRow]:
    """Up to ``limit`` events older than ``before`` (time, event id), newest first, each
    with its fused memory (the newest, for continuations): one page of a timeline, read
    along the time index."""
    where, args = ("", ()) if before is None else \
        (" WHERE (e.ts_epoch, e.id) < (?, ?)", (before[0], before[1]))
    return [(int(r[0]), float(r[1]), r[2], None if r[3] is None else int(r[3]))
            for r in db.execute(
                "SELECT e.id, e.ts_epoch, e.audience,"
                " (SELECT max(m.fused_id) FROM fused_members m WHERE m.event_id = e.id)"
                f" FROM events e{where} ORDER BY e.ts_epoch DESC, e.id DESC LIMIT ?",
                (*args, limit))]


def member_times(db: apsw.Connection, fused_id: int) -> list[tuple[int, float, str | None]]:
    """(event id, ts_epoch, audience JSON) of every member of a fused memory."""
    return [(int(r[0]), float(r[1]), r[2]) for r in db.execute(
        "SELECT e.id, e.ts_epoch, e.audience FROM fused_members m"
        " JOIN events e ON e.id = m.event_id WHERE m.fused_id = ?", (fused_id,))]


def visible_counts(db: apsw.Connection) -> list[tuple[str, str, str | None, int]]:
    """(source, user, audience JSON, events) for every combination stored."""
    return [(str(r[0]), str(r[1]), r[2], int(r[3])) for r in db.execute(
        "SELECT source, user, audience, count(*) FROM events"
        " GROUP BY source, user, audience")]
