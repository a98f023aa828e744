"""Content terms of events, kept in SQLite (``event_terms``) so fusion can find earlier
events that share rare words, and weigh a shared word by how rare it was.

Rarity is counted over earlier events only (``event_id < e``) and capped, so the same
events fused in the same order give the same counts online, in batches, on replay and
when fusion is rebuilt.
"""

from __future__ import annotations

import logging
import math
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import apsw

from ..once import Recent
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


def store_terms(db: apsw.Connection, rows: Iterable[tuple[str, int]]) -> None:
    """Record (term, event id) rows, one statement for all (idempotent)."""
    db.executemany("INSERT OR IGNORE INTO event_terms (term, event_id) VALUES (?, ?)", rows)


def terms_of_events(db: apsw.Connection, ids: Sequence[int],
                    among: Iterable[str] | None = None) -> dict[int, frozenset[str]]:
    """The stored terms of some events; with ``among``, only those of its terms (a
    question's: read by the terms' key, not every term of every event)."""
    out: dict[int, set[str]] = defaultdict(set)
    wanted = sorted(set(among)) if among is not None else None
    if wanted == []:
        return {i: frozenset() for i in ids}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        if wanted is None:
            rows = db.execute(
                f"SELECT term, event_id FROM event_terms WHERE event_id IN ({marks})", chunk)
        else:
            rows = db.execute(
                "SELECT term, event_id FROM event_terms WHERE term IN"
                f" ({','.join('?' * len(wanted))}) AND event_id IN ({marks})",
                [*wanted, *chunk])
        for term, eid in rows:
            out[int(eid)].add(str(term))
    return {i: frozenset(out.get(i, ())) for i in ids}


class TermWeights:
    """The content terms of a question (as :func:`event_terms` cuts records) with their
    idf over the events held, each term's document frequency counted up to a cap and
    remembered while the events held stay the same (the newest event id unchanged, and
    nothing forgotten or rebuilt: :meth:`clear`), so questions asked again and again pay
    for their new words only."""

    def __init__(self, cap: int = 2_000, capacity: int = 20_000) -> None:
        """``cap``: document frequencies are counted up to this many events;
        ``capacity``: at most this many terms are remembered."""
        self.cap = cap
        self.capacity = capacity
        self._total = -1
        self._df: dict[str, int] = {}

    def clear(self) -> None:
        """Forget every frequency (after events were deleted or rebuilt)."""
        self._df = {}

    def of(self, db: apsw.Connection, text: str) -> dict[str, float]:
        """The content terms of ``text`` with their idf over the events held."""
        terms = event_terms(text)
        if not terms:
            return {}
        total = _count(db, "SELECT coalesce(max(id), 0) FROM events", ())
        df = self._df
        if total != self._total or len(df) > self.capacity:
            df, self._total = {}, total
        for term in terms:
            if term not in df:
                df[term] = _count(db, "SELECT count(*) FROM (SELECT 1 FROM event_terms"
                                  " WHERE term = ? LIMIT ?)", (term, self.cap))
        self._df = df
        return {term: idf(df[term], total) for term in terms}


def _count(db: apsw.Connection, sql: str, args: tuple[Any, ...]) -> int:
    row: tuple[Any, ...] = db.execute(sql, args).fetchall()[0]
    return int(row[0])


def idf(df: int, before: int) -> float:
    """Inverse document frequency of a term held by ``df`` of the events before ``before``
    (event ids stand for the count of earlier events: deterministic, and close enough)."""
    return math.log((max(before, 1) + 1) / (df + 1))


TERMS_HELD = 65_536
"""Terms whose first events :class:`Postings` keeps (the least recently asked go first).
All terms held take 1.1 MB for the 3,906 terms of a 100k household memory and 1.5 MB for
the 16,634 of 4,679 Chinese LifeBench records; this many, about 6 MB."""


class Postings:
    """The first :data:`DF_CAP` events holding each term, by id, read from ``event_terms``
    at a term's first use and followed as events are fused: all that a capped document
    frequency needs, and every earlier event holding a rare term.

    Events fused again (a rebuild) or whose transaction rolled back (their ids are given
    out again) must not count: :meth:`begin` drops, from the terms the last batch touched,
    the ids from the new batch's first on. Ids beyond the event asked about are never
    counted, so a term read while later events are stored (a rebuild) is right as read.
    Not locked: fusion runs under the engine's lock."""

    def __init__(self, capacity: int = TERMS_HELD) -> None:
        self._ids: Recent[str, array[int]] = Recent(capacity)
        self._touched: set[str] = set()
        self._unstored: list[tuple[str, int]] = []  # (term, event id) rows not written yet

    def clear(self) -> None:
        """Forget every term (stored terms changed: a forget, new terms made)."""
        self._ids.clear()
        self._touched.clear()
        self._unstored.clear()

    def begin(self, first: int) -> None:
        """Start a batch whose first event is ``first`` (rows a batch that did not finish
        left unwritten are dropped with it)."""
        for term in self._touched:
            ids = self._ids.get(term)
            if ids is not None and ids and ids[-1] >= first:
                del ids[bisect_left(ids, first):]
        self._touched.clear()
        self._unstored.clear()

    def add(self, db: apsw.Connection, event_id: int, terms: Iterable[str]) -> None:
        """Count an event's terms from here on; they are stored (idempotent) by
        :meth:`flush`, or before ``event_terms`` is next read through ``db``."""
        self._unstored += [(t, event_id) for t in sorted(terms)]
        for term in terms:
            ids = self._held(db, term)
            if len(ids) < DF_CAP and (not ids or ids[-1] < event_id):
                ids.append(event_id)

    def frequencies(self, db: apsw.Connection, terms: Iterable[str], before: int
                    ) -> dict[str, int]:
        """How many events before ``before`` hold each term, counted up to ``DF_CAP``."""
        return {t: bisect_left(self._held(db, t), before) for t in sorted(set(terms))}

    def rare_matches(self, db: apsw.Connection, before: int, df: dict[str, int], limit: int
                     ) -> list[tuple[int, float]]:
        """Earlier events sharing the rarest terms (those of ``df``, the event's
        :meth:`frequencies`, held by at most ``RARE_DF`` earlier events), by summed idf of
        what they share, best first (ties: the later event first)."""
        score: dict[int, float] = defaultdict(float)
        for term in sorted(df):
            n = df[term]
            if 0 < n <= RARE_DF:
                weight = idf(n, before)
                for eid in self._held(db, term)[:n]:
                    score[eid] += weight
        return sorted(score.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]

    def flush(self, db: apsw.Connection) -> None:
        """Write the terms added since the last flush (one statement for a batch of
        events instead of one per event)."""
        if self._unstored:
            store_terms(db, self._unstored)
            self._unstored.clear()

    def _held(self, db: apsw.Connection, term: str) -> array[int]:
        ids = self._ids.get(term)
        if ids is None:
            self.flush(db)
            ids = array("q", (int(r[0]) for r in db.execute(
                "SELECT event_id FROM event_terms WHERE term = ? ORDER BY event_id LIMIT ?",
                (term, DF_CAP))))
            self._ids.put(term, ids)
        self._touched.add(term)
        return ids


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
        store_terms(db, [(t, eid) for eid, text in rows for t in sorted(event_terms(text))])
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
