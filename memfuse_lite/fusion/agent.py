"""The Fusion Agent: online clustering of atomic events into fused memories, and the
typed edges of the causal fusion graph.

For each new event, in ingestion order, candidates are the accumulation zone (the last
``zone_size`` processed events), the events already handled in this batch and the
event's nearest neighbours in the dense index, all within ``window_days``. Each
candidate gets a score from embedding similarity, event-time agreement, shared actors,
entities and place, and source complementarity; the best candidate's fused memory is
joined when the score clears ``join_threshold`` (an LLM may arbitrate the ambiguous band),
otherwise a new fused memory starts. Edges follow from the same comparisons
(:mod:`.edges`); the rule score is in :mod:`.rules`.
"""

from __future__ import annotations

import heapq
import json
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import apsw
import numpy as np

from ..config import FusionConfig
from ..once import ReadOnce, Recent
from ..records import Edge
from ..store import fused as fused_sql
from ..text.features import name_tokens
from .edges import episode_edges, related_edges, why
from .model import DAY, EventView, last_views, load_views
from .pairs import NewEvent, PairModel, candidate_features, pair_features
from .plans import changes, names_conflict, replaced_plans
from .rules import changes_plan, pair_score, time_factor
from .summary import refresh_summary
from .terms import Postings, event_terms, terms_of_events
from .terms import refresh as refresh_terms
from .timeline import Timeline

log = logging.getLogger("memfuse_lite.fusion")

Neighbours = Callable[[np.ndarray, int, int, int], list[tuple[int, float]]]
"""(vector, k, ids below, HNSW search breadth) → nearest (id, cosine): ``search_all``."""
Arbiter = Callable[[EventView, Sequence[EventView]], bool]


MIN_POOL = 5
"""With fewer candidates than this the pair model's candidate-relative features mean
little (nothing to compare with): the rule score decides."""


@dataclass(frozen=True)
class Bands:
    """Where a score joins a memory, asks the LLM arbiter, or bridges two memories."""

    join: float
    ambiguous: float
    bridge: float
    learned: bool = False
    """Scores are the pair model's probabilities (else rule scores)."""


@dataclass
class FusionChange:
    """What fusion changed in SQLite, for the in-memory graph, the zone and the text
    index to follow once the transaction has committed (see ``FusionRuntime.apply``):
    a fused batch, a rebuild step or a forget."""

    members: list[tuple[int, int]] = field(default_factory=list)  # (event, fused)
    edges: list[Edge] = field(default_factory=list)
    touched: set[int] = field(default_factory=set)
    moved: list[tuple[int, int, int]] = field(default_factory=list)  # (event, from, to)
    removed: set[int] = field(default_factory=set)
    events_removed: tuple[int, ...] = ()
    fused_docs: list[tuple[int, str, float]] = field(default_factory=list)
    zone: list[EventView] | None = None
    """The accumulation zone after a fused batch (None: reload it from the store)."""
    llm_calls: int = 0


class FusionAgent:
    """Keeps the accumulation zone; fuses each batch inside the batch's transaction."""

    def __init__(self, cfg: FusionConfig, neighbours: Neighbours,
                 arbiter: Arbiter | None = None, model: PairModel | None = None) -> None:
        """``model`` replaces the configured pair model (learned scorer only)."""
        self.cfg = cfg
        self.neighbours = neighbours
        self.arbiter = arbiter
        self.zone: deque[EventView] = deque(maxlen=cfg.zone_size)
        # stored events' views and terms, kept between batches (see _begin)
        self._recent_views: Recent[int, EventView] = Recent(cfg.recent_events)
        self._recent_terms: Recent[int, frozenset[str]] = Recent(cfg.recent_events)
        self._stored_views: ReadOnce[EventView] = ReadOnce(lambda ids: {})
        self._stored_terms: ReadOnce[frozenset[str]] = ReadOnce(lambda ids: {})
        self.timeline = Timeline()
        """Every stored event's times (candidates around a moment, in the window, plans)."""
        self.postings = Postings()
        """The first events holding each term (document frequencies, rare-word matches)."""
        self._batch_terms: dict[int, frozenset[str]] = {}
        """Terms of the events fused in this transaction so far (see _begin)."""
        self._terms_current = False
        """Whether the stored terms were made current (:meth:`_terms`, once per agent)."""
        if cfg.scorer == "learned" and model is None:
            model = PairModel.load(cfg.pair_model)
        self.model = model if cfg.scorer == "learned" else None
        if self.model is not None:
            self.model.check(cfg)
        self.rule_bands = Bands(cfg.join_threshold, cfg.ambiguous_threshold, cfg.join_threshold)
        self.model_bands: Bands | None = None
        if self.model is not None:
            join = cfg.join_probability or self.model.threshold
            bridge = cfg.bridge_probability or self.model.bridge
            self.model_bands = Bands(join, max(0.0, join - 0.2), max(join, bridge),
                                     learned=True)

    def load_zone(self, db: apsw.Connection) -> None:
        """Rebuild the zone from the store (at open, after events were deleted)."""
        self.reset()
        self.zone = deque(last_views(db, self.cfg.zone_size), maxlen=self.cfg.zone_size)

    def reset(self) -> None:
        """Forget the zone and the stored events read so far (their rows changed)."""
        self.zone.clear()
        self._recent_views.clear()
        self.timeline.clear()
        self._recent_terms.clear()
        self.postings.clear()

    def fuse(self, db: apsw.Connection, events: Sequence[EventView]) -> FusionChange:
        """Assign each event to a fused memory and add edges; writes through ``db``."""
        out = FusionChange()
        self._begin(db, events)
        zone = deque(self.zone, maxlen=self.cfg.zone_size)
        batch = _Pending(events)
        assigned: dict[int, int] = {}
        for e in events:
            terms, df = self._terms(db, e)
            candidates = self._candidates(db, e, zone, batch, df)
            bands = self._bands(len(candidates))
            fused_of = dict(assigned)
            fused_of.update(fused_sql.fused_of(
                db, [c.id for c in candidates if c.id not in assigned]))
            scored = _best_first(self._scores(db, e, candidates, terms, df, bands.learned),
                                 candidates)
            target = self._decide(e, scored, fused_of, bands, out)
            if target is not None and _another_of_its_kind(db, e, target, scored, fused_of):
                target = None
            if target is None:
                target = self._thread_target(db, e, fused_of)
            if target is not None:
                target = self._merge_bridged(db, e, scored, fused_of, assigned, target,
                                             bands, out)
            if target is None or fused_sql.size(db, target) >= self.cfg.max_members:
                target = fused_sql.new_fused(db, continues=target)
            fused_sql.add_member(db, target, e.id)
            assigned[e.id] = target
            out.members.append((e.id, target))
            fused_of[e.id] = target
            out.touched.add(target)
            replaced = self._replaced(db, e, candidates, fused_of, target)
            out.edges.extend(episode_edges(e, scored, fused_of, target,
                                           why(e, candidates, replaced), self.cfg))
            if self.model is not None and self.cfg.links_per_event:
                # where the rules decided the join, link by the pair model's probabilities
                probable = scored if bands.learned else _best_first(
                    self._scores(db, e, candidates, terms, df, learned=True), candidates)
                out.edges.extend(related_edges(e, probable, fused_of, target, self.cfg))
            out.edges.extend(Edge("supersedes", e.id, plan.id, 1.0,
                                  "later report changes the plan") for plan in replaced)
            zone.append(e)
            batch.add(e)
        fused_sql.insert_edges(db, out.edges)
        self.postings.flush(db)
        for fid in sorted(out.touched - out.removed):
            text, start = refresh_summary(db, fid)
            out.fused_docs.append((fid, text, start))
        out.zone = list(zone)
        return out

    def pairs(self, db: apsw.Connection, e: EventView, zone: Sequence[EventView]
              ) -> list[tuple[EventView, list[float]]]:
        """The learned scorer's candidates for ``e`` with their feature vectors, as fusion
        sees them (the fitting script reads them through this; stores ``e``'s terms)."""
        self._begin(db, [e])
        terms, df = self._terms(db, e)
        candidates = self._candidates(db, e, deque(zone, maxlen=self.cfg.zone_size),
                                      _Pending(()), df)
        self.postings.flush(db)
        return list(zip(candidates, self._features(db, e, candidates, terms, df).tolist(),
                        strict=True))

    def _begin(self, db: apsw.Connection, events: Sequence[EventView]) -> None:
        """Start fusing ``events`` (inserted, not committed): read stored candidates' views
        and terms through the recent ones from here on, and bring the timeline and the
        postings to what is stored below the first of them. Stored events do not change
        while the memory is open, except when deleted or renumbered (then :meth:`reset`
        runs); events from the first on are this batch's, whose ids a rolled-back
        transaction gives out again: those are never kept beyond the batch (their terms,
        worked out as each is fused, are held until the next)."""
        first = min((e.id for e in events), default=0)

        def committed(i: int) -> bool:
            return i < first

        self._stored_views = ReadOnce(lambda ids: load_views(db, ids), keep=committed,
                                      memo=self._recent_views)
        self._stored_terms = ReadOnce(lambda ids: terms_of_events(db, ids), keep=committed,
                                      memo=self._recent_terms)
        self._batch_terms = {}
        self.postings.begin(first)
        self.timeline.begin(db, events)

    def _terms(self, db: apsw.Connection, e: EventView
               ) -> tuple[frozenset[str], dict[str, int]]:
        """The learned scorer's view of ``e``'s words: its terms (stored for later events)
        and how many earlier events hold each; nothing for the rule scorer."""
        if self.model is None:
            return frozenset(), {}
        if not self._terms_current:  # at the first event fused, not when a memory opens:
            refresh_terms(db)  # a search never waits for it
            self._terms_current = True
            self.postings.clear()
        terms = event_terms(e.text)
        self.postings.add(db, e.id, terms)
        self._batch_terms[e.id] = terms
        return terms, self.postings.frequencies(db, terms, e.id)

    def _features(self, db: apsw.Connection, e: EventView, candidates: Sequence[EventView],
                  terms: frozenset[str], df: dict[str, int],
                  rules: Sequence[tuple[float, float]] | None = None) -> np.ndarray:
        """Feature rows of ``e``'s candidates (``rules``: their (rule score without the
        cosine, cosine))."""
        batch = self._batch_terms
        theirs = {**self._stored_terms.get(c.id for c in candidates if c.id not in batch),
                  **{c.id: batch[c.id] for c in candidates if c.id in batch}}
        if rules is None:
            rules = [pair_score(e, c, self.cfg, cosine=False) for c in candidates]
        new = NewEvent.of(e, df)
        return candidate_features([pair_features(new, c, theirs[c.id], rule, cos)
                                   for c, (rule, cos) in zip(candidates, rules, strict=True)])

    def _bands(self, candidates: int) -> Bands:
        """The pair model's thresholds, or the rules' where there is no model or too few
        candidates for its candidate-relative features (a young or sparse memory)."""
        if self.model_bands is None or candidates < MIN_POOL:
            return self.rule_bands
        return self.model_bands

    def _scores(self, db: apsw.Connection, e: EventView, candidates: Sequence[EventView],
                terms: frozenset[str], df: dict[str, int], learned: bool
                ) -> list[tuple[float, float]]:
        """(score, cosine) of each candidate: the rule score, or (``learned``) the pair
        model's probability of the same episode (which reads the rule score, without its
        cosine, as one of its features: what the rules know of reschedules and updates).
        Within one app, times the rules rule out (two reported schedules on different
        days, no change reported) rule out the model's join too: alike messages of one app
        on different days are the same kind of happening again (the dinner cancelled on
        Friday and on Monday). Across apps the model decides: times read from free text
        are less sure, and one happening is planned in one app for a day another app's
        record is not about (on LifeBench, vetoing those too cost co-location 0.007)."""
        if self.model is None or not learned:
            return [pair_score(e, c, self.cfg) for c in candidates]
        times = [time_factor(e, c, self.cfg) for c in candidates]
        rules = [pair_score(e, c, self.cfg, cosine=False, known_time=t)
                 for c, t in zip(candidates, times, strict=True)]
        features = self._features(db, e, candidates, terms, df, rules)
        return [(p if c.source != e.source or t > 0 else 0.0, cos)
                for p, (_, cos), c, t in zip(self.model.probabilities(features).tolist(), rules,
                                             candidates, times, strict=True)]

    def adopt_zone(self, zone: Sequence[EventView]) -> None:
        """Adopt a batch's zone once its transaction has committed."""
        self.zone = deque(zone, maxlen=self.cfg.zone_size)

    # -- steps ----------------------------------------------------------------------

    def _merge_bridged(self, db: apsw.Connection, e: EventView,
                       scored: list[tuple[tuple[float, float], EventView]],
                       fused_of: dict[int, int], assigned: dict[int, int], target: int,
                       bands: Bands, out: FusionChange) -> int:
        """When the new event clearly belongs with several fused memories, it bridges
        them: merge the others into ``target`` while the result stays within
        ``max_members`` (e.g. the clinic's call and the calendar entry, joined by the chat
        that mentions both; with the pair model, also the plans the event moves or cancels).
        Memories whose scored members' times rule each other out (two evenings' dinners,
        both cancelled) stay apart, whatever the event shares with both."""
        others = {fused_of[c.id] for (score, _), c in scored
                  if c.id in fused_of and (score >= bands.bridge or (
                      bands.learned and changes_plan(e, c)))} - {target}
        size = fused_sql.size(db, target)
        for other in sorted(others):
            other_size = fused_sql.size(db, other)
            if size + other_size + 1 > self.cfg.max_members or names_conflict(
                    _cluster_names(db, target), _cluster_names(db, other)):
                continue
            if any(time_factor(a, b, self.cfg) <= 0
                   for _, a in scored if fused_of.get(a.id) == target
                   for _, b in scored if fused_of.get(b.id) == other):
                continue
            for eid in fused_sql.merge_into(db, target, other):
                fused_of[eid] = target
                if eid in assigned:
                    assigned[eid] = target
                out.moved.append((eid, other, target))
            out.touched.discard(other)
            out.removed.add(other)
            size += other_size
        return target

    def _candidates(self, db: apsw.Connection, e: EventView, zone: deque[EventView],
                    batch: _Pending, df: dict[str, int]) -> list[EventView]:
        seen = {c.id: c for c in zone if c.id != e.id}
        near = [i for i in self._nearest(e, batch) if i not in seen]
        # Apps often sync in bulk, one app at a time: the zone then holds one source only
        # and the nearest texts share its format. Events recorded around the same time
        # bring in the other sources' fragments.
        near += [i for i in self.timeline.nearest(e.ts, e.id, self.cfg.time_neighbours)
                 if i not in seen and i not in near]
        window = self.cfg.window_days * DAY
        if self.model is not None:
            # Those recorded around the time the event refers to (the photo taken at the
            # calendar entry's hour), and those sharing its rarest words.
            if e.start is not None:
                near += [i for i in self.timeline.nearest(e.start, e.id,
                                                          self.cfg.time_neighbours)
                         if i not in seen and i not in near]
            rare = [i for i, _ in self.postings.rare_matches(db, e.id, df,
                                                              4 * self.cfg.rare_neighbours)
                    if i not in seen and i not in near]
            close = self._within(e, rare, window)[: self.cfg.rare_neighbours]
        else:
            close = []
        # the nearest texts are often from other weeks: their views are not needed
        pending = batch.views
        ids = [*close, *self._within(e, [i for i in near if i not in pending], window),
               *(i for i in near if i in pending)]
        seen.update(sorted({**self._stored_views.get(i for i in ids if i not in pending),
                            **{i: pending[i] for i in ids if i in pending}}.items()))  # by id
        return [c for c in seen.values() if abs(c.when - e.when) <= window
                or abs(c.ts - e.ts) <= window]

    def _nearest(self, e: EventView, batch: _Pending) -> list[int]:
        """The ``neighbours`` earlier events most similar to ``e``: the dense index's,
        and this batch's (not indexed until it commits) as if they were, so that what is
        found does not depend on how observations were batched."""
        k = self.cfg.neighbours
        found = dict(self.neighbours(e.vec, k, e.id, self.cfg.neighbour_ef))
        for i, sim in batch.similarities(e.vec):
            if i != e.id:
                found.setdefault(i, sim)
        return [i for i, _ in heapq.nsmallest(k, found.items(), key=lambda ic: (-ic[1], ic[0]))]

    def _within(self, e: EventView, ids: Sequence[int], window: float) -> list[int]:
        """Those of the stored events ``ids`` recorded, or happening, within ``window``
        seconds of ``e`` (in the order given)."""
        return self.timeline.within(ids, e.ts, e.when, window)

    def _decide(self, e: EventView, scored: list[tuple[tuple[float, float], EventView]],
                fused_of: dict[int, int], bands: Bands, out: FusionChange) -> int | None:
        if not scored:
            return None
        (score, _), best = scored[0]
        if bands.learned and score < bands.join:
            # A report that moves or cancels a plan belongs with the plan, however rare
            # such reports were among the episodes the model was fitted on.
            plan = next((c for _, c in scored if changes_plan(e, c) and c.id in fused_of),
                        None)
            if plan is not None:
                return fused_of[plan.id]
        if best.id not in fused_of:
            return None
        if score >= bands.join:
            return fused_of[best.id]
        if score >= bands.ambiguous and self.arbiter is not None:
            out.llm_calls += 1
            peers = [c for (_, c) in scored[:3] if fused_of.get(c.id) == fused_of[best.id]]
            if self.arbiter(e, peers):
                return fused_of[best.id]
        return None

    def _thread_target(self, db: apsw.Connection, e: EventView, fused_of: dict[int, int]
                       ) -> int | None:
        """The memory of ``e``'s :func:`thread_mate`, or None."""
        mate = thread_mate(db, e, self.cfg.thread_minutes)
        if mate is None:
            return None
        if mate not in fused_of:
            fused_of.update(fused_sql.fused_of(db, [mate]))
        return fused_of.get(mate)

    def _replaced(self, db: apsw.Connection, e: EventView, candidates: Sequence[EventView],
                  fused_of: dict[int, int], target: int) -> list[EventView]:
        """The plan ``e``, when it reports a change, changes and that plan's copies
        (:func:`replaced_plans`): what it gets supersedes edges to. A plan is often written
        down days before, in other words than the news that moves it: besides the
        candidates, the earlier events whose event time falls between half a day before
        the report and ``window_days`` after it are considered."""
        if not changes(e):
            return []
        horizon = self.cfg.window_days * DAY
        known = {c.id for c in candidates}
        extra = self._stored_views.get([i for i in self.timeline.plans(
            e.id, e.ts - DAY / 2, e.ts + horizon, written_by=e.ts) if i not in known])
        plans = [*candidates, *(extra[i] for i in sorted(extra))]
        mates = [c for c in candidates if fused_of.get(c.id) == target]
        return replaced_plans(e, plans, horizon, mates)

def thread_mate(db: apsw.Connection, e: EventView, minutes: float) -> int | None:
    """The message of ``e``'s conversation (its user's) recorded closest to it within
    ``minutes`` (then the lower id) among the events fused before it, or None. Looked up
    in the store, where the batch being fused is too: the same whatever the batching, and
    whether or not that message is among ``e``'s candidates."""
    if e.thread is None or not minutes:
        return None
    gap = minutes * 60.0
    row = db.execute(
        "SELECT id FROM events WHERE ts_epoch BETWEEN ? AND ? AND thread = ? AND user = ?"
        " AND id < ? ORDER BY abs(ts_epoch - ?), id LIMIT 1",
        (e.ts - gap, e.ts + gap, e.thread, e.user, e.id, e.ts)).fetchone()
    return None if row is None else int(row[0])


class _Pending:
    """The events of the batch being fused that are done: neither in the dense index nor
    read back from the store yet, so found here (their vectors kept as one matrix)."""

    def __init__(self, events: Sequence[EventView]) -> None:
        dim = len(events[0].vec) if events else 0
        self.views: dict[int, EventView] = {}  # in the order added, as the matrix rows
        self._vectors = np.empty((len(events), dim), dtype=np.float32)

    def add(self, e: EventView) -> None:
        self._vectors[len(self.views)] = e.vec
        self.views[e.id] = e

    def similarities(self, vector: np.ndarray) -> list[tuple[int, float]]:
        """(id, cosine) of each event held against ``vector``."""
        if not self.views:
            return []
        return list(zip(self.views, (self._vectors[: len(self.views)] @ vector).tolist(),
                        strict=True))


def _best_first(scores: Sequence[tuple[float, float]], candidates: Sequence[EventView]
                ) -> list[tuple[tuple[float, float], EventView]]:
    """Candidates with their (score, cosine), highest score first (then cosine, then id)."""
    return sorted(zip(scores, candidates, strict=True),
                  key=lambda sc: (-sc[0][0], -sc[0][1], sc[1].id))


def _another_of_its_kind(db: apsw.Connection, e: EventView, target: int,
                         scored: Sequence[tuple[tuple[float, float], EventView]],
                         fused_of: dict[int, int]) -> bool:
    """Whether memory ``target`` is another happening of the kind ``e`` reports: one of its
    scored members comes from ``e``'s own app, and ``e`` names people or things the memory
    never names. Names tell apart what one app reports alike (the flight-delay message of
    one week and of the next); across apps one happening brings in other people and places
    (the note names the landlord, the message to mother the viewing), so there names veto
    nothing (on LifeBench, 47% of same-episode pairs "conflict" on names)."""
    same_app = any(fused_of.get(c.id) == target and c.source == e.source for _, c in scored)
    return same_app and names_conflict(e.names, _cluster_names(db, target))


def _cluster_names(db: apsw.Connection, fused_id: int) -> frozenset[str]:
    """The proper-name words of a fused memory's members."""
    names: set[str] = set()
    for text, actors in fused_sql.member_texts(db, fused_id):
        names |= name_tokens(text, frozenset(json.loads(actors)))
    return frozenset(names)
