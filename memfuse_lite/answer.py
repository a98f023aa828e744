"""Grounded answers: the LLM reads the final context and cites event ids; without an LLM,
a deterministic extractive answer quotes the best current record."""

from __future__ import annotations

import logging
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


def compose(question: str, hits: tuple[Hit, ...], fused: tuple[FusedMemory, ...],
            now: datetime | None, llm: LLM | None) -> tuple[str, bool, tuple[int, ...], Usage]:
    """(answer text, known, cited event ids, LLM usage) from the final context."""
    if not hits:
        return DONT_KNOW, False, (), Usage()
    if llm is not None:
        evidence = format_evidence(hits) + "".join(
            f"\n[fused {f.id}] {f.summary[:140]}" for f in fused[:2])
        try:
            value, completion = llm.complete_json(
                prompt.messages(question, now.isoformat(timespec="minutes") if now else "unknown",
                                evidence),
                prompt.SCHEMA, max_tokens=200, operation="answer")
            ids = {h.event_id for h in hits}
            cited = tuple(dict.fromkeys(int(c) for c in value.get("citations", [])
                                        if isinstance(c, int) and c in ids))
            known = bool(value.get("known")) and bool(cited)
            text = str(value.get("answer") or "").strip() or DONT_KNOW
            return (text if known or text else DONT_KNOW), known, cited, \
                completion.usage
        except LLMError as exc:
            log.warning("LLM answer failed, answering extractively: %s", exc)
    return _extractive(question, hits)


def _extractive(question: str, hits: tuple[Hit, ...]
                ) -> tuple[str, bool, tuple[int, ...], Usage]:
    words = set(keywords(question).split())
    current = [h for h in hits if not h.superseded_by]
    top = current[0] if current else hits[0]
    lowered = top.text.lower()
    matched = sum(1 for w in words if w in lowered or w in set(entities_of(top.text)))
    if words and matched < max(1, (len(words) + 1) // 2):
        return DONT_KNOW, False, (), Usage()
    p = top.provenance[0]
    text = f"According to {p.source} from {p.user} ({p.ts[:16]}): {top.text.strip()}"
    cited = [top.event_id]
    replaced = [h for h in hits if top.event_id in h.superseded_by]
    if replaced:
        old = replaced[0]
        text += f" — this replaces an earlier report: \"{old.text.strip()[:160]}\""
        cited.append(old.event_id)
    return text, True, tuple(cited), Usage()
