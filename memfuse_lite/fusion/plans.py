"""What a later report replaces: the supersedes edges of the causal fusion graph.

A report of a change (moved, cancelled, swapped: "the clinic rang: my appointment is now
Friday", 改到, "let's meet at X instead") replaces the plan it is about, and the copies of
that plan (a calendar entry and its reminders), wherever fusion put them: a plan moved by
a week is another happening's time, so it is often in another fused memory. A later
report without such a cue replaces an earlier one of its fused memory only when another
app or person restates the same happening at another time. Measured against the
generated household's ground truth by ``python3 -m bench edges``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..sources import profile_of
from ..text.features import change_sentences, has_new_time, has_replacement
from .model import DAY, EventView


def scheduled(e: EventView) -> bool:
    """Whether the event time is a reported schedule (not the moment of recording)."""
    return e.start is not None and not profile_of(e.source).records_moment


def overlap(x: frozenset[str], y: frozenset[str]) -> float:
    """Shared items over the smaller set's size (0 when either is empty)."""
    if not x or not y:
        return 0.0
    return len(x & y) / min(len(x), len(y))


def changes(e: EventView) -> bool:
    """Whether ``e`` reports a change to a plan: moved, cancelled or swapped."""
    return e.reschedule or e.cancel or _reports_change(e.text)


@lru_cache(maxsize=4096)
def _reports_change(text: str) -> bool:
    """A new time or a replacement in ``text`` (asked of every candidate of a report of
    a change: the last few thousand texts are remembered)."""
    return has_new_time(text) or has_replacement(text)


def about(e: EventView) -> frozenset[str]:
    """Who and what an event names: its actors, key words and name words."""
    return e.people | e.names


def replaced_plans(e: EventView, candidates: Sequence[EventView], horizon: float,
                   mates: Sequence[EventView] = ()) -> list[EventView]:
    """The earlier plan that ``e``, a report of a change, replaces, with the copies of it
    (the same happening at the same time, naming no one else: a calendar entry and its
    reminders), or none.

    A plan is a reported schedule written down before it was due, that reports no change
    itself (the clinic's "your appointment has to be rebooked" is news about a plan, not
    the plan), had not passed when ``e`` was recorded and was due within ``horizon``
    seconds of it. The sentences of ``e`` that say what changed must share two people,
    names or key words with it, and ``e`` must name no one else nor come from a contact
    the plan does not name (:func:`someone_else`). A report that states a
    time says which plan: one that moves a plan states another time (when it states the
    plan's own time, it is news about that plan and replaces nothing), one that cancels
    states the plan's day; one that states no time is about a plan due within a day.
    Among several, the one at the time that news in ``e``'s fused memory (``mates``: the
    clinic's message before the chat that gives the new time) said would change, naming
    most of what that news names (the clinic's "Dr. Okafor is ill, your appointment on
    Wednesday has to be rebooked": Dr. Okafor's appointment that Wednesday, not another
    dentist's the same day), then
    the one sharing the most, then the one of ``e``'s own user (their calendar, not a
    relative's reminder of it), then the latest. Works across fused memories: a report
    moving an appointment a week later is another happening's time, yet it replaces it."""
    if not changes(e):
        return []
    said = change_sentences(e.text)
    subject = frozenset(t for t in about(e) if t in said)  # what the change is said of
    swaps = has_replacement(e.text)
    moves = (e.reschedule or has_new_time(e.text)) and not e.cancel and not swaps
    news = [m for m in mates if m.start is not None and m.id != e.id and changes(m)]
    ranked: list[tuple[tuple[int, int, bool, float, int], EventView]] = []
    for c in candidates:
        if (c.ts, c.id) >= (e.ts, e.id) or c.start is None or not scheduled(c) or (
                c.start <= c.ts or changes(c)):
            continue  # not a plan: written down when (or after) it happened
        if (c.end if c.end is not None else c.start) < e.ts - DAY / 2 or (
                c.start > e.ts + horizon):
            continue  # over before the report, or not due for a long while
        shared = subject & about(c)
        if names_conflict(e.names, c.names) or len(shared) < 2 or someone_else(e, c):
            continue
        if e.start is not None and moves and overlaps(e, c):
            return []  # news about this plan at its own time, not a new time for it
        if e.start is None and c.start > e.ts + DAY:
            continue  # a change that names no time is about what is imminent
        if e.start is not None and e.cancel and not swaps and c.day(c.start) != e.day(e.start):
            continue  # a cancellation of another day's plan
        announced = max((n for m in news if overlaps(m, c)
                         and (n := len(about(m) & about(c))) >= 2), default=0)
        ranked.append(((announced, len(shared), c.user == e.user, c.ts, c.id), c))
    if not ranked:
        return []
    best = max(ranked, key=lambda r: r[0])[1]
    # its copies: at its time, naming no one it does not (another meeting at that hour
    # with someone else is another plan, even when the report names both people)
    return [best, *(c for _, c in ranked if c is not best and overlaps(c, best)
                    and not names_conflict(c.names, best.names))]


def restates(newer: EventView, older: EventView) -> bool:
    """Whether a later report that disagrees with an earlier one of its fused memory, and
    carries no cue of a change, replaces it: another app or person restating the same
    happening (the spouse's "dentist is Thursday 4pm" against the calendar's Wednesday),
    mostly in the same key words, naming no one else. Two records of one app and user at
    different times (two flight bookings, two calendar entries) are two happenings; a
    report with a cue of a change replaces only what :func:`replaced_plans` picks. An
    earlier report of a happening that was over (with no end stated: had begun) when the
    later one was recorded is of another happening (the repair firm's next visit, entered
    the morning of the first)."""
    if changes(newer) or (newer.names and older.names and newer.names != older.names):
        return False
    if older.start is not None and (
            older.end if older.end is not None else older.start) < newer.ts:
        return False  # that one had passed: the later one is another happening
    return (newer.source != older.source or newer.user != older.user) and overlap(
        newer.entities, older.entities) >= 0.5


def overlaps(a: EventView, b: EventView) -> bool:
    """Whether two events' stated times overlap (both have one)."""
    assert a.start is not None and b.start is not None
    a1 = a.end if a.end is not None else a.start
    b1 = b.end if b.end is not None else b.start
    return a.start <= b1 and b.start <= a1


def someone_else(report: EventView, plan: EventView) -> bool:
    """Whether ``report`` comes from or goes to contacts ``plan`` never names, while the
    plan names someone or something the report does not: Tom Becker's "Golden Dragon is
    full tonight, let's go to Lotus Garden" is not about the dinner with Omar Aziz at
    Golden Dragon, though both name the restaurant."""
    if not report.actors or not plan.names - report.names:
        return False
    named = about(plan)
    return not any(a in named or set(a.split()) & plan.names for a in report.actors)


def names_conflict(a: frozenset[str], b: frozenset[str]) -> bool:
    """Both sides name people or organisations, and none in common."""
    return bool(a) and bool(b) and not a & b
