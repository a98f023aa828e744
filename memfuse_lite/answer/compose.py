"""The answer step: the LLM reads the final context as numbered records and cites them by
number; its answer stands only when the records it cites state what it says
(:mod:`.support`), otherwise, and without an LLM, the extractive answer is given
(:mod:`.extractive`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..config import ANSWER_EVIDENCE_TOKENS
from ..errors import LLMError
from ..fusion.model import DAY
from ..llm.base import LLM, Usage
from ..prompts import answer as prompt
from ..records import FusedMemory, Hit, Provenance
from ..retrieve.agentic import EVIDENCE_ITEMS, clip, evidence_line, without_head
from ..text.timerange import TimeRange, find_time_range
from ..timeutil import in_zone_of, to_epoch
from .extractive import (
    DONT_KNOW,
    Embed,
    extractive_answer,
    extractive_choice,
    quoted_records,
    replaces,
)
from .order import for_answer
from .support import (
    ECHO,
    MODEL_FAILED,
    OPTION_NOT_STATED,
    best_held,
    claim_of,
    echoes,
    matches,
    objection,
    resting_on,
)
from .wording import ASKS_VALUE, parts_asked, stated, with_time

log = logging.getLogger("memfuse_lite.answer")


@dataclass(frozen=True, slots=True)
class Citation:
    """An event the answer rests on, with its source records."""

    event_id: int
    provenance: tuple[Provenance, ...]


@dataclass(frozen=True, slots=True)
class Rejected:
    """A model's answer that gave way to the extractive one, and why."""

    text: str
    """What the model answered ("" when it failed)."""
    reason: str
    """One of :data:`~memfuse_lite.answer.support.OBJECTIONS`."""
    choice: str | None = None
    """The option letter the model picked (multiple choice), kept or not."""


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
    rejected: Rejected | None = None
    """In mode ``fallback``: what the model answered and why it was not kept; in mode
    ``llm`` with options, the letter the model picked when the records did not state it
    (``choice`` is then the extractive one)."""


@dataclass(frozen=True, slots=True)
class Draft:
    """What the answer step produced from one context."""

    text: str
    known: bool
    cited: tuple[int, ...]
    usage: Usage
    choice: str | None = None
    mode: str = "extractive"
    rejected: Rejected | None = None


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
            evidence_tokens: int = ANSWER_EVIDENCE_TOKENS,
            on_answer: Callable[[str], None] | None = None) -> Draft:
    """The answer to ``question`` from the final context: written by the LLM when one is
    given, else extractive. With ``choices`` (letter → option text) the answer also picks
    one letter: the LLM's (constrained to the letters) when its answer stands, else the
    option closest in meaning to one of the best records (``embed``; without it, the one
    sharing the most content words with them). The LLM reads the best records that fit
    ``evidence_tokens`` (:func:`evidence_for`); ``on_answer`` is given the model's answer
    piece by piece as it writes it, before it is checked."""
    if not hits:
        return Draft(DONT_KNOW, False, (), Usage(), None)
    found = find_time_range(question, now) if now is not None else None
    asked, question = question, _without_time(question, found)
    around = _asked_time(found, now)
    hits = for_answer(question, hits, around)
    if llm is None:
        text, known, cited = extractive_answer(question, hits)
        letter, decided = extractive_choice(choices, hits, embed)
        return Draft(text, known, cited or _cited(decided), Usage(), letter)
    evidence = evidence_for(hits, fused, llm, evidence_tokens)
    try:
        value, completion = llm.complete_json(
            prompt.messages(asked, now.isoformat(timespec="minutes") if now else "unknown",
                            evidence.text, choices),
            prompt.schema(choices), max_tokens=200, operation="answer",
            on_field=("answer", on_answer) if on_answer is not None else None)
    except LLMError as exc:
        log.warning("LLM answer failed, answering extractively: %s", exc)
        return _fallback(question, hits, choices, embed, Usage(), Rejected("", MODEL_FAILED))
    by_id = {h.event_id: h for h in hits}
    # a citation counts only for a record about the question
    rank = {h.event_id: r for r, h in enumerate(hits)}
    cited = tuple(sorted({h.event_id for h in evidence.cited(value.get("citations", []))
                          if matches(question, h)}, key=rank.__getitem__))
    text = without_head(str(value.get("answer") or "").strip())
    claim = claim_of(text, choices)
    choice = value.get("choice") if choices and value.get("choice") in choices else None
    # The model's own "known" flag is not trusted (small models set it at random):
    # its answer stands only when the records it cites state what it says.
    used = resting_on(claim, [by_id[i] for i in cited], parts_asked(question),
                      bool(ASKS_VALUE.search(question))) if claim and cited else ()
    # what it rests on, and the cited reports that replaced any of those
    rests = used or cited
    rests += tuple(dict.fromkeys(j for i in rests for j in by_id[i].superseded_by
                                 if j in cited and j not in rests))
    quoted = quoted_records(question, hits)
    why = ECHO if echoes(claim, asked) else objection(
        question, claim, cited, rests, quoted, hits, choices is not None, around)
    if why is not None:
        closest = extractive_choice(choices, hits, embed)
        if choices is not None and choice is not None and cited and (
                choice in best_held(choices, [by_id[i] for i in cited])
                or choice == closest[0]):
            # no claim of its own that stands, but a letter the records it cites favour
            # over the other options, or the option closest in meaning to one of the best
            # records: the answer is that option, resting on the cited record stating most
            # of it
            option = stated(choices[choice])
            holding = sorted(cited, key=lambda i: -len(option & stated(with_time(by_id[i]))))
            return Draft(f"{choice}. {choices[choice]}", True, tuple(holding[:1]),
                         completion.usage, choice, "llm")
        # an answer that does not stand does not pick the letter either
        return _fallback(question, hits, choices, embed, completion.usage,
                         Rejected(text, why, choice), quoted, closest)
    rejected = None
    if choices is not None and choice is None:
        # an answer that stands but names no letter of the options: the extractive one
        choice = extractive_choice(choices, hits, embed)[0]
    elif choices is not None and choice not in best_held(choices,
                                                         [by_id[i] for i in rests]):
        # a letter whose option the cited records do not favour is a guess
        rejected = Rejected(text, OPTION_NOT_STATED, choice)
        choice = extractive_choice(choices, hits, embed)[0]
    # like the extractive answer, say what the report it rests on replaced
    note, old = replaces(question, [by_id[i] for i in rests], hits)
    return Draft(text + note, True, (*rests, *(i for i in old if i not in rests)),
                 completion.usage, choice, "llm", rejected)


def _fallback(question: str, hits: tuple[Hit, ...], choices: Mapping[str, str] | None,
              embed: Embed | None, usage: Usage, rejected: Rejected,
              quoted: list[Hit] | None = None,
              closest: tuple[str | None, int | None] | None = None) -> Draft:
    """The extractive answer in place of the model's ``rejected`` one (``quoted``: the
    records :func:`quoted_records` picked, ``closest``: the option
    :func:`extractive_choice` picked, when already picked)."""
    text, known, ids = extractive_answer(question, hits, quoted)
    letter, decided = closest or extractive_choice(choices, hits, embed)
    return Draft(text, known, ids or _cited(decided), usage, letter, "fallback", rejected)


def _without_time(question: str, found: TimeRange | None) -> str:
    """``question`` without the time phrase the planner reads in it (``found``: "Around
    Monday 17 February, when does Ben land?"; retrieval filters by that time): its words
    would favour a record that merely names the weekday."""
    for phrase in found.phrases if found is not None else ():
        # and the comma after a leading phrase, which would read as another part asked
        # ("Around Monday 17 February, when …": :func:`parts_asked`)
        question = re.sub(re.escape(phrase) + r"\s*[,，]?", " ", question)
    return question


AROUND_DAYS = 7
"""The longest span of days a question names that still points at one moment
(:func:`_asked_time`): "around Tuesday 28 January" is read as the three days either side
of it; "in January" points at none."""


def _asked_time(found: TimeRange | None, now: datetime | None) -> float | None:
    """The middle of the days a question names (``found``; epoch seconds), when they span
    at most :data:`AROUND_DAYS`; else None."""
    if found is None or now is None or \
            (found.end - found.start).total_seconds() > AROUND_DAYS * DAY:
        return None
    return (to_epoch(in_zone_of(found.start, now)) + to_epoch(in_zone_of(found.end, now))) / 2.0


def _cited(event_id: int | None) -> tuple[int, ...]:
    """The record a letter was picked from, cited when the answer quotes none."""
    return () if event_id is None else (event_id,)

