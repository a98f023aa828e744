"""Grounded answers: the LLM reads the final context as numbered records and cites them by
number, and its answer stands only when the records it cites state what it says
(:func:`supported`); otherwise, and without an LLM, a deterministic extractive answer
quotes the best current record, or says "I don't know" when no record matches the
question."""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .config import ANSWER_EVIDENCE_TOKENS
from .errors import LLMError
from .fusion.model import DAY
from .fusion.terms import terms_of
from .llm.base import LLM, Usage
from .prompts import answer as prompt
from .records import FusedMemory, Hit, Provenance
from .retrieve.agentic import EVIDENCE_ITEMS, clip, evidence_line, without_head
from .retrieve.planner import ASKS_WHY, QUESTION_WORDS, keywords
from .text.features import entities_of, lookalikes
from .text.timeexpr import MONTHS_EN, WEEKDAYS_EN, ZH_WEEKDAY
from .text.timerange import TimeRange, find_time_range
from .text.tokens import words
from .timeutil import epoch_of, to_epoch

log = logging.getLogger("memfuse_lite.answer")
Embed = Callable[[list[str]], np.ndarray]
"""Texts → unit vectors (the memory's embedder, passage role)."""
DONT_KNOW = "I don't know: nothing in this memory supports an answer."


@dataclass(frozen=True, slots=True)
class Citation:
    """An event the answer rests on, with its source records."""

    event_id: int
    provenance: tuple[Provenance, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    """What ``MemFuse.ask`` returns."""

    question: str
    text: str
    known: bool
    citations: tuple[Citation, ...]
    evidence: tuple[Hit, ...]
    fused: tuple[FusedMemory, ...]
    pipeline: str
    rounds: int
    usage: Usage
    latency_ms: float
    choice: str | None = None
    """For a multiple-choice question (``ask(..., choices=)``): the option letter picked,
    even when the evidence does not support an answer (then ``known`` is false)."""
    mode: str = "extractive"
    """``llm`` (the model's answer, checked against the records it cites), ``fallback``
    (the model's answer was not supported: the extractive answer instead) or
    ``extractive`` (no LLM)."""


@dataclass(frozen=True, slots=True)
class Draft:
    """What the answer step produced from one context."""

    text: str
    known: bool
    cited: tuple[int, ...]
    usage: Usage
    choice: str | None = None
    mode: str = "extractive"


SUPPORT_SHARE = 0.5
"""Share of an LLM answer's content words that must occur in the records it cites."""
_NUMBER = re.compile(r"\d+")
_DATE = r"\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{4}-\d{2}-\d{2}"
_UNIT = re.compile(rf"\d{{1,2}}:\d{{2}}|{_DATE}")
"""Clock times and dates, which an answer must quote whole: each of their numbers alone
is in many a record ("15:00" from the "2月15日" of one and the ":00" of another)."""
_DATED_TIME = re.compile(rf"(?:{_DATE})\D{{0,12}}?\d{{1,2}}:\d{{2}}")
"""A date and the clock time beside it ("2月15日周六 15:00", "2025-02-15 at 15:00"): one
appointment, which one record must state whole."""
_ASKS_VALUE = re.compile(
    r"\b(?:when|what (?:time|date|day|year|month)|which (?:day|date|year|month)|how (?:many|"
    r"much|long|often|old|far|late|early))\b|什么时候|何时|几点|几号|哪天|哪一天|哪年|几月|"
    r"多少|几个|几次|多久|多长|多大", re.I)
"""A question that asks for a time, a date or an amount (a bare number can answer it)."""
_ASKS_NUMBER = re.compile(r"\b(?:how many|what time)\b|多少|几点|几个|几次", re.I)
"""A question whose answer is a number: a count or a clock time (an amount of money:
:data:`_ASKS_AMOUNT`)."""
_ASKS_AMOUNT = re.compile(r"\b(?:cost|costs|price|paid|pay|spen[dt]|how much)\b|多少钱|花了|价格|费用",
                          re.I)
"""A question about money (what something cost, how much was paid)."""
_AMOUNT = re.compile(r"[¥$€£]\s?\d|\d[.,]\d\d\b|\d\s*(?:元|块|yuan|rmb|cny|usd|dollars?|euros?)",
                     re.I)
"""An amount of money: a currency sign or word by a number, or a number with cents."""
FUNCTION_WORDS = frozenset("""a an the and or but of to in on at by for with from as is are was
were be been it its this that these those there here i me my mine we us our you your he him
his she her they them their what which who whom when where why how do does did will would
can could should not no yes so then than too very just also about into over after before
according said says 的 了 和 是 在 我 你 他 她 它 们 这 那 就 都 也 还 吗 呢 吧 啊""".split())


def _said(text: str) -> frozenset[str]:
    """Content words of an answer or record, times and weekdays included."""
    return frozenset(w for w in words(text[:4000])
                     if w not in FUNCTION_WORDS and not w.isdigit())


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


def _holding(question: str, hits: Sequence[Hit]
             ) -> tuple[list[frozenset[str]], list[frozenset[str]]]:
    """For each of ``hits``: the question's content words it holds (:func:`_about`; a
    report that replaced one of ``hits`` and holds a word of the question itself holds
    that plan's too: "the clinic rang: my appointment is now Wednesday" is about the
    appointment with Dr. Patel it moved) and the question's neighbouring word pairs it
    holds (:func:`_pairs`)."""
    asked, phrase = _asked(question), _pairs(question, QUESTION_WORDS)
    own = [asked & _about(h) for h in hits]
    replaced: dict[int, list[frozenset[str]]] = {}  # report id -> what its plans hold
    for plan, words_ in zip(hits, own, strict=True):
        for report in plan.superseded_by:
            replaced.setdefault(report, []).append(words_)
    held = [w.union(*replaced.get(h.event_id, ())) if w else w
            for h, w in zip(hits, own, strict=True)]
    return held, [phrase & _pairs(h.text) for h in hits]


def _asked(question: str) -> frozenset[str]:
    """The question's content words, question words left out."""
    return _said(question) - QUESTION_WORDS


def _origin(hit: Hit) -> frozenset[str]:
    """Who wrote a record and in which app, lowercased (a record by Ben in his calendar
    speaks of "Ben's appointment" without naming him)."""
    return frozenset(x.lower() for p in hit.provenance for x in (p.user, p.source))


def _about(hit: Hit) -> frozenset[str]:
    """What a record says: its content words and its :func:`_origin`."""
    return _said(hit.text) | _origin(hit)


def for_answer(question: str, hits: Sequence[Hit], around: float | None = None
               ) -> tuple[Hit, ...]:
    """The retrieved records ordered for answering ``question``: by the share of the
    question's words each one holds (a word rare among these records counts more; its
    author and app count as words it holds, and a report of a change holds what the plan
    it replaced holds: :func:`_holding`) and of its neighbouring word pairs
    (:data:`PHRASE_PRIOR`), plus a prior for its retrieval rank.
    Retrieval ranks what is about the question; this ranks what states what the
    question asks. Of look-alike reports, the latest comes before the older ones, or,
    for a question that names a time (``around``, epoch seconds: the middle of the days
    it names), the one recorded closest to it (:func:`_preferred_first`). A later report
    that replaced a record (``superseded_by``) comes just before it, when retrieved,
    whatever words the older one shares with the question (the calendar entry names the
    restaurant, the message moving the dinner names both), the best-ordered first.
    For a question asking why, what a record names as its cause comes just after it."""
    asked = _asked(question)
    if not asked or len(hits) < 2:
        return tuple(hits)
    held, paired = _holding(question, hits)
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
    (:func:`_preferred_alike`) move to just before it, the most preferred first: of two
    "my flight is delayed, I now land in Chengdu" messages, the question that names no
    day asks about the latest; one that names the older one's day keeps it first (the
    later one does not hold that day, or, the day taken out of the question, ``around``
    is closer to the older one)."""
    said = {h.event_id: _said(h.text) for h in hits}
    out: list[Hit] = []
    placed: set[int] = set()
    for i, hit in enumerate(hits):
        if hit.event_id in placed:
            continue
        better = [h for h in hits[i + 1:] if h.event_id not in placed
                  and _preferred_alike(hit, h, held, said, around)]
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


def _preferred_alike(old: Hit, new: Hit, held: Mapping[int, frozenset[str]],
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


def _with_time(hit: Hit) -> str:
    """A record's text and when it was recorded (what an answer may quote of it)."""
    return f"{hit.text} {hit.provenance[0].ts if hit.provenance else ''}"


def _stated(text: str) -> frozenset[str]:
    """Content words and numbers of a text (what an answer asserts, or a record holds)."""
    return _said(text) | frozenset(_NUMBER.findall(text))


_PART = re.compile(r"[?？]\s*\S|,\s*(?:and\s+)?(?:(?:at|in|on|for|to|with|from|by)\s+)?"
                   r"(?:what|where|when|which|who|how|why)\b|"
                   r"\band\s+(?:what|where|when|which|who|how|why)\b", re.I)


def _parts(question: str) -> int:
    """How many things a question asks ("When …, at what address, and what should be
    brought?" asks three; "…是几点？…说的是几点？" two)."""
    return 1 + len(_PART.findall(question.strip()))


def _used(answer: str, cited: Sequence[Hit], parts: int = 1, dated: bool = True
          ) -> tuple[int, ...]:
    """The records the answer rests on: the cited one that states most of what the answer
    says (the first such in answer order: ``cited`` follows :func:`for_answer`), then, for
    a question asking ``parts`` things, each next one that states most of what the kept
    ones do not: for a question asking no time or amount (not ``dated``), other than a
    date or a number (the calendar entry's "Wednesday 19 February" in an answer that
    leaves out the restaurant it shows answers no part). A small model cites records
    beside the ones it answers from (measured with ``bench ask``: a second citation was
    gold evidence less often than the first), so only those are kept."""
    wanted = _stated(answer)
    pool = [(h.event_id, _stated(_with_time(h))) for h in cited]
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


TIME_WORDS = frozenset(WEEKDAYS_EN) | frozenset(MONTHS_EN) | frozenset(
    f"{week}{day}" for week in ("周", "星期") for day in ZH_WEEKDAY if day != "末") | frozenset(
    "月 日 号 上午 下午 晚上 中午 早上".split())
"""Words that only say when (weekdays, months, parts of the day)."""


_LETTER = re.compile(r"^\s*([A-Za-z])\s*(?:[.):、．]\s*(.*))?$", re.S)


def _claim(text: str, choices: Mapping[str, str] | None) -> str:
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
    asked = _asked(question)
    return not asked or bool(asked & _said(hit.text))


def supported(answer: str, question: str, cited: Sequence[Hit]) -> bool:
    """Whether the records an answer cites state what it asserts: every number in it and
    at least ``SUPPORT_SHARE`` of its content words occur in them, and they share a
    content word with the question (so a right-sounding answer cannot rest on unrelated
    records). An answer of numbers alone stands only for a question asking when, how
    many or how much, and only when one cited record's text states them all (a record's
    own time is when it was written, not always when what it tells happens)."""
    evidence = " ".join(_with_time(h) for h in cited)
    said, there = _said(answer), _said(evidence)
    numbers = set(_NUMBER.findall(answer))
    if not said and not numbers:
        return False
    if all(any(ch.isdigit() for ch in w) for w in said):  # a bare time, date or amount
        if not _ASKS_VALUE.search(question):
            return False  # it answers only "when" or "how many"
        if not any(numbers <= set(_NUMBER.findall(h.text)) for h in cited):
            return False  # a record's time alone: the extractive answer quotes it with it
    if not numbers <= set(_NUMBER.findall(evidence)):
        return False
    if not _units(answer) <= _units(evidence):
        return False  # a time or date pieced together from the numbers of others
    if not all(any(_units(pair) <= _units(_with_time(h)) for h in cited)
               for pair in _DATED_TIME.findall(answer)):
        return False  # one record's day with another's time (a look-alike's "15:00")
    if said and len(said & there) < SUPPORT_SHARE * len(said):
        return False
    asked = terms_of(question)  # the question's topic words (no question words, no times)
    return not asked or bool(asked & there)


def _units(text: str) -> set[str]:
    """The clock times and dates of a text as hour:minute and month-day ("09:30" is
    "9:30"; "2025-02-15" and "2月15日" are both "2-15")."""
    out = set()
    for unit in _UNIT.findall(text):
        n = [int(x) for x in _NUMBER.findall(unit)]
        out.add(f"{n[0]}:{n[1]:02d}" if ":" in unit else f"{n[-2]}-{n[-1]}")
    return out


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the answer LLM reads: numbered record lines (``records[n - 1]`` is record
    ``[n]``), then fused summaries, which carry no number and cannot be cited."""

    text: str
    records: tuple[Hit, ...]

    def cited(self, numbers: Iterable[object]) -> list[Hit]:
        """The records behind the numbers a model cited (others are ignored)."""
        return [self.records[n - 1] for n in numbers
                if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(self.records)]


def evidence_for(hits: Sequence[Hit], fused: Sequence[FusedMemory], llm: LLM,
                 budget: int = ANSWER_EVIDENCE_TOKENS) -> Evidence:
    """The answer prompt's evidence: records in answer order (:func:`for_answer`), each a
    line as :func:`~memfuse_lite.retrieve.agentic.evidence_line` writes it, numbered from
    1 (a small model's tokenizer spends a token per digit of an event id, in the prompt
    and again in each citation), while they fit ``budget`` tokens of ``llm`` (the first
    always does); then fused summaries that still fit, so a summary never takes a
    record's place."""
    def fitting(lines: Sequence[str], used: int) -> list[int]:
        chosen: list[int] = []
        for i, line in enumerate(lines):
            cost = llm.count_tokens(line) + 1  # and its newline
            if (chosen or used) and used + cost > budget:
                continue  # a shorter line further down may still fit
            chosen.append(i)
            used += cost
        return chosen

    def lines_of(records: Sequence[Hit]) -> list[str]:
        number = {h.event_id: str(n) for n, h in enumerate(records, 1)}
        return [evidence_line(h, number.get) for h in records]

    candidates = tuple(hits[:EVIDENCE_ITEMS])
    records = tuple(candidates[i] for i in fitting(lines_of(candidates), 0))
    lines = lines_of(records)  # numbered again without the records left out
    summaries = [f"Summary: {clip(f.summary)}" for f in fused[:2]]
    used = sum(llm.count_tokens(line) + 1 for line in lines)
    lines += [summaries[i] for i in fitting(summaries, used)]
    return Evidence("\n".join(lines), records)


def compose(question: str, hits: tuple[Hit, ...], fused: tuple[FusedMemory, ...],
            now: datetime | None, llm: LLM | None,
            choices: Mapping[str, str] | None = None, embed: Embed | None = None,
            evidence_tokens: int = ANSWER_EVIDENCE_TOKENS) -> Draft:
    """The answer to ``question`` from the final context: written by the LLM when one is
    given, else extractive. With ``choices`` (letter → option text) the answer also picks
    one letter: the LLM's (constrained to the letters) when its answer stands, else the
    option closest in meaning to one of the best records (``embed``; without it, the one
    sharing the most content words with them). The LLM reads the best records that fit
    ``evidence_tokens`` (:func:`evidence_for`)."""
    if not hits:
        return Draft(DONT_KNOW, False, (), Usage(), None)
    found = find_time_range(question, now) if now is not None else None
    asked, question = question, _without_time(question, found)
    around = _asked_time(found)
    hits = for_answer(question, hits, around)
    if llm is not None:
        evidence = evidence_for(hits, fused, llm, evidence_tokens)
        try:
            value, completion = llm.complete_json(
                prompt.messages(asked, now.isoformat(timespec="minutes") if now else "unknown",
                                evidence.text, choices),
                prompt.schema(choices), max_tokens=200, operation="answer")
        except LLMError as exc:
            log.warning("LLM answer failed, answering extractively: %s", exc)
        else:
            by_id = {h.event_id: h for h in hits}
            # a citation counts only for a record about the question
            rank = {h.event_id: r for r, h in enumerate(hits)}
            cited = tuple(sorted({h.event_id for h in evidence.cited(value.get("citations", []))
                                  if matches(question, h)}, key=rank.__getitem__))
            text = without_head(str(value.get("answer") or "").strip())
            claim = _claim(text, choices)
            choice = value.get("choice") if choices and value.get("choice") in choices else None
            # The model's own "known" flag is not trusted (small models set it at random):
            # its answer stands only when the records it cites state what it says.
            used = _used(claim, [by_id[i] for i in cited], _parts(question),
                         bool(_ASKS_VALUE.search(question))) if claim and cited else ()
            # what it rests on, and the cited reports that replaced any of those
            rests = used or cited
            rests += tuple(dict.fromkeys(j for i in rests for j in by_id[i].superseded_by
                                         if j in cited and j not in rests))
            quoted = _quoted(question, hits)
            if not _echoes(claim, asked) and _stands(question, claim, cited, rests, quoted,
                                                     hits, choices is not None, around):
                if choice is not None and choices is not None and not supported(
                        choices[choice], question, [by_id[i] for i in rests]):
                    # a letter whose option the cited records do not state is a guess
                    choice = _extractive_choice(choices, hits, embed)[0]
                # like the extractive answer, say what the report it rests on replaced
                note, old = _replaces(question, [by_id[i] for i in rests], hits)
                return Draft(text + note, True, (*rests, *(i for i in old if i not in rests)),
                             completion.usage, choice, "llm")
            # an answer that does not stand does not pick the letter either
            text, known, ids = _extractive(question, hits, quoted)
            letter, decided = _extractive_choice(choices, hits, embed)
            return Draft(text, known, ids or _cited(decided), completion.usage, letter,
                         "fallback")
    text, known, cited = _extractive(question, hits)
    letter, decided = _extractive_choice(choices, hits, embed)
    return Draft(text, known, cited or _cited(decided), Usage(), letter,
                 "fallback" if llm is not None else "extractive")  # an LLM that failed


def _echoes(claim: str, question: str) -> bool:
    """Whether ``claim`` only restates ``question`` (a small model's "Around Tuesday 4
    February, when does Ben land?" given as its answer): no content word or number of its
    own."""
    return not _said(claim) - _said(question) and \
        set(_NUMBER.findall(claim)) <= set(_NUMBER.findall(question))


def _without_time(question: str, found: TimeRange | None) -> str:
    """``question`` without the time phrase the planner reads in it (``found``: "Around
    Monday 17 February, when does Ben land?"; retrieval filters by that time): its words
    would favour a record that merely names the weekday."""
    for phrase in found.phrases if found is not None else ():
        # and the comma after a leading phrase, which would read as another part asked
        # ("Around Monday 17 February, when …": :func:`_parts`)
        question = re.sub(re.escape(phrase) + r"\s*[,，]?", " ", question)
    return question


AROUND_DAYS = 7
"""The longest span of days a question names that still points at one moment
(:func:`_asked_time`): "around Tuesday 28 January" is read as the three days either side
of it; "in January" points at none."""


def _asked_time(found: TimeRange | None) -> float | None:
    """The middle of the days a question names (``found``; epoch seconds), when they span
    at most :data:`AROUND_DAYS`; else None."""
    if found is None or (found.end - found.start).total_seconds() > AROUND_DAYS * DAY:
        return None
    return (to_epoch(found.start) + to_epoch(found.end)) / 2.0


def _cited(event_id: int | None) -> tuple[int, ...]:
    """The record a letter was picked from, cited when the answer quotes none."""
    return () if event_id is None else (event_id,)


def _stands(question: str, claim: str, cited: tuple[int, ...], rests: tuple[int, ...],
            quoted: Sequence[Hit], hits: Sequence[Hit], multiple_choice: bool,
            around: float | None = None) -> bool:
    """Whether an LLM answer stands: ``claim`` (what it says) resting on the records
    ``rests`` among those it ``cited``, for a question the extractive answer quotes
    ``quoted`` for, over the records ``hits`` (in answer order; ``around``: the time the
    question names, :func:`_asked_time`)."""
    by_id = {h.event_id: h for h in hits}
    if not (claim and cited) or not supported(claim, question, [by_id[i] for i in cited]):
        return False  # the records it cites do not state what it says
    if not quoted:
        return False  # no record holds half of the question's key words: nothing to go on
    # a question that asks several things: a part left unanswered (the report the best
    # record replaced, which the extractive answer quotes beside it, is one: "what time
    # does the reminder give, and what time did Mia say?")
    beside = _replaces(question, quoted, hits)[1] if _parts(question) > 1 else ()
    if len(rests) < len(quoted) + len(beside):
        return False
    words = set(keywords(question).split())
    most, best = max(len(_held(words, by_id[i])) for i in rests), len(_held(words, quoted[0]))
    if most < best:
        return False  # resting on records less about the question than the best one
    if most == best and not {h.event_id for h in quoted} & set(rests):
        # resting only on others that are as much about it: a look-alike the answer order
        # puts below (another appointment with the same doctor), which a small model is
        # drawn to as readily as to the right one
        return False
    if not multiple_choice and _ASKS_NUMBER.search(question) and not _NUMBER.search(claim):
        return False  # how many or what time, answered without a number
    if not multiple_choice and _ASKS_AMOUNT.search(question) and not _AMOUNT.search(claim):
        return False  # a question about money answered with no amount (a date, a time)
    # resting on a report that a later one replaced, without citing that one, or saying
    # nothing that one says anew: an out-of-date state given as the current one
    if any(by_id[i].superseded_by and _stale(claim, by_id[i], by_id, cited) for i in rests):
        return False
    # resting on a look-alike of a report the answer order puts first, older or further
    # from the time asked (last month's "your parcel from Peak Outdoor arrives today" for
    # this week's)
    held = {h.event_id: w | p for h, w, p in zip(hits, *_holding(question, hits), strict=True)}
    said = {h.event_id: _said(h.text) for h in hits}
    return not any(_preferred_alike(by_id[i], h, held, said, around)
                   for i in rests for h in hits if h.event_id not in rests)


def _stale(claim: str, old: Hit, by_id: dict[int, Hit], cited: tuple[int, ...]) -> bool:
    """Whether ``claim``, resting on ``old``, ignores the reports that replaced it: one is
    not cited, or the claim states none of the words and numbers they add to ``old`` (the
    answer "Cafe Soleil" from a plan whose replacement says the dinner moved to Trattoria
    Roma)."""
    if any(j not in cited for j in old.superseded_by):
        return True
    fresh = frozenset().union(*(_stated(by_id[j].text) for j in old.superseded_by)) \
        - _stated(old.text)
    return not _stated(claim) & fresh


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


def _held(words: set[str], hit: Hit) -> frozenset[str]:
    """The question's key words a record holds: in its text, among its names, or naming
    the app or user it came from ("Ana's calendar")."""
    lowered = hit.text.lower()
    names = set(entities_of(hit.text)) | _origin(hit)
    return frozenset(w for w in words if w in lowered or w in names)


def _quoted(question: str, hits: tuple[Hit, ...]) -> list[Hit]:
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
    it) hold at least half of the question's key words."""
    words = set(keywords(question).split())
    if _ASKS_BEFORE.search(question):  # the plan before the change, not what replaced it
        replacing = {j for h in hits for j in h.superseded_by}
        current = [h for h in hits if h.event_id not in replacing] or list(hits)
    else:
        current = [h for h in hits if not h.superseded_by] or list(hits)
    if ASKS_SEVERAL.search(question):
        current = _latest_episode(current, words)
    top = current[0]
    first = _held(words, top)
    chosen, covered = [top], set(first)
    if _ASKS_AMOUNT.search(question) and not _AMOUNT.search(top.text):
        # asked what was paid: the best record stating an amount that is about as much
        # about the question first (the payments for the party before the party's
        # calendar entry, which follows it)
        paid = next((h for h in current[1:] if _together(top, h) and _AMOUNT.search(h.text)),
                    None) or next((h for h in current[1:EXTRACT_POOL] if _AMOUNT.search(h.text)
                                   and 2 * len(_held(words, h)) >= len(first)), None)
        if paid is not None:
            current.remove(paid)
            current.insert(0, paid)
            top, first = paid, _held(words, paid)
            chosen, covered = [top, *chosen], covered | first
    for old in _replaced(top, hits):  # quoted beside it ("Ana's calendar shows …, and
        covered |= _held(words, old)  # where did it actually happen?")
    most = min(EXTRACT_RECORDS, _parts(question))
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
            held = _held(words, h)
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
    moved = set().union(*(_held(words, h) for h in hits if h.event_id in top.superseded_by))
    if words and len(covered | moved) < max(1, (len(words) + 1) // 2):
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
    top, first = current[0], _held(words, current[0])
    like = [h for h in current if _alike(top, h, words, first, days=math.inf)]
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
            and len(_held(words, hit) & first) >= max(2, len(first) - 1))


def _extractive(question: str, hits: tuple[Hit, ...], chosen: list[Hit] | None = None
                ) -> tuple[str, bool, tuple[int, ...]]:
    """Quote the records :func:`_quoted` picks (``chosen``, when already picked) and the
    report the best one replaces, if any; "I don't know" when it picks none."""
    chosen = _quoted(question, hits) if chosen is None else chosen
    if not chosen:
        return DONT_KNOW, False, ()
    quotes = []
    for h in chosen:
        p = h.provenance[0]
        quotes.append(f"{p.source} from {p.user} ({p.ts[:16]}): {h.text.strip()}")
    note, old = _replaces(question, chosen, hits)
    return "According to " + "; ".join(quotes) + note, True, (
        *(h.event_id for h in chosen), *old)


_ASKS_BEFORE = re.compile(r"\b(?:originally|original|initially|first|planned|previous(?:ly)?|"
                          r"earlier|before)\b|原定|原来|本来|最初|起初|原计划|原先|之前", re.I)
"""A question about the plan before it changed ("when was the meeting planned?", "first
booked for"): the replaced report answers it."""


def _replaced(hit: Hit, hits: Sequence[Hit]) -> list[Hit]:
    """The retrieved report ``hit`` replaced (the first, in answer order), if any: what
    an answer resting on ``hit`` may quote beside it (:func:`_replaces`)."""
    return [h for h in hits if hit.event_id in h.superseded_by][:1]


def _replaces(question: str, rests: Sequence[Hit], hits: Sequence[Hit]
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
    held = set().union(*(_held(words, h) for h in rests))
    several = _parts(question) > 1
    replaced = [h for h in _replaced(rests[0], hits)
                if _ASKS_BEFORE.search(question) or several and _held(words, h) - held]
    if not replaced:
        return "", ()
    old = replaced[0]
    return f" — this replaces an earlier report: \"{old.text.strip()[:160]}\"", (old.event_id,)


def _extractive_choice(choices: Mapping[str, str] | None, hits: tuple[Hit, ...],
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
