"""Answer-time agentic retrieval: 2-5 rounds of read → enough? → follow-up query.

With a local LLM, the model judges sufficiency and writes the follow-up (tokens counted
under ``agentic``). Without one, a deterministic fallback runs the minimum number of
rounds, following up with the people and entities of the best evidence so far
(pseudo-relevance feedback).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..config import RetrievalConfig
from ..errors import LLMError
from ..fusion.summary import without_layout
from ..llm.base import LLM
from ..prompts import agentic as prompt
from ..records import Hit
from ..text.features import entities_of
from .base import Context, Pipeline, Request
from .fused import FusedRetriever
from .planner import Plan, keywords

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger("memfuse_lite.retrieve")
EVIDENCE_CHARS = 140
"""Width of one evidence line's text, a Chinese, Japanese or Korean character counting
twice (a small LLM's tokenizer spends about one token per such character, one per four
or so Latin letters)."""
EVIDENCE_ITEMS = 8  # a phone-class CPU reads ~100 prompt tokens/s: keep prompts ~1k tokens
_WIDE = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def clip(text: str, width: int = EVIDENCE_CHARS) -> str:
    """``text`` on one line, cut at ``width`` (wide characters count twice)."""
    flat = " ".join(text.split())
    used = 0
    for i, ch in enumerate(flat):
        used += 2 if _WIDE.match(ch) else 1
        if used > width:
            return flat[:i]
    return flat


def evidence_line(h: Hit, label: Callable[[int], str | None] = str) -> str:
    """One evidence line: label (the event id unless ``label`` maps event ids otherwise),
    time, source/user, and the clipped text; a superseded record names the labelled
    records that superseded it."""
    p = h.provenance[0] if h.provenance else None
    head = f"[{label(h.event_id)}]" + (f" {p.ts[:16]} {p.source}/{p.user}" if p else "")
    later = [x for x in map(label, h.superseded_by) if x is not None]
    note = (f" (superseded by {', '.join(later)})" if later
            else " (superseded)" if h.superseded_by else "")
    return f"{head}{note}: {clip(h.text)}"


_HEAD = re.compile(r"^\s*(?:\[\d+\]\s*)?\d{4}-\d{2}-\d{2}T\d{2}:\d{2} [^\s/:]+/[^\s:]+"
                   r"(?: \(superseded[^)]*\))?(?::\s*|\s*$)")


def without_head(text: str) -> str:
    """``text`` less the prompt's layout around what a record or a summary says: a
    leading evidence-line header (what :func:`evidence_line` writes before the record's
    text), or a summary's leading days and trailing "(2 reports from calendar, sms; ana,
    ben)". A small model often copies a whole line, or the header alone, into its answer;
    the layout is not something the records say."""
    return without_layout(_HEAD.sub("", text, count=1))


def format_evidence(hits: Sequence[Hit], limit: int = EVIDENCE_ITEMS) -> str:
    """Numbered evidence lines, as the LLM prompts expect them."""
    return "\n".join(evidence_line(h) for h in hits[:limit])


def merge(first: Context, more: Context, k: int, cfg: RetrievalConfig) -> Context:
    """Union of two contexts by best score, fused memories deduplicated, laid out as the
    fused pipeline lays out one context (summaries on top of the k events, or in their
    places under the paper's layout)."""
    best: dict[int, Hit] = {h.event_id: h for h in first.hits}
    for h in more.hits:
        if h.event_id not in best or best[h.event_id].score < h.score:
            best[h.event_id] = h
    fused = list({f.id: f for f in (*first.fused, *more.fused)}.values())
    fused = fused[: cfg.max_fused_summaries]
    slots = k if cfg.summaries_extra else max(1, k - len(fused))
    hits = sorted(best.values(), key=lambda h: (-h.score, h.event_id))[:slots]
    return Context(tuple(hits), tuple(fused), first.plan, first.rounds + more.rounds)


def run(engine: Engine, req: Request) -> Context:
    """Fused retrieval in rounds: after each, the LLM (or the fallback) judges whether
    the evidence suffices and asks a follow-up question."""
    retriever = FusedRetriever(engine)
    cfg = engine.config.retrieval
    question, now, k, viewer = req.query, req.now, req.k, req.viewer
    plan = retriever.plan(question, now)
    ctx = retriever.retrieve(question, viewer=viewer, now=now, k=k, plan=plan)
    asked = {question}
    llm = engine.llms.optional(engine.config.answer_llm)
    while ctx.rounds < cfg.agentic_max_rounds:
        follow = _follow_up(question, ctx, llm, cfg)
        if not follow or follow in asked:
            break
        asked.add(follow)
        more = retriever.retrieve(follow, viewer=viewer, now=now, k=k,
                                  plan=Plan(follow, (follow,), plan.constraints))
        ctx = merge(ctx, more, k, cfg)
    return ctx


def _follow_up(question: str, ctx: Context, llm: LLM | None, cfg: RetrievalConfig
               ) -> str | None:
    if llm is None:
        if ctx.rounds >= cfg.agentic_min_rounds:
            return None
        return _feedback_query(question, ctx)
    try:
        value, _ = llm.complete_json(prompt.messages(question, format_evidence(ctx.hits)),
                                     prompt.SCHEMA, max_tokens=48, operation="agentic")
    except LLMError as exc:
        log.warning("agentic round failed: %s", exc)
        return None if ctx.rounds >= cfg.agentic_min_rounds else \
            _feedback_query(question, ctx)
    if value.get("sufficient") and ctx.rounds >= cfg.agentic_min_rounds:
        return None
    follow = str(value.get("follow_up") or "").strip()
    return follow or (None if ctx.rounds >= cfg.agentic_min_rounds
                      else _feedback_query(question, ctx))


def _feedback_query(question: str, ctx: Context) -> str | None:
    """Pseudo-relevance feedback: the question's keywords and the best evidence's
    people and entities."""
    words = keywords(question).split()
    for h in ctx.hits[:3]:
        for w in entities_of(h.text):
            if w not in words:
                words.append(w)
            if len(words) >= 10:
                break
    query = " ".join(words)
    return query or None


PIPELINE = Pipeline("agentic", run, "fused retrieval in 2-5 rounds steered by the LLM "
                    "(pseudo-relevance feedback without one)", grounded=True)
