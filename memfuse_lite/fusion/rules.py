"""The rule score of a pair of events: how compatible their times are, whether one reports
a change to the other (a plan), and the hand-weighted sum of what they share. Fusion
decides with it when configured so (``FusionConfig.scorer = "rules"``) or when too few
candidates make the pair model's features meaningful, and the pair model reads it as
one of its features (without the cosine)."""

from __future__ import annotations

from ..config import FusionConfig
from .model import DAY, EventView
from .plans import changes, overlap, scheduled


def time_factor(a: EventView, b: EventView, cfg: FusionConfig) -> float:
    """How compatible two events' times are, 0..1; 0 means never join.

    Two reported schedules are compared directly: overlapping 1.0, the same day at another
    time 0.6 (conflicting reports, or two happenings that day), a day apart only with a
    rescheduling or cancellation cue. Otherwise a happening may be prepared for or
    reported at another time (the clinic's call on Tuesday about Thursday's appointment),
    so the closest of the event and observation times counts.
    """
    if scheduled(a) and scheduled(b):
        assert a.start is not None and b.start is not None
        a0, a1 = a.start, a.end if a.end is not None else a.start
        b0, b1 = b.start, b.end if b.end is not None else b.start
        gap = max(b0 - a1, a0 - b1, 0.0)
        if gap == 0.0:
            return 1.0
        if a.day(a0) == b.day(b0):
            return 0.8 if (a.reschedule or b.reschedule or a.cancel or b.cancel) else 0.6
        if gap <= DAY * 1.5 and (a.reschedule or b.reschedule or a.cancel or b.cancel):
            return 0.8
        return 0.0
    gap = abs(a.ts - b.ts)  # the closest of either's observation and event times
    if a.start is not None:
        gap = min(gap, abs(a.start - b.ts))
        if b.start is not None:
            gap = min(gap, abs(a.start - b.start))
    if b.start is not None:
        gap = min(gap, abs(a.ts - b.start))
    if gap <= DAY / 2:
        return 0.9
    if gap <= DAY:
        return 0.7
    return 0.4 if gap <= cfg.window_days * DAY else 0.0


def updates(a: EventView, b: EventView) -> bool:
    """Whether ``a`` reports a change (moved, cancelled) to the planned happening ``b``:
    a rescheduling or cancellation cue, and ``b`` is a schedule naming what ``a`` names."""
    return (a.reschedule or a.cancel) and scheduled(b) and overlap(a.entities,
                                                                      b.entities) >= 0.5


def pair_score(a: EventView, b: EventView, cfg: FusionConfig, *, cosine: bool = True,
               known_time: float | None = None) -> tuple[float, float]:
    """(score, cosine) of event ``a`` against candidate ``b``.

    ``score = content * time_factor + w_complement * complementarity``, where content
    is the weighted sum of rescaled cosine, shared entities, actors and place (0..1); the
    whole is scaled by ``name_conflict`` when both events name people or organisations
    and share none of them. Without ``cosine`` the score leaves the cosine out: what the
    pair model reads, since a cosine's scale differs between languages (it has the
    candidate-relative cosine features instead). ``known_time``: their :func:`time_factor`,
    when the caller has it already.
    """
    cos = float(a.vec @ b.vec)
    t = time_factor(a, b, cfg) if known_time is None else known_time
    if t <= 0:
        return 0.0, cos
    sim = min(1.0, max(0.0, (cos - cfg.sim_floor) / (cfg.sim_ceil - cfg.sim_floor)))
    place = 1.0 if a.place and b.place and (a.place in b.place or b.place in a.place) else 0.0
    people = max(overlap(a.actors, b.people), overlap(b.actors, a.people))
    similarity = cfg.w_sim * sim if cosine else 0.0
    content = (similarity + cfg.w_entity * overlap(a.entities, b.entities)
               + cfg.w_actor * people + cfg.w_place * place)
    score = content * t + cfg.w_complement * float(a.source != b.source or a.user != b.user)
    if updates(a, b):
        score += cfg.w_update  # an update naming a planned happening ("dinner … cancelled")
    if a.names and b.names and not a.names & b.names:
        score *= cfg.name_conflict  # both name someone or something, and not the same
    return score, cos


def changes_plan(e: EventView, c: EventView) -> bool:
    """Whether ``e`` moves or cancels ``c``, a plan (:func:`updates`) that is not itself a
    report of a change (the same dinner cancelled again on another day is not its plan)."""
    return updates(e, c) and not changes(c)
