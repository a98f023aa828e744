"""Numbered schema migrations; each runs once and is recorded in ``schema_migrations``.

A migration is SQL, or a function of the connection where stored rows are filled in from
what they hold (inside the migration's transaction), by the rules of its version
(:mod:`.migration_rules`), never by library functions that may change after it."""

from __future__ import annotations

import json
from collections.abc import Callable

import apsw

from .migration_rules import identity_v5, thread_v4


def _threads(db: apsw.Connection) -> None:
    """The conversation of each stored message, read from its observation's fields."""
    db.execute("ALTER TABLE events ADD COLUMN thread TEXT")
    rows = db.execute(
        "SELECT e.id, e.source, o.meta FROM events e"
        " JOIN event_sources s ON s.event_id = e.id JOIN observations o ON o.id = s.observation_id"
        " ORDER BY e.id, o.id").fetchall()
    found: dict[int, str] = {}
    for eid, source, meta in rows:
        thread = thread_v4(str(source), json.loads(str(meta)))
        if thread is not None:
            found.setdefault(int(eid), thread)  # type: ignore[arg-type]
    db.executemany("UPDATE events SET thread = ? WHERE id = ?",
                   [(t, i) for i, t in found.items()])


def _identities(db: apsw.Connection) -> None:
    """Observations are found again by their identity (source, user, instant, text and the
    fields their source profile names), which several records may share, instead of a
    unique hash of source, user, time and text that merged distinct records: the table is
    rebuilt without that constraint (foreign keys are off while migrations run) and every
    stored row keeps its id and content."""
    db.execute("""
        CREATE TABLE observations_new (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            source       TEXT NOT NULL,
            external_id  TEXT NOT NULL,
            user         TEXT NOT NULL,
            device       TEXT NOT NULL,
            ts           TEXT NOT NULL,
            ts_epoch     REAL NOT NULL,
            text         TEXT NOT NULL,
            meta         TEXT NOT NULL,
            visibility   TEXT NOT NULL,
            identity     TEXT NOT NULL,
            ingested_at  REAL NOT NULL,
            UNIQUE (user, source, external_id)
        )""")
    rows = db.execute("SELECT id, source, external_id, user, device, ts, ts_epoch, text, meta,"
                      " visibility, ingested_at FROM observations ORDER BY id").fetchall()
    for oid, source, ext, user, device, ts, epoch, text, meta, vis, at in rows:
        identity = identity_v5(str(source), str(user), str(ts), str(text),
                               json.loads(str(meta)))
        db.execute("INSERT INTO observations_new VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (oid, source, ext, user, device, ts, epoch, text, meta, vis, identity, at))
    db.execute("DROP TABLE observations")
    db.execute("ALTER TABLE observations_new RENAME TO observations")
    db.execute("CREATE INDEX observations_ts ON observations (ts_epoch)")
    db.execute("CREATE INDEX observations_identity ON observations (identity)")


MIGRATIONS: list[tuple[int, str, str | Callable[[apsw.Connection], None]]] = [
    (
        1,
        "observations, inbox, events, fused memories, edges, metadata",
        """
        CREATE TABLE observations (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            source       TEXT NOT NULL,
            external_id  TEXT NOT NULL,
            user         TEXT NOT NULL,
            device       TEXT NOT NULL,
            ts           TEXT NOT NULL,
            ts_epoch     REAL NOT NULL,
            text         TEXT NOT NULL,
            meta         TEXT NOT NULL,
            visibility   TEXT NOT NULL,
            content_hash TEXT NOT NULL UNIQUE,
            ingested_at  REAL NOT NULL,
            UNIQUE (user, source, external_id)
        );
        CREATE INDEX observations_ts ON observations (ts_epoch);

        -- Acknowledged observations whose events are not yet committed.
        CREATE TABLE inbox (
            observation_id INTEGER PRIMARY KEY REFERENCES observations (id),
            enqueued_at    REAL NOT NULL
        );

        CREATE TABLE dead_letters (
            observation_id INTEGER PRIMARY KEY REFERENCES observations (id),
            error          TEXT NOT NULL,
            failed_at      REAL NOT NULL
        );

        CREATE TABLE events (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            user        TEXT NOT NULL,
            source      TEXT NOT NULL,
            ts          TEXT NOT NULL,
            ts_epoch    REAL NOT NULL,
            event_start TEXT,
            event_end   TEXT,
            text        TEXT NOT NULL,
            actors      TEXT NOT NULL DEFAULT '[]',
            place       TEXT,
            entities    TEXT NOT NULL DEFAULT '[]',
            audience    TEXT,            -- JSON list of users; NULL = whole household
            embedding   BLOB NOT NULL    -- float32, L2-normalised
        );
        CREATE INDEX events_ts ON events (ts_epoch);

        CREATE TABLE event_sources (
            event_id       INTEGER NOT NULL REFERENCES events (id),
            observation_id INTEGER NOT NULL REFERENCES observations (id),
            PRIMARY KEY (event_id, observation_id)
        );
        CREATE INDEX event_sources_obs ON event_sources (observation_id);

        CREATE TABLE fused_memories (
            id        INTEGER PRIMARY KEY AUTOINCREMENT,
            start     TEXT,
            end       TEXT,
            summary   TEXT NOT NULL DEFAULT '',
            conflicts TEXT NOT NULL DEFAULT '[]'
        );
        CREATE TABLE fused_members (
            fused_id INTEGER NOT NULL REFERENCES fused_memories (id),
            event_id INTEGER NOT NULL REFERENCES events (id),
            PRIMARY KEY (fused_id, event_id)
        );
        CREATE INDEX fused_members_event ON fused_members (event_id);

        CREATE TABLE edges (
            id     INTEGER PRIMARY KEY AUTOINCREMENT,
            kind   TEXT NOT NULL,
            src    INTEGER NOT NULL,
            dst    INTEGER NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0,
            reason TEXT NOT NULL DEFAULT '',
            UNIQUE (kind, src, dst)
        );
        CREATE INDEX edges_dst ON edges (dst);

        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """,
    ),
    (
        2,
        "fusion: continuation of full fused memories, event lookups by time",
        """
        ALTER TABLE fused_memories ADD COLUMN continues INTEGER REFERENCES fused_memories (id);
        CREATE INDEX events_start ON events (event_start);
        CREATE INDEX edges_src ON edges (src);
        """,
    ),
    (
        3,
        "fusion: content terms of events (rare shared words)",
        """
        CREATE TABLE event_terms (
            term     TEXT NOT NULL,
            event_id INTEGER NOT NULL REFERENCES events (id),
            PRIMARY KEY (term, event_id)
        ) WITHOUT ROWID;
        CREATE INDEX event_terms_event ON event_terms (event_id);
        """,
    ),
    (4, "fusion: the conversation each message belongs to", _threads),
    (5, "observations: identity by source profile, no longer a unique content hash",
     _identities),
    (6, "events: what each viewer may see per source and user, read from an index",
     "CREATE INDEX events_source_user ON events (source, user, audience);"),
    (
        7,
        "sync: forgotten records' identities, records received, segments applied",
        """
        CREATE TABLE sync_forgotten (
            id        INTEGER PRIMARY KEY AUTOINCREMENT,
            identity  TEXT NOT NULL UNIQUE,
            origin    TEXT               -- the device whose tombstone it was; NULL = here
        );
        CREATE TABLE sync_received (identity TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE sync_applied (
            sha256  TEXT PRIMARY KEY,
            device  TEXT NOT NULL,
            seq     INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
    ),
]
