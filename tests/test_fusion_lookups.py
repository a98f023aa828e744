"""Fusion's in-memory lookups answer as the statements over SQLite they replace: the
timeline (times of events) and the postings (the first events holding each term)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import apsw
import numpy as np
import pytest

from memfuse_lite.fusion.model import DAY, EventView
from memfuse_lite.fusion.terms import DF_CAP, RARE_DF, Postings, TermWeights, event_terms, idf
from memfuse_lite.fusion.timeline import PLAN_LOOKUP, UNSORTED_TAIL, Timeline
from memfuse_lite.sources import profile_of
from memfuse_lite.timeutil import epoch_of, to_iso

SOURCES = ("calendar", "sms", "photo", "call", "notes")
T0 = 1_735_689_600.0  # 2025-01-01


def stored(rows: int, seed: int) -> apsw.Connection:
    """A table of events as the store keeps them (times as naive UTC ISO text), recorded
    over a month out of order, most with an event time, many at the same second."""
    rng = random.Random(seed)
    db = apsw.Connection(":memory:")
    db.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, ts_epoch REAL, event_start TEXT,"
               " source TEXT)")
    for i in range(1, rows + 1):
        ts = T0 + rng.randrange(0, 30 * 24) * 3600.0  # hourly: ties
        start = None if rng.random() < 0.3 else ts + rng.uniform(-2, 6) * DAY
        db.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (
            i, ts, None if start is None else to_iso(_utc(start)), rng.choice(SOURCES)))
    return db


def _utc(epoch: float) -> datetime:
    """The naive UTC time of an epoch, to the second (as stored)."""
    return datetime.fromtimestamp(round(epoch), tz=UTC).replace(tzinfo=None)


def views(db: apsw.Connection, ids: list[int]) -> list[EventView]:
    """Just the columns the timeline reads."""
    out = []
    for eid, ts, start, source in db.execute(
            f"SELECT id, ts_epoch, event_start, source FROM events WHERE id IN"
            f" ({','.join(map(str, ids))}) ORDER BY id"):
        out.append(EventView(
            id=eid, user="u", source=source, text="", ts=ts,
            start=None if start is None else epoch_of(start), end=None, actors=frozenset(),
            place=None, entities=frozenset(), vec=np.zeros(1, dtype=np.float32),
            audience=None, reschedule=False, cancel=False, names=frozenset(),
            people=frozenset()))
    return out


def nearest_by_sql(db: apsw.Connection, at: float, before: int, n: int) -> list[int]:
    return [int(r[0]) for r in db.execute(
        "SELECT id FROM events WHERE id < ? AND ts_epoch BETWEEN ? AND ?"
        " ORDER BY abs(ts_epoch - ?), id LIMIT ?", (before, at - DAY, at + DAY, at, n))]


def plans_by_sql(db: apsw.Connection, before: int, start: float, end: float,
                 written_by: float) -> list[int]:
    lo, hi = (to_iso(_utc(t)) for t in (start - DAY, end + DAY))
    rows = db.execute("SELECT id, event_start, ts_epoch, source FROM events WHERE event_start"
                      " BETWEEN ? AND ? AND id < ? ORDER BY id DESC LIMIT ?",
                      (lo, hi, before, PLAN_LOOKUP))
    return [int(i) for i, when, ts, source in rows
            if start <= epoch_of(when) <= end and ts < epoch_of(when) and ts <= written_by
            and not profile_of(source).records_moment]


def within_by_sql(db: apsw.Connection, i: int, ts: float, when: float, window: float
                  ) -> bool:
    seen, start = db.execute("SELECT ts_epoch, event_start FROM events WHERE id = ?",
                             (i,)).fetchone()
    happens = seen if start is None else epoch_of(start)
    return abs(seen - ts) <= window or abs(happens - when) <= window


@pytest.mark.parametrize("rows", [300, 3 * UNSORTED_TAIL + 17])
def test_the_timeline_answers_as_the_stored_events_do(rows: int) -> None:
    """Read at once, or followed batch by batch (its orders merged in as it grows), the
    timeline finds the same events near a moment, the same plans and the same times."""
    db = stored(rows, seed=rows)
    rng = random.Random(7)
    whole = Timeline()
    whole.begin(db, [])
    grown = Timeline()
    grown.begin(db, views(db, [1]))
    for first in range(2, rows + 1, 64):
        grown.begin(db, views(db, list(range(first, min(first + 64, rows + 1)))))
        before = min(first + 64, rows + 1)
        for timeline in (whole, grown):
            for _ in range(5):
                at = T0 + rng.uniform(-DAY, 31 * DAY)
                assert timeline.nearest(at, before, 10) == nearest_by_sql(db, at, before, 10)
                assert timeline.plans(before, at - DAY / 2, at + 3 * DAY, written_by=at) == \
                    plans_by_sql(db, before, at - DAY / 2, at + 3 * DAY, written_by=at)
    ids = [*rng.sample(range(1, rows + 1), 200), rows + 5]
    for _ in range(20):
        at, when, window = (T0 + rng.uniform(0, 30 * DAY), T0 + rng.uniform(0, 30 * DAY),
                            rng.uniform(0.5, 3) * DAY)
        expected = [i for i in ids if i <= rows and within_by_sql(db, i, at, when, window)]
        assert whole.within(ids, at, when, window) == expected
        assert grown.within(ids, at, when, window) == expected


def test_a_batch_fused_again_replaces_what_the_timeline_held() -> None:
    """A rolled-back batch's ids are given out again (to other events), and a rebuild fuses
    stored events again from the first: either way the timeline holds what ``db`` holds
    below the batch, then the batch, whatever it had put in order before."""
    db = stored(1800, seed=3)
    timeline = Timeline()
    timeline.begin(db, views(db, list(range(1, 1001))))
    batch = list(range(1001, 1801))  # longer than the unsorted tail: merged when asked
    lost = [replace(v, ts=v.ts + 2 * DAY, start=v.ts + 3 * DAY, source="calendar")
            for v in views(db, batch)]
    timeline.begin(db, lost)  # this batch's transaction rolls back
    at = lost[0].ts
    assert timeline.within([1001], lost[0].ts, lost[0].ts, 1.0) == [1001]
    assert timeline.nearest(at, 1801, 10) != nearest_by_sql(db, at, 1801, 10)
    assert timeline.plans(1801, at, at + 3 * DAY, at) != plans_by_sql(db, 1801, at,
                                                                       at + 3 * DAY, at)
    timeline.begin(db, views(db, batch))  # its ids, given out again
    assert len(timeline) == 1800
    stored_view = views(db, [1001])[0]
    assert timeline.within([1001], lost[0].ts, lost[0].ts, 1.0) == []
    assert timeline.within([1001], stored_view.ts, stored_view.when, 1.0) == [1001]
    assert timeline.nearest(at, 1801, 10) == nearest_by_sql(db, at, 1801, 10)
    assert timeline.plans(1801, at, at + 3 * DAY, at) == plans_by_sql(db, 1801, at,
                                                                      at + 3 * DAY, at)
    timeline.begin(db, views(db, list(range(1, 65))))  # a rebuild starts again
    assert len(timeline) == 64
    at = T0 + 15 * DAY
    assert timeline.nearest(at, 65, 10) == nearest_by_sql(db, at, 65, 10)
    assert timeline.plans(65, at, at + 3 * DAY, at) == plans_by_sql(db, 65, at, at + 3 * DAY, at)


def frequencies_by_sql(db: apsw.Connection, terms: list[str], before: int) -> dict[str, int]:
    return {t: int(db.execute("SELECT count(*) FROM (SELECT 1 FROM event_terms WHERE term = ?"
                              " AND event_id < ? LIMIT ?)", (t, before, DF_CAP)).fetchone()[0])
            for t in sorted(set(terms))}


def rare_by_sql(db: apsw.Connection, before: int, df: dict[str, int], limit: int
                ) -> list[tuple[int, float]]:
    score: dict[int, float] = {}
    for term in sorted(df):
        if 0 < df[term] <= RARE_DF:
            for (eid,) in db.execute("SELECT event_id FROM event_terms WHERE term = ? AND"
                                     " event_id < ? ORDER BY event_id", (term, before)):
                score[eid] = score.get(eid, 0.0) + idf(df[term], before)
    return sorted(score.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]


def event_words(rng: random.Random) -> list[str]:
    """A few words of a Zipf-like vocabulary: some in most events, most in a few."""
    return sorted({f"w{int(rng.paretovariate(0.8))}" for _ in range(rng.randrange(1, 8))})


@pytest.mark.parametrize("capacity", [8, 100_000])
def test_the_postings_count_and_match_terms_as_the_stored_terms_do(capacity: int) -> None:
    """Online, after a rolled-back batch whose ids are given out again, and in a rebuild
    (every event's terms already stored), with few terms held or all of them: document
    frequencies and rare-word matches equal the counts over ``event_terms``."""
    rng = random.Random(capacity)
    db = apsw.Connection(":memory:")
    db.execute("CREATE TABLE event_terms (term TEXT NOT NULL, event_id INTEGER NOT NULL,"
               " PRIMARY KEY (term, event_id)) WITHOUT ROWID")
    words = {i: event_words(rng) for i in range(1, 1201)}
    postings = Postings(capacity)

    def fuse(batch: range, held: Postings) -> None:
        held.begin(batch[0])
        counted = {}
        for i in batch:
            held.add(db, i, words[i])
            df = held.frequencies(db, words[i], i)
            counted[i] = (df, held.rare_matches(db, i, df, 20))
        held.flush(db)  # as fusion does at the end of a batch: then the SQL sees them all
        for i, (df, rare) in counted.items():
            assert df == frequencies_by_sql(db, words[i], i)
            assert rare == rare_by_sql(db, i, df, 20)

    for first in range(1, 801, 50):
        fuse(range(first, first + 50), postings)
    db.execute("SAVEPOINT batch")
    lost = {i: [f"x{rng.randrange(5)}", *event_words(rng)] for i in range(801, 851)}
    postings.begin(801)
    for i, terms in lost.items():
        postings.add(db, i, terms)
    assert postings.frequencies(db, ["x1"], 851) != {"x1": 0}
    db.execute("ROLLBACK TO batch")
    for first in range(801, 1201, 50):
        fuse(range(first, first + 50), postings)
    rebuilt = Postings(capacity)  # every event's terms stored, fused again from the first
    for first in range(1, 1201, 50):
        fuse(range(first, first + 50), rebuilt)


def test_question_term_weights_follow_the_events_held() -> None:
    """Remembered document frequencies give what a fresh count gives: as events are
    added, and after events are deleted once the cache is cleared (as forgetting does)."""
    db = apsw.Connection(":memory:")
    db.execute("CREATE TABLE events (id INTEGER PRIMARY KEY)")
    db.execute("CREATE TABLE event_terms (term TEXT NOT NULL, event_id INTEGER NOT NULL,"
               " PRIMARY KEY (term, event_id)) WITHOUT ROWID")
    held = TermWeights()
    question = "dentist appointment moved to Thursday"
    terms = sorted(event_terms(question))
    assert terms

    def add(n: int, term: str) -> None:
        for _ in range(n):
            db.execute("INSERT INTO events DEFAULT VALUES")
            db.execute("INSERT INTO event_terms VALUES (?, ?)", (term, db.last_insert_rowid()))

    add(5, terms[0])
    first = held.of(db, question)
    assert first == TermWeights().of(db, question)
    add(3, terms[-1])
    assert held.of(db, question) == TermWeights().of(db, question) != first
    db.execute("DELETE FROM event_terms WHERE event_id IN (1, 2)")
    held.clear()
    assert held.of(db, question) == TermWeights().of(db, question)
    assert held.of(db, "") == {}
