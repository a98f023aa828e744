"""Grounded answers: the LLM reads the final context and cites event ids; without an LLM,
a deterministic extractive answer quotes the best current record."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from .errors import LLMError
from .fusion.features import entities_of
from .llm.base import LLM, Usage
from .prompts import answer as prompt
from .records import FusedMemory, Hit, Provenance
from .retrieve.agentic import format_evidence
from .retrieve.planner import keywords

log = logging.getLogger("memfuse_lite.answer")
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


@dataclass(frozen=True, slots=True)
class Draft:
    """What the answer step produced from one context."""

    text: str
    known: bool
    cited: tuple[int, ...]
    usage: Usage
    choice: str | None = None


def compose(question: str, hits: tuple[Hit, ...], fused: tuple[FusedMemory, ...],
            now: datetime | None, llm: LLM | None,
            choices: Mapping[str, str] | None = None) -> Draft:
    """The answer to ``question`` from the final context: written by the LLM when one is
    given, else extractive. With ``choices`` (letter → option text) the answer also picks
    one letter: the LLM's output is constrained to the letters; without an LLM the option
    sharing the most content words with the evidence is picked (None on a tie at zero)."""
    if not hits:
        return Draft(DONT_KNOW, False, (), Usage(), _extractive_choice(choices, hits))
    if llm is not None:
        evidence = format_evidence(hits) + "".join(
            f"\n[fused {f.id}] {f.summary[:140]}" for f in fused[:2])
        try:
            value, completion = llm.complete_json(
                prompt.messages(question, now.isoformat(timespec="minutes") if now else "unknown",
                                evidence, choices),
                prompt.schema(choices), max_tokens=200, operation="answer")
        except LLMError as exc:
            log.warning("LLM answer failed, answering extractively: %s", exc)
        else:
            ids = {h.event_id for h in hits}
            cited = tuple(dict.fromkeys(int(c) for c in value.get("citations", [])
                                        if isinstance(c, int) and c in ids))
            text = str(value.get("answer") or "").strip()
            choice = value.get("choice") if choices and value.get("choice") in choices else None
            # An answer counts only when the model says it is supported, cites evidence
            # it was given and says something; anything else is the documented refusal.
            if not (value.get("known") is True and cited and text):
                return Draft(DONT_KNOW, False, (), completion.usage, choice)
            return Draft(text, True, cited, completion.usage, choice)
    text, known, cited = _extractive(question, hits)
    return Draft(text, known, cited, Usage(), _extractive_choice(choices, hits))


def _extractive(question: str, hits: tuple[Hit, ...]) -> tuple[str, bool, tuple[int, ...]]:
    words = set(keywords(question).split())
    current = [h for h in hits if not h.superseded_by]
    top = current[0] if current else hits[0]
    lowered = top.text.lower()
    matched = sum(1 for w in words if w in lowered or w in set(entities_of(top.text)))
    if words and matched < max(1, (len(words) + 1) // 2):
        return DONT_KNOW, False, ()
    p = top.provenance[0]
    text = f"According to {p.source} from {p.user} ({p.ts[:16]}): {top.text.strip()}"
    cited = [top.event_id]
    replaced = [h for h in hits if top.event_id in h.superseded_by]
    if replaced:
        old = replaced[0]
        text += f" — this replaces an earlier report: \"{old.text.strip()[:160]}\""
        cited.append(old.event_id)
    return text, True, tuple(cited)


def _extractive_choice(choices: Mapping[str, str] | None, hits: tuple[Hit, ...],
                       top: int = 5) -> str | None:
    """The option whose content words occur most in the best evidence (ranked higher
    counts more); None when no option shares a word with it."""
    if not choices:
        return None
    evidence = [set(entities_of(h.text)) | set(h.text.lower().split()) for h in hits[:top]]
    best, best_score = None, 0.0
    for letter, text in choices.items():
        words = set(keywords(text).split())
        score = sum(len(words & ev) / (rank + 1) for rank, ev in enumerate(evidence)) / \
            max(1, len(words)) ** 0.5
        if score > best_score:
            best, best_score = letter, score
    return best
