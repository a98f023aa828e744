"""apsw-backed store: WAL, numbered migrations, ``atomic()`` with savepoint nesting.

One writer connection (serialised by a re-entrant lock, so a transaction is never
interleaved with another thread's statements) and one reader connection, which sees
only committed data thanks to WAL snapshots; a second reader serves the fusion graph's
membership lookups, which run while the first may be held.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from ..errors import StoreCorrupt, StoreError
from ..event import EventRecord
from ..records import (
    SYNTHETIC_ID,
    AtomicEvent,
    IngestResult,
    Observation,
    Provenance,
    Visibility,
    audience_of,
)
from ..timeutil import to_epoch, to_iso
from .migrations import MIGRATIONS
from .sql import chunks, marks

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class StoredObservation:
    """An observation as stored, with its row id."""

    id: int
    observation: Observation


def _audience_json(audience: Sequence[str] | None) -> str | None:
    return None if audience is None else json.dumps(list(audience), ensure_ascii=False)


@functools.lru_cache(maxsize=4096)
def audience_of_column(text: str | None) -> tuple[str, ...] | None:
    """An audience column's value (a household has few distinct ones: each is parsed once;
    every search checks the audiences of hundreds of events)."""
    return None if text is None else tuple(json.loads(text))


def _copy_of(obs: Observation, stored: Row) -> bool:
    """Whether ``obs`` is a copy of the stored record ``(id, device, external_id,
    visibility)`` of the same identity (see :meth:`Store.insert_observations`)."""
    _, device, external_id, visibility = stored
    own_ids = obs.has_own_id and not str(external_id).startswith(SYNTHETIC_ID)
    if own_ids and str(device) == obs.device:
        return False
    theirs = audience_of(obs.user, _visibility_load(str(visibility)))
    ours = obs.audience
    return theirs is None or (ours is not None and set(ours) <= set(theirs))


def _visibility_load(text: str) -> Visibility:
    """A visibility column's value (a JSON string, or a list of users)."""
    value = json.loads(text)
    return tuple(value) if isinstance(value, list) else str(value)


def _index_columns(vectors: bool) -> str:
    """The columns of :func:`_index_record` (no embedding unless ``vectors``)."""
    return (f"id, text, audience, ts_epoch, {'embedding' if vectors else 'NULL'}, user, "
            "source, event_start")


def _index_record(r: Row) -> EventRecord:
    """An event as a derived index reads it, from ``SELECT`` :func:`_index_columns`."""
    return EventRecord(id=r[0], text=r[1], audience=audience_of_column(r[2]), ts_epoch=r[3],
                       embedding=None if r[4] is None else np.frombuffer(r[4], np.float32),
                       user=r[5], source=r[6], event_start=r[7], ts="")


class Store:
    """The SQLite source of truth for observations, events, fused memories and edges."""

    def __init__(self, path: Path, *, durability: str = "normal", migrate: bool = True) -> None:
        """Open (or create) the database; ``migrate=False`` (a reader beside the memory's
        owner) refuses a schema older than this library's instead of changing it."""
        self.path = Path(path)
        self._lock = threading.RLock()
        self._read_lock = threading.Lock()
        try:
            self._conn = self._connect(durability)
            if migrate:
                self._migrate()
            elif self._pending_migrations():
                raise StoreError(f"{self.path} is owned by a process of an older memfuse_lite "
                                 "(its schema is older): stop it, then open the memory here")
            self._reader = self._connect(durability)
            self._lookup = self._connect(durability)
            self._lookup_lock = threading.Lock()
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise StoreCorrupt(
                f"{self.path} is not a readable memfuse_lite database ({exc}); "
                "restore it from a backup or move it away and re-ingest your exports"
            ) from exc
        except apsw.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc

    def _connect(self, durability: str) -> apsw.Connection:
        conn = apsw.Connection(str(self.path))
        conn.set_busy_timeout(30_000)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        conn.execute("PRAGMA foreign_keys=ON")
        # Deleted content is overwritten, so forgotten records do not linger in free pages.
        conn.execute("PRAGMA secure_delete=ON")
        return conn

    def _pending_migrations(self) -> bool:
        exists = self._conn.execute("SELECT 1 FROM sqlite_master WHERE name ="
                                    " 'schema_migrations'").fetchone()
        done = {r[0] for r in self._conn.execute("SELECT version FROM schema_migrations")
                } if exists else set()
        return any(version not in done for version, _, _ in MIGRATIONS)

    def data_version(self) -> int:
        """A number that changes whenever another connection, in this process or another,
        commits to the database (SQLite's ``data_version`` of the reader connection)."""
        with self.reading() as db:
            row = db.execute("PRAGMA data_version").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        """Apply the pending migrations in one transaction, with foreign keys off while
        they run (a table rebuilt keeps the ids other tables refer to) and checked before
        it commits (when there were any: the check reads every table)."""
        self._conn.execute("PRAGMA foreign_keys=OFF")
        try:
            with self.atomic():
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
                )
                done = {r[0] for r in self._conn.execute("SELECT version FROM schema_migrations")}
                pending = [m for m in MIGRATIONS if m[0] not in done]
                for version, name, sql in pending:
                    if callable(sql):
                        sql(self._conn)
                    else:
                        self._conn.execute(sql)
                    self._conn.execute(
                        "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                        (version, name, time.time()))
                # a check of every reference reads every table: only after a change
                broken = self._conn.execute("PRAGMA foreign_key_check").fetchall() \
                    if pending else []
                if broken:
                    raise StoreCorrupt(f"{self.path}: rows refer to missing rows after "
                                       f"migrating ({len(broken)}, e.g. {broken[0]})")
        finally:
            self._conn.execute("PRAGMA foreign_keys=ON")

    def close(self) -> None:
        """Close the connections."""
        with self._lock:
            self._conn.close()
        with self._read_lock:
            self._reader.close()
        with self._lookup_lock:
            self._lookup.close()

    # -- transactions -------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[apsw.Connection]:
        """A transaction; nested calls become savepoints. Rolls back on any exception.

        The outermost one takes the write lock as it begins (``BEGIN IMMEDIATE``, waiting
        up to the busy timeout while another process writes): a transaction that read
        first and wrote later would fail at once when another process had committed
        meanwhile (a reader handing records to the owner, the owner committing a batch)."""
        with self._lock:
            try:
                if self._conn.in_transaction:
                    with self._conn:
                        yield self._conn
                    return
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    with self._conn:
                        yield self._conn
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except apsw.Error as exc:
                raise StoreError(f"store write failed: {exc}") from exc

    @contextmanager
    def reading(self) -> Iterator[apsw.Connection]:
        """The reader connection (committed data only)."""
        with self._read_lock:
            try:
                yield self._reader
            except apsw.Error as exc:
                raise StoreError(f"store read failed: {exc}") from exc

    @contextmanager
    def looking_up(self) -> Iterator[apsw.Connection]:
        """The lookup reader (committed data only): for short queries that may run while
        the caller holds :meth:`reading`."""
        with self._lookup_lock:
            try:
                yield self._lookup
            except apsw.Error as exc:
                raise StoreError(f"store read failed: {exc}") from exc

    @contextmanager
    def reading_alone(self) -> Iterator[apsw.Connection]:
        """A reader connection of its own (committed data only), closed afterwards: for a
        long read (every edge, every event's names) that should hold up neither the shared
        readers nor the lookups of searches running meanwhile."""
        try:
            conn = self._connect("normal")
        except apsw.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            yield conn
        except apsw.Error as exc:
            raise StoreError(f"store read failed: {exc}") from exc
        finally:
            conn.close()

    def holds_chinese(self) -> bool:
        """Whether any event's text has a CJK ideograph (on a connection of its own: it
        may read every text)."""
        with self.reading_alone() as db:
            return db.execute("SELECT 1 FROM events WHERE text GLOB '*[一-鿿]*' LIMIT 1"
                              ).fetchone() is not None

    def schema_version(self) -> int:
        """The highest applied migration."""
        with self.reading() as db:
            row = db.execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    # -- metadata -----------------------------------------------------------

    def meta_get(self, key: str) -> str | None:
        """A metadata value, or None."""
        with self.reading() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def meta_set(self, key: str, value: str) -> None:
        """Set a metadata value."""
        with self.atomic() as db:
            db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def meta_delete(self, key: str) -> None:
        """Remove a metadata value."""
        with self.atomic() as db:
            db.execute("DELETE FROM meta WHERE key = ?", (key,))

    def checkpoint(self) -> None:
        """Copy the WAL into the database file and truncate it (after a forget, so deleted
        rows do not survive in the log)."""
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- observations and the inbox ------------------------------------------

    def insert_observations(self, observations: Sequence[Observation]) -> list[IngestResult]:
        """Store observations verbatim and queue them in the inbox, in one transaction.

        An observation is a duplicate of a stored one with the same (user, source,
        external id), or of a stored copy of the same record (:attr:`Observation.identity`)
        when it can be one: it came from another device, or one of the two came without
        an id of its source, and it would show the record to no one the stored copy does
        not. Two records with ids of their own from one device are two records, however
        alike ("ok" twice in a minute)."""
        results: list[IngestResult] = []
        now = time.time()
        with self.atomic() as db:
            for obs in observations:
                row = db.execute(
                    "SELECT id FROM observations WHERE user = ? AND source = ?"
                    " AND external_id = ?", (obs.user, obs.source, obs.external_id)).fetchone()
                identity = obs.identity
                if row is None:
                    row = next((r[:1] for r in db.execute(
                        "SELECT id, device, external_id, visibility FROM observations"
                        " WHERE identity = ? ORDER BY id", (identity,)) if _copy_of(obs, r)), None)
                if row is not None:
                    results.append(IngestResult("duplicate", int(row[0])))
                    continue
                db.execute(
                    "INSERT INTO observations (source, external_id, user, device, ts, ts_epoch,"
                    " text, meta, visibility, identity, ingested_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        obs.source,
                        obs.external_id,
                        obs.user,
                        obs.device,
                        to_iso(obs.ts),
                        to_epoch(obs.ts),
                        obs.text,
                        json.dumps(obs.meta, ensure_ascii=False, sort_keys=True),
                        json.dumps(obs.visibility, ensure_ascii=False),
                        identity,
                        now,
                    ),
                )
                oid = db.last_insert_rowid()
                db.execute("INSERT INTO inbox VALUES (?, ?)", (oid, now))
                results.append(IngestResult("accepted", oid))
        return results

    def observation_id(self, user: str, source: str, external_id: str) -> int | None:
        """The row id of a stored observation, by its natural key."""
        with self.reading() as db:
            row = db.execute("SELECT id FROM observations WHERE user = ? AND source = ?"
                             " AND external_id = ?", (user, source, external_id)).fetchone()
        return None if row is None else int(row[0])

    def in_inbox(self, ids: Sequence[int]) -> set[int]:
        """Which of these observation ids still wait in the inbox."""
        out: set[int] = set()
        with self.reading() as db:
            for chunk in chunks(ids, 500):
                out.update(int(r[0]) for r in db.execute(
                    f"SELECT observation_id FROM inbox WHERE observation_id IN ({marks(chunk)})",
                    tuple(chunk)))
        return out

    def pending(self) -> list[int]:
        """Observation ids acknowledged but not yet processed, oldest first."""
        with self.reading() as db:
            return [r[0] for r in db.execute("SELECT observation_id FROM inbox ORDER BY 1")]

    def load_observations(self, ids: Sequence[int]) -> list[StoredObservation]:
        """Observations by id, in the order given (missing ids are skipped)."""
        rows: dict[int, Row] = {}
        with self.reading() as db:
            for chunk in chunks(ids, 500):
                in_ = marks(chunk)
                for row in db.execute(
                    "SELECT id, source, external_id, user, device, ts, text, meta, visibility"
                    f" FROM observations WHERE id IN ({in_})",
                    tuple(chunk),
                ):
                    rows[row[0]] = row
        out = []
        for oid in ids:
            if oid not in rows:
                continue
            _, source, ext, user, device, ts, text, meta, vis = rows[oid]
            obs = Observation(
                source=source,
                external_id=ext,
                user=user,
                device=device,
                ts=ts,
                text=text,
                meta=json.loads(meta),
                visibility=_visibility_load(vis),
            )
            out.append(StoredObservation(oid, obs))
        return out

    # -- events ---------------------------------------------------------------

    def event_ids(self) -> set[int]:
        """The ids of every stored event."""
        with self.reading() as db:
            return {int(r[0]) for r in db.execute("SELECT id FROM events")}

    def max_event_id(self) -> int:
        """The highest event id ever assigned (0 when none)."""
        with self.reading() as db:
            row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        return int(row[0]) if row else 0

    def index_rows(self, after: int = 0, batch: int = 2000, *, vectors: bool = True
                   ) -> Iterator[list[EventRecord]]:
        """Events with id > ``after`` for a derived index, in id order, in batches
        (without their embeddings unless ``vectors``: describing filters needs none)."""
        last = after
        while True:
            with self.reading() as db:
                rows: list[Row] = db.execute(
                    f"SELECT {_index_columns(vectors)} FROM events WHERE id > ?"
                    " ORDER BY id LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            yield [_index_record(r) for r in rows]
            last = rows[-1][0]

    def index_rows_of(self, ids: Sequence[int], *, vectors: bool = False
                      ) -> list[EventRecord]:
        """The stored events among ``ids`` as :meth:`index_rows` gives them."""
        rows: list[Row] = []
        with self.reading() as db:
            for chunk in chunks(sorted(ids), 500):
                rows += db.execute(
                    f"SELECT {_index_columns(vectors)} FROM events"
                    f" WHERE id IN ({marks(chunk)}) ORDER BY id", tuple(chunk)).fetchall()
        return [_index_record(r) for r in rows]

    def vectors(self, ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The stored embeddings of events: (the ids found, their vectors as rows, in the
        same order); missing ids are left out. One statement for any number of ids (a JSON
        list), on the lookup reader: a caller may hold :meth:`reading`."""
        with self.looking_up() as db:
            rows: list[Row] = db.execute(
                "SELECT id, embedding FROM events WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([int(i) for i in ids]),)).fetchall()
        found = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return found, np.zeros((0, 0), dtype=np.float32)
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return found, vecs.reshape(len(rows), -1)

    def access(self, ids: Sequence[int]) -> dict[int, tuple[tuple[str, ...] | None, float]]:
        """(audience, observation time in epoch seconds) of events, keyed by id: what
        deciding whether a viewer may see an event at a given time needs, without the
        rest of the event (missing ids are absent)."""
        out: dict[int, tuple[tuple[str, ...] | None, float]] = {}
        with self.reading() as db:
            for chunk in chunks(ids, 500):
                for eid, audience, ts_epoch in db.execute(
                        f"SELECT id, audience, ts_epoch FROM events WHERE id IN ({marks(chunk)})",
                        tuple(chunk)):
                    out[int(eid)] = (audience_of_column(audience), float(ts_epoch))
        return out

    def get_events(self, ids: Sequence[int]) -> dict[int, AtomicEvent]:
        """Events with their provenance, keyed by id (missing ids are absent)."""
        out: dict[int, AtomicEvent] = {}
        with self.reading() as db:
            for chunk in chunks(ids, 500):
                in_ = marks(chunk)
                prov: dict[int, list[Provenance]] = {}
                for r in db.execute(
                    "SELECT es.event_id, o.id, o.source, o.external_id, o.user, o.device, o.ts"
                    " FROM event_sources es JOIN observations o ON o.id = es.observation_id"
                    f" WHERE es.event_id IN ({in_}) ORDER BY o.ts_epoch, o.id",
                    tuple(chunk),
                ):
                    prov.setdefault(r[0], []).append(Provenance(*r[1:]))
                for r in db.execute(
                    "SELECT id, user, source, text, ts, event_start, event_end, actors, place,"
                    f" entities, audience FROM events WHERE id IN ({in_})",
                    tuple(chunk),
                ):
                    out[r[0]] = AtomicEvent(
                        id=r[0],
                        user=r[1],
                        source=r[2],
                        text=r[3],
                        ts=r[4],
                        event_start=r[5],
                        event_end=r[6],
                        actors=tuple(json.loads(r[7])),
                        place=r[8],
                        entities=tuple(json.loads(r[9])),
                        audience=audience_of_column(r[10]),
                        provenance=tuple(prov.get(r[0], ())),
                    )
        return out

    def events_of_observation(self, observation_id: int) -> list[int]:
        """Ids of the events derived from one observation."""
        with self.reading() as db:
            return [
                r[0]
                for r in db.execute(
                    "SELECT event_id FROM event_sources WHERE observation_id = ? ORDER BY 1",
                    (observation_id,),
                )
            ]

    def dead_letters(self) -> list[tuple[int, str]]:
        """Observations whose processing failed, with the error."""
        with self.reading() as db:
            return [(r[0], r[1]) for r in db.execute("SELECT observation_id, error FROM dead_letters")]

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables."""
        tables = ("observations", "inbox", "dead_letters", "events", "fused_memories", "edges")
        with self.reading() as db:
            return {t: _scalar(db, f"SELECT count(*) FROM {t}") for t in tables}


def _scalar(db: apsw.Connection, sql: str) -> int:
    row: Row | None = db.execute(sql).fetchone()
    return int(row[0]) if row is not None else 0



# -- writes inside a caller's transaction (the ingest transaction composes them) ----------


def insert_events(db: apsw.Connection, events: Sequence[EventRecord]) -> list[EventRecord]:
    """Insert embedded events with their source links; returns them with their new ids."""
    out: list[EventRecord] = []
    for ev in events:
        db.execute(
            "INSERT INTO events (user, source, ts, ts_epoch, event_start, event_end, text,"
            " actors, place, entities, audience, embedding, thread)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (ev.user, ev.source, ev.ts, ev.ts_epoch, ev.event_start, ev.event_end, ev.text,
             json.dumps(list(ev.actors), ensure_ascii=False), ev.place,
             json.dumps(list(ev.entities), ensure_ascii=False), _audience_json(ev.audience),
             np.asarray(ev.vector, dtype=np.float32).tobytes(), ev.thread),
        )
        eid = db.last_insert_rowid()
        db.executemany("INSERT INTO event_sources VALUES (?, ?)",
                       [(eid, oid) for oid in ev.observation_ids])
        out.append(replace(ev, id=eid))
    return out


def finish_inbox(db: apsw.Connection, done: Sequence[int], dead: dict[int, str]) -> None:
    """Take processed observations off the inbox; record why the dead ones failed."""
    now = time.time()
    for oid, error in dead.items():
        db.execute("INSERT OR REPLACE INTO dead_letters VALUES (?, ?, ?)", (oid, error, now))
    db.executemany("DELETE FROM inbox WHERE observation_id = ?", [(o,) for o in done])
