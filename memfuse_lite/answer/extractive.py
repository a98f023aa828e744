"""The extractive answer: quotes of the best current records (:func:`extractive_answer`),
and for a multiple-choice question the option closest to them
(:func:`extractive_choice`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..fusion.model import DAY
from ..records import Hit
from ..retrieve.planner import ASKS_WHY, keywords
from ..text.features import entities_of
from ..timeutil import epoch_of
from .wording import AMOUNT, ASKS_AMOUNT, about_question, key_words_held, parts_asked

Embed = Callable[[list[str]], np.ndarray]
"""Texts → unit vectors (the memory's embedder, passage role)."""
DONT_KNOW = "I don't know: nothing in this memory supports an answer."

EXTRACT_RECORDS = 3
"""Most records an extractive answer quotes."""
EXTRACT_POOL = 8
"""How many of the best current records an extractive answer picks from."""
ASKS_SEVERAL = re.compile(r"\b(?:each|every|list|what (?:items|things))\b|哪些|各", re.I)
"""A question asking for every one of several like things ("… and what did each item
cost?", "买了哪些东西"): each is its own record (three payments, by three people)."""
SEVERAL_RECORDS = 6
"""Most records an extractive answer quotes for such a question."""
EPISODE_DAYS = 3.0
"""How far apart, in days, the records of one happening are taken to be (the span fusion
gathers an episode over, ``FusionConfig.window_days``)."""
_ASKS_BEFORE = re.compile(r"\b(?:originally|original|initially|first|planned|previous(?:ly)?|"
                          r"earlier|before)\b|原定|原来|本来|最初|起初|原计划|原先|之前", re.I)
"""A question about the plan before it changed ("when was the meeting planned?", "first
booked for"): the replaced report answers it."""


def quoted_records(question: str, hits: tuple[Hit, ...]) -> list[Hit]:
    """The records an extractive answer quotes: the best current record (asked about the
    plan before a change, :data:`_ASKS_BEFORE`, the best record that replaced no other
    retrieved one) and, for a question that asks several things, those among the next
    best that hold a key word of the question the quoted ones do not (another part of the
    same happening: the calendar entry's time, the clinic's message with the address),
    one per further part, at most :data:`EXTRACT_RECORDS`: first those fusion put in the
    best one's memory, then, only when none of those is quoted, others (those recorded
    closest to the best one first) that hold two key words the quoted ones hold as well;
    for a question asking for each of several things, the best one's like records
    (:func:`_alike`); for a question asking why, what the best one names as its cause,
    when retrieved, comes second. Asked what was paid, the best one is the best stating
    an amount, when one about as much about the question is among the next best. None
    unless they (with the report the best one replaced, which the answer quotes beside
    it) are about the question (:func:`~.wording.about_question`)."""
    words = set(keywords(question).split())
    if _ASKS_BEFORE.search(question):  # the plan before the change, not what replaced it
        replacing = {j for h in hits for j in h.superseded_by}
        current = [h for h in hits if h.event_id not in replacing] or list(hits)
    else:
        current = [h for h in hits if not h.superseded_by] or list(hits)
    if ASKS_SEVERAL.search(question):
        current = _latest_episode(current, words)
    top = current[0]
    first = key_words_held(words, top)
    chosen, covered = [top], set(first)
    if ASKS_AMOUNT.search(question) and not AMOUNT.search(top.text):
        # asked what was paid: the best record stating an amount that is about as much
        # about the question first (the payments for the party before the party's
        # calendar entry, which follows it)
        paid = next((h for h in current[1:] if _together(top, h) and AMOUNT.search(h.text)),
                    None) or next((h for h in current[1:EXTRACT_POOL] if AMOUNT.search(h.text)
                                   and 2 * len(key_words_held(words, h)) >= len(first)), None)
        if paid is not None:
            current.remove(paid)
            current.insert(0, paid)
            top, first = paid, key_words_held(words, paid)
            chosen, covered = [top, *chosen], covered | first
    for old in _replaced(top, hits):  # quoted beside it ("Ana's calendar shows …, and
        covered |= key_words_held(words, old)  # where did it actually happen?")
    most = min(EXTRACT_RECORDS, parts_asked(question))
    pool = current[1:EXTRACT_POOL]
    mates = [h for h in pool if _together(top, h)]
    # of another memory's records, those recorded closest to the best one first: another
    # part of its happening is recorded around the same time (the booking e-mail an hour
    # before the calendar entry, not another trip's message a few days later)
    others = sorted((h for h in pool if not _together(top, h)), key=lambda h: _apart(top, h))
    for linked, group in ((True, mates), (False, others)):
        if not linked and any(_together(top, c) for c in chosen[1:]):
            break  # fusion gathered the other parts: another memory's look-alikes stay out
        for h in group:
            held = key_words_held(words, h)
            if len(chosen) < most and held - covered and 2 * len(held) >= len(first) \
                    and (linked or len(held & covered) >= 2):
                chosen.append(h)
                covered |= held
    if ASKS_SEVERAL.search(question):
        have = {h.event_id for h in chosen}
        alike = [h for h in current[1:]
                 if h.event_id not in have and _alike(top, h, words, first)]
        chosen += alike[: max(0, SEVERAL_RECORDS - len(chosen))]
    if ASKS_WHY.search(question):  # the answer to "why" is what the record names as cause
        cause = next((h for h in hits if h.event_id in top.caused_by), None)
        if cause is not None and all(c.event_id != cause.event_id for c in chosen):
            chosen.insert(1, cause)
    # a plan asked about before it changed: what moved it says what it was ("my dentist
    # appointment moved to …")
    moved = set().union(*(key_words_held(words, h) for h in hits
                          if h.event_id in top.superseded_by))
    if words and not about_question(len(covered | moved), len(words)):
        return []
    return chosen


def _apart(a: Hit, b: Hit) -> float:
    """Seconds between when two records were recorded (infinite for one without
    provenance)."""
    if not (a.provenance and b.provenance):
        return math.inf
    return abs(epoch_of(a.provenance[0].ts) - epoch_of(b.provenance[0].ts))


def _together(top: Hit, hit: Hit) -> bool:
    """Whether fusion put ``hit`` in the memory of ``top`` (one happening)."""
    return top.fused_id is not None and hit.fused_id == top.fused_id


def _latest_episode(current: list[Hit], words: set[str]) -> list[Hit]:
    """``current`` for an answer listing several like things: as it is, unless a like
    record of the best one (:func:`_alike`, whenever recorded) lies more than
    :data:`EPISODE_DAYS` later; then the best like record recorded within that of the
    latest one comes first, and the like records of earlier episodes go. "What did we buy
    for Kenji's party?" asks about his latest party, not the one whose payment names the
    birthday cake."""
    top, first = current[0], key_words_held(words, current[0])
    like = [h for h in current if _alike(top, h, words, first, days=math.inf)]
    if not like:  # the best record holds fewer than two of the question's key words
        return current
    last = max(epoch_of(h.provenance[0].ts) for h in like)

    def earlier(h: Hit) -> bool:
        return last - epoch_of(h.provenance[0].ts) > EPISODE_DAYS * DAY

    if not earlier(top):
        return current
    stale = {h.event_id for h in like if earlier(h)}
    latest = next(h for h in like if not earlier(h))
    return [latest, *(h for h in current if h is not latest and h.event_id not in stale)]


def _alike(top: Hit, hit: Hit, words: set[str], first: frozenset[str],
           days: float = EPISODE_DAYS) -> bool:
    """Whether ``hit`` reports another of the things ``top`` reports: from the same app,
    recorded within ``days`` (:data:`EPISODE_DAYS`) of it, and holding all but one of the
    question's key words ``top`` holds (``first``; two at least): the balloons, the cake and the
    lanterns paid for Lucas's party, not the cake for Kenji's."""
    a, b = top.provenance[0], hit.provenance[0]
    return (a.source == b.source and abs(epoch_of(a.ts) - epoch_of(b.ts)) <= days * DAY
            and len(key_words_held(words, hit) & first) >= max(2, len(first) - 1))


def extractive_answer(question: str, hits: tuple[Hit, ...],
                      chosen: list[Hit] | None = None) -> tuple[str, bool, tuple[int, ...]]:
    """Quote the records :func:`quoted_records` picks (``chosen``, when already picked) and the
    report the best one replaces, if any; "I don't know" when it picks none."""
    chosen = quoted_records(question, hits) if chosen is None else chosen
    if not chosen:
        return DONT_KNOW, False, ()
    quotes = []
    for h in chosen:
        p = h.provenance[0]
        quotes.append(f"{p.source} from {p.user} ({p.ts[:16]}): {h.text.strip()}")
    note, old = replaces(question, chosen, hits)
    return "According to " + "; ".join(quotes) + note, True, (
        *(h.event_id for h in chosen), *old)


def _replaced(hit: Hit, hits: Sequence[Hit]) -> list[Hit]:
    """The retrieved report ``hit`` replaced (the first, in answer order), if any: what
    an answer resting on ``hit`` may quote beside it (:func:`replaces`)."""
    return [h for h in hits if hit.event_id in h.superseded_by][:1]


def replaces(question: str, rests: Sequence[Hit], hits: Sequence[Hit]
             ) -> tuple[str, tuple[int, ...]]:
    """What an answer resting on ``rests`` adds when the first of them replaced a
    retrieved report (the plan before it moved): a note quoting that report
    (:func:`_replaced`) and its id to cite, when the question asks several things and the
    report holds a key word of it none of ``rests`` holds ("what time does Mia's reminder
    give, and what did Ana say?"), or when it asks about the plan before the change
    (:data:`_ASKS_BEFORE`). A replaced plan that adds no part asked is not cited ("when
    does Ben land?" rests on his message, not on the meeting it moved; "when is Ana's
    appointment with Dr. Lin?" on the clinic's new time, not on the calendar entry that
    names the doctor)."""
    words = set(keywords(question).split())
    held = set().union(*(key_words_held(words, h) for h in rests))
    several = parts_asked(question) > 1
    replaced = [h for h in _replaced(rests[0], hits)
                if _ASKS_BEFORE.search(question) or several and key_words_held(words, h) - held]
    if not replaced:
        return "", ()
    old = replaced[0]
    return f" — this replaces an earlier report: \"{old.text.strip()[:160]}\"", (old.event_id,)


def extractive_choice(choices: Mapping[str, str] | None, hits: tuple[Hit, ...],
                      embed: Embed | None = None, top: int = 5
                       ) -> tuple[str | None, int | None]:
    """The option closest in meaning (cosine, with ``embed``) to one of the ``top`` best
    records, and that record's event id. Without ``embed``, the one whose content words
    occur most in them (ranked higher counts more; None when no option shares a word with
    them), and the record holding most of its words."""
    if not choices or not hits:
        return None, None
    letters = list(choices)
    if embed is not None:
        options = embed([choices[letter] for letter in letters])
        records = embed([h.text for h in hits[:top]])
        sims = options @ records.T
        best = int(np.argmax(sims.max(axis=1)))
        return letters[best], hits[int(np.argmax(sims[best]))].event_id
    evidence = [set(entities_of(h.text)) | set(h.text.lower().split()) for h in hits[:top]]
    words = [set(keywords(choices[letter]).split()) for letter in letters]
    overlap = [sum(len(w & ev) / (rank + 1) for rank, ev in enumerate(evidence))
               / max(1, len(w)) ** 0.5 for w in words]
    if max(overlap) <= 0.0:
        return None, None
    best = int(np.argmax(overlap))
    held = [len(words[best] & ev) for ev in evidence]
    return letters[best], hits[held.index(max(held))].event_id

