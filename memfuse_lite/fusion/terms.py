"""Content terms of events, kept in SQLite (``event_terms``) so fusion can find earlier
events that share rare words, and weigh a shared word by how rare it was.

Rarity is counted over earlier events only (``event_id < e``) and capped, so the same
events fused in the same order give the same counts online, in batches, on replay and
when fusion is rebuilt.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

import apsw

from ..text.features import terms_of
from ..text.tokens import stems

log = logging.getLogger("memfuse_lite.fusion")

DF_CAP = 64
"""Document frequencies are counted up to this many earlier events (rarer is what counts)."""
RARE_DF = 30
"""A term shared with at most this many earlier events can bring in a candidate."""


TERMS_FORMAT = "3"
"""Version of what :func:`event_terms` makes (2: English words stemmed; 3: Chinese cut by
jieba-rs); stored terms of another version are made again when a memory opens
(:func:`refresh`)."""
_FORMAT_KEY = "event_terms_format"


def event_terms(text: str) -> frozenset[str]:
    """The terms fusion compares: an event's content words (:func:`terms_of`), English
    ones reduced to their stem, so "appointment" and "appointments" are one term."""
    return frozenset(stems(terms_of(text)))


def store_terms(db: apsw.Connection, event_id: int, terms: Iterable[str]) -> None:
    """Record an event's terms (idempotent)."""
    db.executemany("INSERT OR IGNORE INTO event_terms (term, event_id) VALUES (?, ?)",
                   [(t, event_id) for t in sorted(terms)])


def terms_of_events(db: apsw.Connection, ids: Sequence[int]) -> dict[int, frozenset[str]]:
    """The stored terms of some events."""
    out: dict[int, set[str]] = defaultdict(set)
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        for term, eid in db.execute(
                f"SELECT term, event_id FROM event_terms WHERE event_id IN ({marks})", chunk):
            out[int(eid)].add(str(term))
    return {i: frozenset(out.get(i, ())) for i in ids}


def document_frequencies(db: apsw.Connection, terms: Iterable[str], before: int
                         ) -> dict[str, int]:
    """How many events before ``before`` hold each term (counted up to ``DF_CAP``), in
    one statement (an event has a few dozen terms)."""
    wanted = sorted(set(terms))
    if not wanted:
        return {}
    rows = db.execute(
        "SELECT t.value, (SELECT count(*) FROM (SELECT 1 FROM event_terms"
        " WHERE term = t.value AND event_id < ?1 LIMIT ?2)) FROM json_each(?3) AS t",
        (before, DF_CAP, json.dumps(wanted, ensure_ascii=False)))
    return {str(term): int(n) for term, n in rows}


def idf(df: int, before: int) -> float:
    """Inverse document frequency of a term held by ``df`` of the events before ``before``
    (event ids stand for the count of earlier events: deterministic, and close enough)."""
    return math.log((max(before, 1) + 1) / (df + 1))


def rare_matches(db: apsw.Connection, before: int, df: dict[str, int], limit: int
                 ) -> list[tuple[int, float]]:
    """Earlier events sharing the rarest terms, by summed idf of what they share. A rare
    term has at most ``RARE_DF`` earlier events, so all of them are read (one statement)."""
    weights = {t: idf(n, before) for t, n in df.items() if 0 < n <= RARE_DF}
    if not weights:
        return []
    score: dict[int, float] = defaultdict(float)
    for term, eid in db.execute(
            "SELECT term, event_id FROM event_terms WHERE event_id < ?1"
            " AND term IN (SELECT value FROM json_each(?2))",
            (before, json.dumps(sorted(weights), ensure_ascii=False))):
        score[int(eid)] += weights[str(term)]
    return sorted(score.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]


def backfill(db: apsw.Connection, batch: int = 2000) -> int:
    """Compute the terms of every event that has none (a memory made before terms were
    kept); returns how many events were filled."""
    done = 0
    last = 0
    while True:
        rows: list[tuple[int, str]] = [(int(r[0]), str(r[1])) for r in db.execute(
            "SELECT id, text FROM events WHERE id > ? AND NOT EXISTS (SELECT 1 FROM"
            " event_terms WHERE event_id = events.id) ORDER BY id LIMIT ?", (last, batch))]
        if not rows:
            return done
        for eid, text in rows:
            store_terms(db, eid, event_terms(text))
        done += len(rows)
        last = rows[-1][0]
        log.info("stored the terms of %d events", done)


def refresh(db: apsw.Connection) -> int:
    """Make the stored terms current (call inside a write transaction): terms of an
    older :data:`TERMS_FORMAT` are dropped and every event's are made again, and events
    that have none (fused before terms were kept) get theirs; returns how many events
    were filled."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (_FORMAT_KEY,)).fetchone()
    if row is None or str(row[0]) != TERMS_FORMAT:
        if db.execute("SELECT 1 FROM event_terms LIMIT 1").fetchone() is not None:
            log.info("event terms of an older format: making them again")
            db.execute("DELETE FROM event_terms")
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                   (_FORMAT_KEY, TERMS_FORMAT))
    return backfill(db)
