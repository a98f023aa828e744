"""The order the answer step reads retrieved records in (:func:`for_answer`): what states
what the question asks first, a later report before the plan it replaced, a cause after
what it caused."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from ..records import Hit
from ..retrieve.planner import ASKS_WHY, QUESTION_WORDS
from ..text.features import lookalikes
from ..text.tokens import words
from ..timeutil import epoch_of
from .wording import FUNCTION_WORDS, about, asked_words, content_words

RANK_PRIOR = 0.2
"""Weight of the retrieval rank (``RANK_PRIOR / (1 + rank)``) beside the share of the
question's words a record holds, when records are ordered for the answer. Measured on the
ask questions of three datasets: any weight from 0.1 to 0.3 puts a gold record on top more
often than the retrieval order alone (bench/RESULTS.md, ask)."""


PHRASE_PRIOR = 0.2
"""Weight of the share of the question's word pairs a record holds in the same order
(:func:`_pairs`), beside the share of its words: "the meeting with Lucas Martin" in the
message that moved that meeting, not in one that moved another and cancelled a dinner
with Lucas Martin (on the household ask questions any weight from 0.1 to 0.4 orders the
answers alike)."""


def _pairs(text: str, skip: frozenset[str] = frozenset()) -> frozenset[str]:
    """Neighbouring content words of a text as "first second", function words (and
    ``skip``) left out."""
    seq = [w for w in words(text[:4000])
           if w not in FUNCTION_WORDS and w not in skip and not w.isdigit()]
    return frozenset(f"{a} {b}" for a, b in zip(seq, seq[1:], strict=False))


def holding(question: str, hits: Sequence[Hit]
            ) -> tuple[list[frozenset[str]], list[frozenset[str]]]:
    """For each of ``hits``: the question's content words it holds (:func:`about`; a
    report that replaced one of ``hits`` and holds a word of the question itself holds
    that plan's too: "the clinic rang: my appointment is now Wednesday" is about the
    appointment with Dr. Patel it moved) and the question's neighbouring word pairs it
    holds (:func:`_pairs`)."""
    asked, phrase = asked_words(question), _pairs(question, QUESTION_WORDS)
    own = [asked & about(h) for h in hits]
    replaced: dict[int, list[frozenset[str]]] = {}  # report id -> what its plans hold
    for plan, words_ in zip(hits, own, strict=True):
        for report in plan.superseded_by:
            replaced.setdefault(report, []).append(words_)
    held = [w.union(*replaced.get(h.event_id, ())) if w else w
            for h, w in zip(hits, own, strict=True)]
    return held, [phrase & _pairs(h.text) for h in hits]


def for_answer(question: str, hits: Sequence[Hit], around: float | None = None
               ) -> tuple[Hit, ...]:
    """The retrieved records ordered for answering ``question``: by the share of the
    question's words each one holds (a word rare among these records counts more; its
    author and app count as words it holds, and a report of a change holds what the plan
    it replaced holds: :func:`holding`) and of its neighbouring word pairs
    (:data:`PHRASE_PRIOR`), plus a prior for its retrieval rank.
    Retrieval ranks what is about the question; this ranks what states what the
    question asks. Of look-alike reports, the latest comes before the older ones, or,
    for a question that names a time (``around``, epoch seconds: the middle of the days
    it names), the one recorded closest to it (:func:`_preferred_first`). A later report
    that replaced a record (``superseded_by``) comes just before it, when retrieved,
    whatever words the older one shares with the question (the calendar entry names the
    restaurant, the message moving the dinner names both), the best-ordered first.
    For a question asking why, what a record names as its cause comes just after it."""
    asked = asked_words(question)
    if not asked or len(hits) < 2:
        return tuple(hits)
    held, paired = holding(question, hits)
    found = Counter(w for words_ in held for w in words_)
    weight = {w: math.log(1.0 + len(hits) / (1.0 + found[w])) for w in asked}
    total = sum(weight.values())
    phrase = _pairs(question, QUESTION_WORDS)
    score = [sum(weight[w] for w in words_) / total + RANK_PRIOR / (1 + rank)
             + (PHRASE_PRIOR * len(pairs) / len(phrase) if phrase else 0.0)
             for rank, (words_, pairs) in enumerate(zip(held, paired, strict=True))]
    order = sorted(range(len(hits)), key=lambda i: (-score[i], i))
    ordered = _beside(_preferred_first([hits[i] for i in order],
                                       {h.event_id: w | p for h, w, p in
                                        zip(hits, held, paired, strict=True)}, around),
                      lambda h: h.superseded_by, after=False)
    if ASKS_WHY.search(question):
        return _beside(ordered, lambda h: h.caused_by, after=True)
    return ordered


def _preferred_first(hits: Sequence[Hit], held: dict[int, frozenset[str]],
                     around: float | None = None) -> tuple[Hit, ...]:
    """``hits`` in order, except that the look-alikes of a record preferred to it
    (:func:`preferred_alike`) move to just before it, the most preferred first: of two
    "my flight is delayed, I now land in Chengdu" messages, the question that names no
    day asks about the latest; one that names the older one's day keeps it first (the
    later one does not hold that day, or, the day taken out of the question, ``around``
    is closer to the older one)."""
    said = {h.event_id: content_words(h.text) for h in hits}
    out: list[Hit] = []
    placed: set[int] = set()
    for i, hit in enumerate(hits):
        if hit.event_id in placed:
            continue
        better = [h for h in hits[i + 1:] if h.event_id not in placed
                  and preferred_alike(hit, h, held, said, around)]
        for h in sorted(better, key=lambda h: _preference(h, around)):
            out.append(h)
            placed.add(h.event_id)
        out.append(hit)
        placed.add(hit.event_id)
    return tuple(out)


def _preference(hit: Hit, around: float | None) -> float:
    """Sort key among look-alike reports: the latest first, or the closest to ``around``."""
    ts = epoch_of(hit.provenance[0].ts)
    return -ts if around is None else abs(ts - around)


def preferred_alike(old: Hit, new: Hit, held: Mapping[int, frozenset[str]],
                    said: Mapping[int, frozenset[str]], around: float | None = None) -> bool:
    """Whether ``new`` is a look-alike report of ``old`` to answer with instead: from the
    same app, sharing most of its content words (``said``,
    :func:`~.text.features.lookalikes`), holding every question word it holds (``held``)
    and recorded later, or, for a question naming a time (``around``), closer to it."""
    return (bool(new.provenance and old.provenance)
            and new.provenance[0].source == old.provenance[0].source
            and _preference(new, around) < _preference(old, around)
            and held[new.event_id] >= held[old.event_id]
            and lookalikes(said[old.event_id], said[new.event_id]))


def _beside(hits: Sequence[Hit], linked: Callable[[Hit], tuple[int, ...]], *,
            after: bool) -> tuple[Hit, ...]:
    """``hits`` in order, except that the records ``linked`` names for a record, when they
    come later, move to just before it (``after``: just after it), in their order: a
    record's later replacements (``superseded_by``) before it, what it names as its cause
    (``caused_by``) after it."""
    at = {h.event_id: i for i, h in enumerate(hits)}
    out: list[Hit] = []
    placed: set[int] = set()
    for hit in hits:
        if hit.event_id in placed:
            continue
        moved = sorted((hits[at[j]] for j in linked(hit) if j in at and j not in placed),
                       key=lambda h: at[h.event_id])
        placed.update([hit.event_id, *(h.event_id for h in moved)])
        out += [hit, *moved] if after else [*moved, hit]
    return tuple(out)

