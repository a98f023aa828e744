"""What folder sync keeps in SQLite: the identities of forgotten records (tombstones, kept
only by a memory that syncs), the identities of records that came from other devices (not
sent back), and the segments already applied."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import apsw

from .sql import chunks, marks

DEVICE_KEY = "sync.device"
"""Meta key: the name this memory syncs as (set at its first sync; tombstones are kept
from then on)."""
SENT_KEY = "sync.sent_upto"
"""Meta key: the newest observation id already written to a segment."""
SENT_GROUP_KEY = "sync.sent_upto.{group}"
"""Meta key: the newest observation id already written to a segment of one person's group
(``user:NAME``; sent once this device holds that person's key)."""
SENT_FORGOTTEN_KEY = "sync.sent_forgotten_upto"
"""Meta key: the newest tombstone row already written to a segment."""
SENT_FOR_KEY = "sync.sent_for"
"""Meta key: the folder and each group's key id the cursors above were sent for (JSON)."""
SEQ_KEY = "sync.next_seq"
"""Meta key: the number of this device's next segment."""


def record_tombstones(db: apsw.Connection, observation_ids: Sequence[int]) -> None:
    """Keep the identities of observations about to be deleted, if this memory syncs
    (call inside the forget's transaction, before the rows go)."""
    if db.execute("SELECT 1 FROM meta WHERE key = ?", (DEVICE_KEY,)).fetchone() is None:
        return
    for chunk in chunks(observation_ids):
        db.execute("INSERT OR IGNORE INTO sync_forgotten (identity) SELECT identity FROM"
                   f" observations WHERE id IN ({marks(chunk)})", tuple(chunk))


def add_tombstones(db: apsw.Connection, identities: Iterable[str], origin: str) -> None:
    """Tombstones another device sent."""
    db.executemany("INSERT OR IGNORE INTO sync_forgotten (identity, origin) VALUES (?, ?)",
                   [(i, origin) for i in identities])


def forgotten(db: apsw.Connection, identities: Sequence[str]) -> set[str]:
    """Those of ``identities`` that have a tombstone."""
    out: set[str] = set()
    for chunk in chunks(list(identities)):
        out.update(str(r[0]) for r in db.execute(
            f"SELECT identity FROM sync_forgotten WHERE identity IN ({marks(chunk)})",
            tuple(chunk)))
    return out


def observations_with(db: apsw.Connection, identities: Sequence[str]) -> list[int]:
    """Ids of the stored observations of these identities."""
    out: list[int] = []
    for chunk in chunks(list(identities)):
        out += [int(r[0]) for r in db.execute(
            f"SELECT id FROM observations WHERE identity IN ({marks(chunk)})", tuple(chunk))]
    return sorted(out)


def mark_received(db: apsw.Connection, identities: Iterable[str]) -> None:
    """Records that came from another device (never sent on by this one)."""
    db.executemany("INSERT OR IGNORE INTO sync_received (identity) VALUES (?)",
                   [(i,) for i in identities])


def to_send(db: apsw.Connection, after: int, limit: int) -> list[tuple[int, str]]:
    """(id, identity) of up to ``limit`` observations after id ``after`` that this device
    sends: the household's (a private record stays on its device), neither received from
    another device nor forgotten here."""
    return [(int(r[0]), str(r[1])) for r in db.execute(
        "SELECT o.id, o.identity FROM observations o WHERE o.id > ?"
        " AND o.visibility = '\"household\"'"
        " AND NOT EXISTS (SELECT 1 FROM sync_received r WHERE r.identity = o.identity)"
        " AND NOT EXISTS (SELECT 1 FROM sync_forgotten f WHERE f.identity = o.identity)"
        " ORDER BY o.id LIMIT ?", (after, limit))]


def to_send_to(db: apsw.Connection, user: str, after: int, limit: int
               ) -> list[tuple[int, str]]:
    """(id, identity) of up to ``limit`` observations after id ``after`` that ``user`` may
    see and the household may not (their own private records and those shared with them),
    neither received from another device nor forgotten here."""
    return [(int(r[0]), str(r[1])) for r in db.execute(
        "SELECT o.id, o.identity FROM observations o WHERE o.id > ?"
        " AND o.visibility <> '\"household\"'"
        " AND (o.user = ? OR (o.visibility LIKE '[%' AND EXISTS"
        "      (SELECT 1 FROM json_each(o.visibility) j WHERE j.value = ?)))"
        " AND NOT EXISTS (SELECT 1 FROM sync_received r WHERE r.identity = o.identity)"
        " AND NOT EXISTS (SELECT 1 FROM sync_forgotten f WHERE f.identity = o.identity)"
        " ORDER BY o.id LIMIT ?", (after, user, user, limit))]


def tombstones_to_send(db: apsw.Connection, after: int) -> list[tuple[int, str]]:
    """(row, identity) of the tombstones of records forgotten here, after row ``after``."""
    return [(int(r[0]), str(r[1])) for r in db.execute(
        "SELECT id, identity FROM sync_forgotten WHERE id > ? AND origin IS NULL ORDER BY id",
        (after,))]


def applied(db: apsw.Connection) -> set[str]:
    """The sha256 of every segment applied here."""
    return {str(r[0]) for r in db.execute("SELECT sha256 FROM sync_applied")}


def mark_applied(db: apsw.Connection, sha256: str, device: str, seq: int) -> None:
    db.execute("INSERT OR IGNORE INTO sync_applied VALUES (?, ?, ?)", (sha256, device, seq))

