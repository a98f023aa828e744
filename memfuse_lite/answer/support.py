"""The support check: whether the records an LLM answer cites state what it says
(:func:`supported`), and why an answer does not stand beside the extractive one
(:func:`objection`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..fusion.terms import terms_of
from ..records import Hit
from ..retrieve.planner import keywords
from ..text.features import entities_of
from ..text.timeexpr import MONTH_NAMES, WEEKDAY_NAMES
from ..text.tokens import stems
from ..timeutil import parse_ts
from .extractive import replaces
from .order import holding, preferred_alike
from .wording import (
    AMOUNT,
    ASKS_AMOUNT,
    ASKS_NUMBER,
    ASKS_VALUE,
    DATED_TIME,
    NUMBER,
    TIME_WORDS,
    UNIT,
    about_question,
    asked_words,
    content_words,
    key_words_held,
    origin,
    parts_asked,
    stated,
    with_time,
)

SUPPORT_SHARE = 0.5
"""Share of an LLM answer's content words that must occur in the records it cites."""


def resting_on(answer: str, cited: Sequence[Hit], parts: int = 1, dated: bool = True
               ) -> tuple[int, ...]:
    """The records the answer rests on: the cited one that states most of what the answer
    says (the first such in answer order: ``cited`` follows :func:`~.order.for_answer`),
    then, for a question asking ``parts`` things, each next one that states most of what
    the kept ones do not: for a question asking no time or amount (not ``dated``), other
    than a date or a number (the calendar entry's "Wednesday 19 February" in an answer that
    leaves out the restaurant it shows answers no part). A small model cites records
    beside the ones it answers from (measured with ``bench ask``: a second citation was
    gold evidence less often than the first), so only those are kept."""
    wanted = stated(answer)
    pool = [(h.event_id, stated(with_time(h))) for h in cited]
    kept: list[int] = []

    def adds(states: frozenset[str]) -> frozenset[str]:
        new = wanted & states
        return new if dated or not kept else frozenset(w for w in new if w not in TIME_WORDS
                                                       and not w.isdigit())

    while pool and len(kept) < parts:
        best = max(range(len(pool)), key=lambda i: len(adds(pool[i][1])))
        eid, states = pool.pop(best)
        if not adds(states):
            break
        kept.append(eid)
        wanted -= states
    return tuple(kept)


_LETTER = re.compile(r"^\s*([A-Za-z])\s*(?:[.):、．]\s*(.*))?$", re.S)


def claim_of(text: str, choices: Mapping[str, str] | None) -> str:
    """What an answer asserts: with options, a leading option letter ("B", "B. …") is
    dropped, so an answer that is only a letter asserts nothing and falls back (a bare
    letter would otherwise pass the support check on any record holding that character,
    and an option's words alone are what the letter check already weighs)."""
    found = _LETTER.match(text) if choices else None
    if found is None or choices is None or found.group(1).upper() not in choices:
        return text
    return (found.group(2) or "").strip()


def matches(question: str, hit: Hit) -> bool:
    """Whether a record shares a content word with the question (a citation must)."""
    asked = asked_words(question)
    return not asked or bool(asked & content_words(hit.text))


def supported(answer: str, question: str, cited: Sequence[Hit]) -> bool:
    """Whether the records an answer cites state what it asserts: every number in it and
    at least ``SUPPORT_SHARE`` of its content words occur in them, and they share a
    content word with the question (so a right-sounding answer cannot rest on unrelated
    records). An answer of numbers alone stands only for a question asking when, how
    many or how much, and only when one cited record's text states them all (a record's
    own time is when it was written, not always when what it tells happens)."""
    evidence = " ".join(with_time(h) for h in cited)
    written = content_words(answer)
    numbers = _numbers(answer)
    if not written and not numbers:
        return False
    if all(any(ch.isdigit() for ch in w) for w in written):  # a bare time, date or amount
        if not ASKS_VALUE.search(question):
            return False  # it answers only "when" or "how many"
        if not any(numbers <= _numbers(h.text) for h in cited):
            return False  # a record's time alone: the extractive answer quotes it with it
    if not numbers <= _numbers(evidence):
        return False
    if not _units(answer) <= _units(evidence):
        return False  # a time or date pieced together from the numbers of others
    if not all(any(_units(pair) <= _units(with_time(h)) for h in cited)
               for pair in DATED_TIME.findall(answer)):
        return False  # one record's day with another's time (a look-alike's "15:00")
    # words compared by their stems ("called" states "call"), numbers by the check above;
    # who wrote a record, and the month and weekday it was written, are what it states too
    # ("Ben will pick her up", from Ben's "I'll pick up Mia"; "the call on March 4th")
    said = set(stems(w for w in written if not any(ch.isdigit() for ch in w)))
    there = set(stems(content_words(evidence))) | {
        w for h in cited for w in (*origin(h), *_written_time(h))}
    if said and len(said & there) < SUPPORT_SHARE * len(said):
        return False
    # the question's topic words (no question words, no times)
    asked = set(stems(terms_of(question)))
    return not asked or bool(asked & there)


def best_held(choices: Mapping[str, str], cited: Sequence[Hit]) -> frozenset[str]:
    """The options whose words and numbers the ``cited`` records hold the largest share of
    (none when they hold none of any): the letters those records favour over the others.
    Options paraphrase what records say, so an option is weighed against the others rather
    than by a share of its own."""
    there = stated(" ".join(with_time(h) for h in cited))
    share = {letter: len(stated(text) & there) / max(1, len(stated(text)))
             for letter, text in choices.items()}
    top = max(share.values(), default=0.0)
    return frozenset(letter for letter, s in share.items() if s == top and s > 0)


def _numbers(text: str) -> set[str]:
    """The numbers of a text by value ("04" of a date is the "4" of "March 4th")."""
    return {str(int(n)) for n in NUMBER.findall(text)}


def _written_time(hit: Hit) -> tuple[str, ...]:
    """The month and weekday a record was written, in English words (stemmed)."""
    try:
        when = parse_ts(hit.provenance[0].ts)
    except (IndexError, ValueError):
        return ()
    return tuple(stems([MONTH_NAMES[when.month - 1], WEEKDAY_NAMES[when.weekday()]]))


def _units(text: str) -> set[str]:
    """The clock times and dates of a text as hour:minute and month-day ("09:30" is
    "9:30"; "2025-02-15" and "2月15日" are both "2-15")."""
    out = set()
    for unit in UNIT.findall(text):
        n = [int(x) for x in NUMBER.findall(unit)]
        out.add(f"{n[0]}:{n[1]:02d}" if ":" in unit else f"{n[-2]}-{n[-1]}")
    return out


def echoes(claim: str, question: str) -> bool:
    """Whether ``claim`` only restates ``question`` (a small model's "Around Tuesday 4
    February, when does Ben land?" given as its answer): no content word or number of its
    own."""
    return not content_words(claim) - content_words(question) and \
        set(NUMBER.findall(claim)) <= set(NUMBER.findall(question))


NO_CLAIM = "the model's answer says nothing"
NO_CITATION = "the model cites no record about the question"
NOT_STATED = "the records the model cites do not state what it says"
NOTHING_TO_GO_ON = ("neither the best records nor those it cites hold half of the question's key "
                    "words, or four")
PART_UNANSWERED = "a part of the question is left unanswered"
LESS_ABOUT_IT = "it rests on records less about the question than the best one"
LOOK_ALIKE = "it rests on a look-alike of a record placed before it"
NO_NUMBER = "asked how many, what time or how much, it states no number"
OUT_OF_DATE = "it rests on a report a later one replaced"
WRONG_PERSON = "it names someone else than the one the records say does it"
ECHO = "the model's answer only restates the question"
OPTION_NOT_STATED = "the records it cites favour another option than the one it picks"
MODEL_FAILED = "the model failed"
OBJECTIONS = (NO_CLAIM, NO_CITATION, NOT_STATED, NOTHING_TO_GO_ON, PART_UNANSWERED,
              LESS_ABOUT_IT, LOOK_ALIKE, NO_NUMBER, OUT_OF_DATE, WRONG_PERSON, ECHO,
              OPTION_NOT_STATED, MODEL_FAILED)
"""Why a model's answer gave way to the extractive one (``Answer.rejected``)."""


def objection(question: str, claim: str, cited: tuple[int, ...], rests: tuple[int, ...],
              quoted: Sequence[Hit], hits: Sequence[Hit], multiple_choice: bool,
              around: float | None = None) -> str | None:
    """Why an LLM answer does not stand (one of :data:`OBJECTIONS`), or None when it does:
    ``claim`` (what it says) resting on the records
    ``rests`` among those it ``cited``, for a question the extractive answer quotes
    ``quoted`` for, over the records ``hits`` (in answer order; ``around``: the time the
    question names, :func:`~.compose._asked_time`)."""
    by_id = {h.event_id: h for h in hits}
    if not claim:
        return NO_CLAIM
    if not cited:
        return NO_CITATION
    if not supported(claim, question, [by_id[i] for i in cited]):
        return NOT_STATED  # the records it cites do not state what it says
    words = set(keywords(question).split())
    if not quoted:
        # no record the extractive answer would quote is about the question; the records
        # the model cites may be, together (a long question whose parts several records
        # of one happening state): else there is nothing to go on
        together = frozenset().union(*(key_words_held(words, by_id[i]) for i in cited))
        if not words or not about_question(len(together), len(words)):
            return NOTHING_TO_GO_ON
    else:
        # a question that asks several things: a part left unanswered (the report the best
        # record replaced, which the extractive answer quotes beside it, is one: "what time
        # does the reminder give, and what time did Mia say?")
        if parts_asked(question) > 1 and \
                len(rests) < len(quoted) + len(replaces(question, quoted, hits)[1]):
            return PART_UNANSWERED
        most = max(len(key_words_held(words, by_id[i])) for i in rests)
        best = len(key_words_held(words, quoted[0]))
        if most < best:
            return LESS_ABOUT_IT  # resting on records less about the question than the best
        if most == best and not {h.event_id for h in quoted} & set(rests):
            # resting only on others that are as much about it: a look-alike the answer
            # order puts below (another appointment with the same doctor), which a small
            # model is drawn to as readily as to the right one
            return LOOK_ALIKE
    if ASKS_WHO.search(question) and _someone_else(question, claim,
                                                   [by_id[i] for i in rests], hits):
        return WRONG_PERSON  # "Ana", from Ben's "Reminder for Ana: … I'll pick up Mia"
    if not multiple_choice and ASKS_NUMBER.search(question) and not NUMBER.search(claim):
        return NO_NUMBER  # how many or what time, answered without a number
    if not multiple_choice and ASKS_AMOUNT.search(question) and not AMOUNT.search(claim):
        return NO_NUMBER  # a question about money answered with no amount (a date, a time)
    # resting on a report that a later one replaced, without citing that one, or saying
    # nothing that one says anew: an out-of-date state given as the current one
    if any(by_id[i].superseded_by and _stale(claim, by_id[i], by_id, cited) for i in rests):
        return OUT_OF_DATE
    # resting on a look-alike of a report the answer order puts first, older or further
    # from the time asked (last month's "your parcel from Peak Outdoor arrives today" for
    # this week's)
    held = {h.event_id: w | p for h, w, p in zip(hits, *holding(question, hits), strict=True)}
    said = {h.event_id: content_words(h.text) for h in hits}
    if any(preferred_alike(by_id[i], h, held, said, around)
           for i in rests for h in hits if h.event_id not in rests):
        return LOOK_ALIKE
    return None


ASKS_WHO = re.compile(r"\bwho\b|\bwhom\b|谁", re.I)
"""A question asking who does something."""
FIRST_PERSON = re.compile(r"\b(?:i|i'll|i'm|i've|i'd|we|we'll|we're|we've|let me)\b|我|咱", re.I)
CLAUSE = re.compile(r"[,;:.!?\n，。；：！？、]")


def doer(question: str, record: Hit) -> str | None:
    """Who ``record`` says does what ``question`` asks about: its author, when the clause
    of it that names the action (at least half of the question's words, stemmed) speaks in
    the first person ("Reminder for Ana: …, I'll pick up Mia from school" — Ben's SMS —
    says Ben picks her up); None when no such clause says so."""
    asked = set(stems(asked_words(question)))
    if not asked or not record.provenance:
        return None
    for clause in CLAUSE.split(record.text):
        if FIRST_PERSON.search(clause) and \
                2 * len(asked & set(stems(content_words(clause)))) >= len(asked):
            return record.provenance[0].user.lower()
    return None


def _someone_else(question: str, claim: str, rests: Sequence[Hit], hits: Sequence[Hit]
                  ) -> bool:
    """Whether a who-answer names people (users of this memory, names the records it rests
    on mention) none of whom is the one those records say does it (:func:`doer`)."""
    doers = {d for d in (doer(question, h) for h in rests) if d}
    if not doers:
        return False
    users = {p.user.lower() for h in hits for p in h.provenance} | doers | {
        name.lower() for h in rests for name in entities_of(h.text)}
    said = claim.lower()
    named = {u for u in users if re.search(rf"(?<![^\W\d_]){re.escape(u)}(?![^\W\d_])", said)}
    return bool(named) and not named & doers


def _stale(claim: str, old: Hit, by_id: dict[int, Hit], cited: tuple[int, ...]) -> bool:
    """Whether ``claim``, resting on ``old``, ignores the reports that replaced it: one is
    not cited, or the claim states none of the words and numbers they add to ``old`` (the
    answer "Cafe Soleil" from a plan whose replacement says the dinner moved to Trattoria
    Roma)."""
    if any(j not in cited for j in old.superseded_by):
        return True
    fresh = frozenset().union(*(stated(by_id[j].text) for j in old.superseded_by)) \
        - stated(old.text)
    return not stated(claim) & fresh

