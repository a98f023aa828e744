"""LLM-assisted planning (tokens counted under ``plan``): the model's rewrites and
constraints are added to the rule-based plan, never replacing what the rules found.
Rewrites are merged by :func:`merge_rewrites` (question first, then the two sources in turn).

Constraints the model proposes carry confidence 0.6 (applied) only when the rules found
none of that kind; a time range must parse and lie before ``now``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, time

from ..errors import LLMError
from ..llm.base import LLM
from ..prompts import plan as prompt
from ..timeutil import in_zone_of, parse_ts, to_epoch
from .planner import Constraint, Plan

log = logging.getLogger("memfuse_lite.retrieve")
LLM_CONFIDENCE = 0.6


def merge_rewrites(rules: Sequence[str], llm: Sequence[str], limit: int) -> tuple[str, ...]:
    """The question (the rules' first rewrite) first, then the model's and the rules' other
    rewrites taken in turn, the model's first; duplicates (ignoring case) dropped, at most
    ``limit``. Each source keeps a place whenever ``limit`` allows it."""
    out: list[str] = []
    seen: set[str] = set()

    def take(text: str) -> None:
        key = " ".join(text.lower().split())
        if key and key not in seen and len(out) < limit:
            seen.add(key)
            out.append(text)

    if rules:
        take(rules[0])
    rest = list(rules[1:])
    for i in range(max(len(llm), len(rest))):
        if i < len(llm):
            take(llm[i])
        if i < len(rest):
            take(rest[i])
    return tuple(out)


def refine_plan(plan: Plan, llm: LLM, now: datetime | None, max_rewrites: int = 3) -> Plan:
    """The rule-based plan with the model's additions."""
    today = (now or datetime.now()).date().isoformat()
    try:
        value, _ = llm.complete_json(prompt.messages(plan.question, today), prompt.SCHEMA,
                                     max_tokens=120, operation="plan")
    except LLMError as exc:
        log.warning("LLM planning failed, using the rule-based plan: %s", exc)
        return plan
    proposed = [rw.strip() for rw in value.get("rewrites") or []
                if isinstance(rw, str) and rw.strip()]
    rewrites = merge_rewrites(plan.rewrites, proposed, max_rewrites)
    kinds = {c.kind for c in plan.constraints}
    extra: list[Constraint] = []
    if "time" not in kinds and now is not None:
        try:
            start = in_zone_of(parse_ts(value.get("start") or ""), now)
            end = in_zone_of(parse_ts(value.get("end") or value.get("start") or ""), now)
            if start <= end and start <= now:
                first = in_zone_of(datetime.combine(start.date(), time(0)), now)
                last = in_zone_of(datetime.combine(end.date(), time(23, 59, 59)), now)
                extra.append(Constraint("time", (to_epoch(first), to_epoch(last)),
                                        LLM_CONFIDENCE, "llm"))
        except ValueError:
            pass
    source = value.get("source")
    if "source" not in kinds and source in prompt.SOURCES:
        extra.append(Constraint("source", source, LLM_CONFIDENCE - 0.2, "llm"))
    for person in value.get("people") or []:
        if isinstance(person, str) and person.strip():
            extra.append(Constraint("contact", person.strip(), 0.5, "llm"))
    return replace(plan, rewrites=rewrites,
                   constraints=plan.constraints + tuple(extra))
