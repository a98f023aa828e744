"""The typed edges of the causal fusion graph that an event gets as it is fused: semantic
(alike wording), same-as (another app or person reports the same happening),
conflicts-with and supersedes (reports of one episode that disagree; the later restates),
causal (what it names as its cause, the news that announced the change it reports, the
order within its episode) and related (likely the same episode, left in another memory).
Each is decided from the candidates fusion scored; nothing here reads the store."""

from __future__ import annotations

from collections.abc import Sequence

from ..config import FusionConfig
from ..records import Edge
from ..text.features import cause_clause, entities_of, lookalikes
from ..text.timeexpr import resolve_time
from ..timeutil import to_epoch
from .graph import ANNOUNCED_CHANGE, STATED_CAUSE
from .model import DAY, EventView
from .plans import about, changes, names_conflict, overlap, overlaps, restates, scheduled
from .rules import changes_plan, time_factor
from .terms import event_terms

Scored = Sequence[tuple[tuple[float, float], EventView]]
"""Candidates with their (score, cosine), best first."""


def episode_edges(e: EventView, scored: Scored, fused_of: dict[int, int], target: int,
                  cause: tuple[EventView, str] | None, cfg: FusionConfig) -> list[Edge]:
    """Semantic, same-as, conflict, restatement and causal edges of ``e`` (``cause``:
    what caused it and why that is known, :data:`STATED_CAUSE` or
    :data:`ANNOUNCED_CHANGE`); ``scored``: its candidates, best first; ``target``: the
    memory it joined, whose members in ``fused_of`` are its mates."""
    edges: list[Edge] = []
    mates = [(s, c) for s, c in scored if fused_of.get(c.id) == target]
    for (_, cos), c in scored:
        # Alike wording about different people or organisations is a look-alike,
        # not a related happening: no semantic edge for retrieval to follow.
        if cos >= cfg.semantic_edge_cos and not names_conflict(e.names, c.names):
            a, b = sorted((e.id, c.id))
            edges.append(Edge("semantic", a, b, round(cos, 4), "cosine"))
    for (score, cos), c in mates:
        conflict = conflict_of(e, c)
        if (not conflict and (e.source != c.source or e.user != c.user)
                and cos >= cfg.same_as_cos and time_factor(e, c, cfg) >= 0.9
                and overlap(e.people, c.people) >= 0.5):
            edges.append(Edge("same_as", e.id, c.id, round(score, 4),
                              f"{c.source}/{c.user} reports the same happening"))
        if conflict:
            newer, older = (e, c) if (e.ts, e.id) >= (c.ts, c.id) else (c, e)
            edges.append(Edge("conflicts_with", newer.id, older.id, 1.0, conflict))
            if restates(newer, older):
                edges.append(Edge("supersedes", newer.id, older.id, 1.0,
                                  f"later report ({conflict})"))
    # the member recorded before it that the event matches best (a message about
    # Friday's appointment, sent on Monday, precedes Tuesday's call about it, whatever
    # the times they refer to; the reply follows the message it answers, not whatever
    # else the episode holds from in between): ``mates`` is in score order
    prev = next((c for _, c in mates if c.ts <= e.ts), None)
    if cause is not None:
        edges.append(Edge("causal", cause[0].id, e.id, 1.0, cause[1]))
    # one edge from a member, the stronger
    if prev is not None and (cause is None or prev is not cause[0]):
        edges.append(Edge("causal", prev.id, e.id, cfg.order_edge_weight,
                          "order within the episode"))
    return edges


def related_edges(e: EventView, scored: Scored, fused_of: dict[int, int], target: int,
                  cfg: FusionConfig) -> list[Edge]:
    """``related`` edges to the most probable candidates that fusion left in other
    memories (``scored``: the pair model's probabilities, best first): a memory joins
    only where the pair model is sure enough to keep memories precise, and the likely
    mates below that bar are still worth a hop at retrieval (the call log of the
    evening a calendar entry names; the note that follows up on a message)."""
    edges: list[Edge] = []
    for (probability, _), c in scored:
        if len(edges) >= cfg.links_per_event or probability < cfg.link_probability:
            break
        if fused_of.get(c.id) != target:
            edges.append(Edge("related", c.id, e.id, round(probability, 4),
                              "likely the same episode"))
    return edges


def why(e: EventView, candidates: Sequence[EventView], replaced: Sequence[EventView]
        ) -> tuple[EventView, str] | None:
    """What caused ``e`` and how that is known: the record it names as its cause
    (:data:`STATED_CAUSE`), else, when it replaced a plan, the news that announced the
    change (:data:`ANNOUNCED_CHANGE`)."""
    cause = stated_cause(e, candidates)
    if cause is not None:
        return cause, STATED_CAUSE
    news = announcer(e, replaced, candidates)
    return None if news is None else (news, ANNOUNCED_CHANGE)


def stated_cause(e: EventView, candidates: Sequence[EventView]) -> EventView | None:
    """The record ``e`` names as its cause ("X, so …", "… because X"): the latest
    candidate recorded before it that holds two of the cause clause's key words (the
    one, if the clause has one), unless it is a plan ``e`` moves or cancels (what ``e``
    changes, not why) or a look-alike report from ``e``'s own app (the same kind of
    happening on another day), and on the day the clause places the cause, if it
    names a past one ("due to the rain yesterday"); a record by another person whom
    ``e`` names comes before the others ("Ana is stuck because the flight was
    delayed"). The latest, not the one sharing most: "my flight is delayed, … so I
    can't make dinner" shares more words with last week's delay message and with the
    meeting it moves than with the airline's notice of an hour ago."""
    clause = cause_clause(e.text)
    if not clause:
        return None
    words = set(entities_of(clause))
    if not words:
        return None
    need = min(2, len(words))
    own = event_terms(e.text)
    said = set(entities_of(e.text)) | e.names
    # a cause the clause places on a past day ("the rain yesterday") happened then
    span = resolve_time(clause, e.local(e.ts))
    day = (to_epoch(span[0]), to_epoch(span[1]) + 1.0) if span else None
    if day is not None and day[1] > e.ts - (e.ts + e.offset) % DAY:
        day = None  # today or later: no restriction
    best: tuple[tuple[bool, float, int], EventView] | None = None
    for c in candidates:
        key = (c.user != e.user and c.user.lower() in said, c.ts, c.id)
        if (c.ts > e.ts or c.when > e.when + DAY or changes_plan(e, c)
                or (day is not None and not day[0] <= c.when < day[1])
                or (best is not None and key < best[0])
                or len(words & (c.entities | set(entities_of(c.text)))) < need):
            continue
        if c.source == e.source and lookalikes(own, event_terms(c.text)):
            continue
        best = (key, c)
    return best[1] if best else None


def announcer(e: EventView, replaced: Sequence[EventView], candidates: Sequence[EventView]
              ) -> EventView | None:
    """The news among ``e``'s candidates that announced the change ``e`` reports to the
    plan it replaced (``replaced``, the plan first): the latest recorded after the plan and
    before ``e`` that reports a change itself, at the plan's time, naming two of the things
    the plan names (the clinic's "Dr. Patel broke a wrist, your appointment on Thursday has
    to be rebooked" before "the clinic rang: my appointment is now Saturday"), or None."""
    if not replaced:
        return None
    plan = replaced[0]
    news = [m for m in candidates if m.id != e.id and plan.ts < m.ts
            and (m.ts, m.id) < (e.ts, e.id) and m.start is not None and changes(m)
            and overlaps(m, plan) and len(about(m) & about(plan)) >= 2]
    return max(news, key=lambda m: (m.ts, m.id), default=None)


def conflict_of(a: EventView, b: EventView) -> str | None:
    """Why two reports of one episode disagree (time or status), or None."""
    if a.cancel != b.cancel and scheduled(b if a.cancel else a):
        return "status: cancelled"
    if scheduled(a) and scheduled(b) and not overlaps(a, b):
        assert a.start is not None and b.start is not None
        fmt = "%a %H:%M"
        return (f"time: {a.local(a.start).strftime(fmt)} vs "
                f"{b.local(b.start).strftime(fmt)}")
    return None
