"""The ``fused`` pipeline: planner → constrained hybrid seeds → graph expansion → context
grouped under fused memories, with superseded reports marked."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import lru_cache, partial
from typing import TYPE_CHECKING

import numpy as np

from ..fusion.graph import CAUSES, FusionGraph
from ..fusion.terms import terms_of_events
from ..index.base import EVENT, FUSED, DocKind, IndexFilter, TextHit
from ..once import ReadOnce
from ..records import AtomicEvent, FusedMemory, Hit, can_see
from ..sources import profile_of, scheduling_sources
from ..timeutil import parse_ts, to_epoch
from .base import Context, Pipeline, Request
from .expand import expand
from .llm_planner import refine_plan
from .planner import ASKS_WHY, Constraint, Plan, plan_query
from .rank import Candidate, ListPlaces, features, load_rank_model
from .rrf import rrf

if TYPE_CHECKING:
    from ..engine import Engine

Read = Callable[[Iterable[int]], dict[int, AtomicEvent]]
"""Events by id (the ones that exist)."""
Access = Callable[[Iterable[int]], dict[int, tuple[tuple[str, ...] | None, float]]]
"""Event ids → (audience, observation epoch): :meth:`Store.access`, read once."""
OnFeatures = Callable[[list[int], np.ndarray], None]
"""Receives the ranking stage's candidates (ids) and their feature rows
(:func:`~memfuse_lite.retrieve.rank.features`), before they are reordered."""
Cosine = Callable[[Iterable[int]], dict[int, float]]
"""Cosine of events with the question (each read once per search)."""


def _where(constraints: Sequence[Constraint], now: datetime | None) -> IndexFilter | None:
    start = end = None
    users: set[str] = set()
    sources: set[str] = set()
    for c in constraints:
        if c.kind == "time" and isinstance(c.value, tuple):
            start, end = c.value
        elif c.kind == "user":
            users.add(str(c.value))
        elif c.kind == "source":
            sources.add(str(c.value))
    before = to_epoch(now) if now is not None else None
    if start is None and not users and not sources and before is None:
        return None
    return IndexFilter(start=start, end=end, observed_before=before,
                       users=frozenset(users) or None, sources=frozenset(sources) or None,
                       scheduled=scheduling_sources() if start is not None or end is not None
                       else frozenset())


def _authored(plan: Plan, where: IndexFilter | None) -> list[tuple[str, IndexFilter]]:
    """For each user the question names: the question without the name, to be searched
    among that user's own records. People do not name themselves in what they write, so
    the name pulls a plain search towards records that address them ("Ben, can you ...")
    and away from Ben's own "researching adoption agencies"."""
    out = []
    for c in plan.constraints:
        if c.kind != "user" or not isinstance(c.value, str):
            continue
        rest = re.sub(rf"(?<!\w){re.escape(c.phrase)}(?:'s|’s|的)?(?!\w)", " ", plan.question,
                      flags=re.IGNORECASE)
        query = " ".join(rest.split())
        if query:
            base = where or IndexFilter()
            out.append((query, replace(base, users=frozenset({c.value}))))
    return out


def _times(event: AtomicEvent) -> tuple[float, ...]:
    """The times a time constraint may match (as :attr:`IndexFilter.start` reads them):
    the event's time (its start, else when recorded) and, unless its source schedules
    happenings, when it was recorded."""
    when, recorded = _epochs(event.ts, event.event_start)
    return (when,) if profile_of(event.source).schedules else (when, recorded)


@lru_cache(maxsize=65_536)
def _epochs(ts: str, event_start: str | None) -> tuple[float, float]:
    """(its time, when recorded) of an event, as epoch seconds (parsed once)."""
    recorded = to_epoch(parse_ts(ts))
    return (to_epoch(parse_ts(event_start)) if event_start else recorded), recorded


def _matches(event: AtomicEvent, c: Constraint) -> bool:
    if c.kind == "time" and isinstance(c.value, tuple):
        return any(c.value[0] <= t <= c.value[1] for t in _times(event))
    if c.kind == "user":
        return event.user == c.value
    if c.kind == "source":
        return event.source == c.value
    if c.kind == "contact":
        needle = str(c.value).lower()
        return any(needle in a.lower() for a in event.actors) or needle in event.text.lower()
    return False


def _days_off(event: AtomicEvent, window: Constraint) -> float:
    """How many days the nearest of the event's times lies outside a time window."""
    if not isinstance(window.value, tuple):
        return 0.0
    start, end = window.value
    return min(max(0.0, start - t, t - end) for t in _times(event)) / 86_400.0


class FusedRetriever:
    """Fusion-aware retrieval over an engine's indexes and fusion graph."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store = engine.store
        self.cfg = engine.config.retrieval

    def plan(self, question: str, now: datetime | None) -> Plan:
        """The plan for a question (a pass-through plan when the planner is off)."""
        if not self.cfg.use_planner:
            return Plan(question, (question,))
        users, contacts = self.engine.views.people()
        plan = plan_query(question, now, users=users, contacts=contacts)
        llm = self.engine.llms.optional(self.engine.config.plan_llm)
        if llm is not None:
            plan = refine_plan(plan, llm, now, self.cfg.max_rewrites)
        return Plan(plan.question, plan.rewrites[: self.cfg.max_rewrites], plan.constraints)

    def retrieve(self, question: str, *, viewer: str, now: datetime | None, k: int,
                 extra_queries: Sequence[str] = (), plan: Plan | None = None,
                 on_features: OnFeatures | None = None) -> Context:
        """Seeds, expansion, the ranking stage (``use_ranker``) and the grouped final
        context for one question. ``on_features`` receives the ranking stage's candidates
        and features (computed for it even with the stage off)."""
        cfg = self.cfg
        plan = plan or self.plan(question, now)
        applied = plan.applied(cfg.constraint_min_confidence)
        where = _where(applied, now)
        queries = list(dict.fromkeys([*plan.rewrites, *extra_queries]))
        authored = _authored(plan, where) if cfg.author_weight > 0 else []
        dense = by_meaning(queries, question, cfg.dense_phrasings)
        vectors = self.engine.embedder.embed(dense + [q for q, _ in authored], role="query")
        mine = [(q, v, w) for (q, w), v in zip(authored, vectors[len(dense):], strict=True)]
        meant = dict(zip(dense, vectors[: len(dense)], strict=True))
        places: dict[int, ListPlaces] = {}
        with self.engine.lock:
            seeds = self._seeds(queries, meant, viewer, where, authored=mine, places=places)
            if not seeds and where is not None:  # the constraints found nothing: relax them
                seeds = self._seeds(queries, meant, viewer, _where((), now), places=places)
            if not seeds and where is not None:
                seeds = self._seeds(queries, meant, viewer, None, places=places)
            # seeds and the supersede check ask for overlapping events; expansion reaches
            # many that rank below k: those are checked for visibility, not read whole
            read = ReadOnce(self.store.get_events).get
            access = ReadOnce(self.store.access).get
            cosine = ReadOnce(partial(self.engine.dense.similarities, vectors[0])).get
            allowed = self._visible(list(seeds), viewer, now, access)
            seeds = {i: s for i, s in seeds.items() if i in allowed}
            events = read(seeds)
            for c in plan.boosts(cfg.constraint_min_confidence):
                for eid, ev in events.items():
                    if _matches(ev, c):
                        seeds[eid] *= cfg.boost
            graph = self.engine.graph
            if graph is not None and cfg.use_expansion:
                found = expand(seeds, graph, cfg,
                               visible=lambda ids: self._visible(ids, viewer, now, access),
                               in_range=self._in_range(applied, read),
                               relevance=self._relevance(cosine)
                               if cfg.expansion_relevance else None)
            else:
                found = {i: (s, "seed") for i, s in seeds.items()}
            superseded = self._incoming(graph, list(found), viewer, now, access)
            # asked why, what a record names as its cause is part of the answer and ranks
            # with it; otherwise only the hits returned say what they name as cause
            why = bool(ASKS_WHY.search(question))
            causes = self._incoming(graph, list(found), viewer, now, access, "causal",
                                    CAUSES) if why else {}
            scored = _ranked(found, superseded, causes, access(found), viewer)
            if cfg.use_ranker or on_features is not None:
                # the stage reorders what came out of the lifts above, and the lifts
                # apply again to its order
                lists = len(queries) + len(dense) + 2 * len(mine)
                found = self._rank({eid: (score, via) for score, eid, via in scored}, plan,
                                   viewer, cosine, places, lists, now, read, on_features)
                scored = _ranked(found, superseded, causes, access(found), viewer)
            if not why:
                causes = self._incoming(graph, [eid for _, eid, _ in scored[:k]], viewer,
                                        now, access, "causal", CAUSES)
            events.update(read(eid for _, eid, _ in scored[:k]))
        if graph is not None:
            graph.read_all_later()  # the next searches of this process find it in memory
        return self._context(plan, scored, events, superseded, causes, graph, viewer, k)

    def _seeds(self, queries: list[str], meant: dict[str, np.ndarray], viewer: str,
               where: IndexFilter | None,
               authored: Sequence[tuple[str, np.ndarray, IndexFilter]] = (),
               places: dict[int, ListPlaces] | None = None) -> dict[int, float]:
        """The seeds' RRF scores (``meant``: the vectors of the phrasings searched by
        meaning too); ``places`` is told where each list placed them."""
        depth = self.cfg.seed_k
        lists: list[list[tuple[int, float]] | list[tuple[int, float, int]]] = []
        graph = self.engine.graph
        weights: list[float] = []
        kinds: list[str] = []  # what each list is, for ``places``
        asked: dict[tuple[frozenset[str], IndexFilter | None, int, tuple[str, ...]],
                    list[TextHit]] = {}

        def bm25(query: str, where: IndexFilter | None, k: int,
                 kinds: tuple[DocKind, ...]) -> list[TextHit]:
            """A BM25 search, asked once for phrasings with the same terms (the planner's
            rewrites often differ in case and order only); its list still counts for
            each phrasing."""
            key = (self.engine.text.terms_of(query), where, k, kinds)
            if key not in asked:
                asked[key] = self.engine.text.search(query, viewer, k, where=where,
                                                     kinds=kinds)
            return asked[key]

        for query, vec, mine in authored:
            lists.append(self.engine.dense.search(vec, viewer, depth, where=mine))
            lists.append([(h.id, h.score) for h in bm25(query, mine, depth, (EVENT,))])
            weights += [self.cfg.author_weight] * 2
            kinds += ["authored"] * 2
        episodes = self.cfg.use_fused_summaries and self.cfg.fused_doc_seeds
        for query in queries:
            if query in meant:
                lists.append(self.engine.dense.search(meant[query], viewer, depth, where=where))
                kinds.append("dense")
            if episodes and graph is not None:
                # one BM25 ranking of events and episodes, split by kind
                found = bm25(query, where, 2 * depth, (EVENT, FUSED))
                lists.append([(h.id, h.score) for h in found if h.kind == EVENT][:depth])
                lists.append(self._members_of_fused_hits(
                    [(h.id, h.score) for h in found if h.kind == FUSED][:depth], graph, depth))
                kinds += ["bm25", "episodes"]
            else:
                lists.append([(h.id, h.score) for h in bm25(query, where, depth, (EVENT,))])
                kinds.append("bm25")
        weights += [1.0] * (len(lists) - len(weights))
        seeds = dict(rrf(lists, k=self.cfg.rrf_k, shared_ranks=True, weights=weights)[:depth])
        if places is not None:
            _place(lists, kinds, places)
        return seeds

    @staticmethod
    def _members_of_fused_hits(hits: list[tuple[int, float]], graph: FusionGraph,
                               depth: int) -> list[tuple[int, float, int]]:
        """A ranking of events from a ranking of fused memories: every member of the
        memory at rank r shares rank r (visibility is checked when they are hydrated)."""
        out: list[tuple[int, float, int]] = []
        for rank, (fid, score) in enumerate(hits, start=1):
            for eid in graph.members(fid):
                out.append((eid, score, rank))
            if len(out) >= depth:
                break
        return out

    def _rank(self, found: dict[int, tuple[float, str]], plan: Plan, viewer: str,
              cosine: Cosine,
              places: dict[int, ListPlaces], lists: int, now: datetime | None, read: Read,
              on_features: OnFeatures | None) -> dict[int, tuple[float, str]]:
        """The ranking stage: the first ``rank_depth`` candidates by fused score, scored
        by the rank model (their score becomes its probability); those below keep their
        order under the last of them."""
        cfg = self.cfg
        top = sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0]))[: cfg.rank_depth]
        if not top:
            return found
        ids = [eid for eid, _ in top]
        events = read(ids)
        cos = cosine(ids)
        with self.store.looking_up() as db:
            asked = self.engine.views.term_weights.of(db, plan.question)
            terms = terms_of_events(db, ids, among=asked)  # what the features compare
        graph = self.engine.graph
        memory_of = graph.fused_of_many(ids) if graph is not None else {}
        linked = graph.neighbours(ids) if graph is not None else {}
        window = next((c for c in plan.applied(cfg.constraint_min_confidence)
                       if c.kind == "time"), None)
        cues = {kind: [c for c in plan.constraints if c.kind == kind]
                for kind in ("source", "contact", "user")}
        candidates = []
        for eid, (score, via) in top:
            ev = events.get(eid)
            if ev is None:
                continue
            candidates.append(Candidate(
                id=eid, score=score, via=via, cos=cos.get(eid, 0.0),
                terms=terms.get(eid, frozenset()), when=max(_times(ev)), length=len(ev.text),
                memory=memory_of.get(eid),
                in_time=None if window is None else _matches(ev, window),
                days_off=0.0 if window is None else _days_off(ev, window),
                source_cue=any(_matches(ev, c) for c in cues["source"]),
                contact_cue=any(_matches(ev, c) for c in cues["contact"]),
                by_named_user=any(_matches(ev, c) for c in cues["user"]),
                own=ev.user == viewer, neighbours=linked.get(eid, frozenset())))
        asked_at = to_epoch(now) if now is not None else max(c.when for c in candidates)
        X = features(candidates, places, lists, asked, asked_at)
        ids = [c.id for c in candidates]
        if on_features is not None:
            on_features(ids, X)
        if not cfg.use_ranker:
            return found
        probability = load_rank_model(cfg.rank_model).probabilities(X)
        floor = float(probability.min()) if len(probability) else 1.0
        ranked = set(ids)
        below = [(eid, s) for eid, s in found.items() if eid not in ranked]
        top_rest = max((s for s, _ in (v for _, v in below)), default=0.0) or 1.0
        out = {eid: (floor * 0.999 * s / top_rest, via) for eid, (s, via) in below}
        for eid, p in zip(ids, probability, strict=True):
            out[eid] = (float(p), found[eid][1])
        return out

    def _relevance(self, cosine: Cosine) -> Callable[[list[int]], dict[int, float]]:
        """Closeness of events to the question, cosine rescaled from the configured band
        to 0..1: graph neighbours that have nothing to do with the question fade."""
        low, high = self.cfg.relevance_band

        def relevance(ids: list[int]) -> dict[int, float]:
            return {i: min(1.0, max(0.0, (s - low) / (high - low)))
                    for i, s in cosine(ids).items()}

        return relevance

    @staticmethod
    def _visible(ids: list[int], viewer: str, now: datetime | None, access: Access
                 ) -> set[int]:
        """Events the viewer may see and that were recorded by ``now``."""
        limit = to_epoch(now) if now is not None else None
        return {i for i, (audience, ts) in access(ids).items()
                if can_see(viewer, audience) and (limit is None or ts <= limit)}

    @staticmethod
    def _in_range(applied: Sequence[Constraint], read: Read
                  ) -> Callable[[list[int]], set[int]] | None:
        times = [c for c in applied if c.kind == "time"]
        if not times:
            return None
        c = times[0]
        return lambda ids: {i for i, ev in read(ids).items() if _matches(ev, c)}

    def _incoming(self, graph: FusionGraph | None, ids: list[int], viewer: str,
                  now: datetime | None, access: Access, kind: str = "supersedes",
                  reasons: tuple[str, ...] | None = None) -> dict[int, tuple[int, ...]]:
        """The sources of each event's incoming ``kind`` edges (of ``reasons``, if given)
        that the viewer may see: the reports that replaced it, or what it names as its
        cause."""
        if graph is None:
            return {}
        out: dict[int, tuple[int, ...]] = {}
        for eid in ids:
            newer = [e.src for e in graph.edges_of(eid, (kind,), "in")
                     if reasons is None or e.reason in reasons]
            if newer:
                visible = self._visible(newer, viewer, now, access)
                if visible:
                    out[eid] = tuple(sorted(visible))
        return out

    def _context(self, plan: Plan, scored: list[tuple[float, int, str]],
                 events: dict[int, AtomicEvent], superseded: dict[int, tuple[int, ...]],
                 causes: dict[int, tuple[int, ...]], graph: FusionGraph | None, viewer: str,
                 k: int) -> Context:
        fused: list[FusedMemory] = []
        memory_of = graph.fused_of_many(eid for _, eid, _ in scored[:k]) \
            if graph is not None else {}
        if self.cfg.use_fused_summaries and graph is not None:
            seen: set[int] = set()
            for _, eid, _ in scored[:k]:
                fid = memory_of.get(eid)
                if fid is None or fid in seen or len(graph.members(fid)) < 2:
                    continue
                seen.add(fid)
                view = self.engine.views.fused(fid, viewer)
                if view is not None:
                    fused.append(view)
                if len(fused) >= self.cfg.max_fused_summaries:
                    break
        # Each fused summary takes one of the k places, unless configured as a header that
        # comes on top of the k events.
        slots = k if self.cfg.summaries_extra else max(1, k - len(fused))
        hits = tuple(
            Hit(event_id=eid, score=score, text=events[eid].text,
                provenance=events[eid].provenance,
                fused_id=memory_of.get(eid),
                superseded_by=superseded.get(eid, ()), via=via,
                caused_by=causes.get(eid, ()))
            for score, eid, via in scored[:slots])
        return Context(hits, tuple(fused), plan)


def by_meaning(phrasings: Sequence[str], question: str, first: int) -> list[str]:
    """The phrasings searched by meaning as well as by words: the ``first`` ones
    (``RetrievalConfig.dense_phrasings``) and any holding a word ``question`` does not (an
    LLM's paraphrase, a follow-up; the planner's own rewrites are the question's key words)."""
    asked = question.lower()
    return [p for n, p in enumerate(phrasings)
            if n < first or any(w not in asked for w in re.findall(r"\w+", p.lower()))]


def _place(lists: Sequence[Sequence[tuple[int, float] | tuple[int, float, int]]],
           kinds: Sequence[str], places: dict[int, ListPlaces]) -> None:
    """Record in ``places`` where the seed lists (of ``kinds``: dense, bm25, authored;
    the members of BM25-ranked episodes are not counted) placed each event."""
    for ranking, kind in zip(lists, kinds, strict=True):
        if kind == "episodes":
            continue
        best = ranking[0][1] if ranking else 0.0
        for rank, entry in enumerate(ranking, start=1):
            share = entry[1] / best if kind == "bm25" and best > 0 else 0.0
            places.setdefault(entry[0], ListPlaces()).place(kind, rank, share)


def _ranked(found: dict[int, tuple[float, str]], superseded: dict[int, tuple[int, ...]],
            causes: dict[int, tuple[int, ...]],
            access: dict[int, tuple[tuple[str, ...] | None, float]], viewer: str
            ) -> list[tuple[float, int, str]]:
    """(score, id, how reached) of the events found that the viewer may see, best first.
    What replaced a report found ranks just above it: the current state first, the
    out-of-date one (which a question may ask for) kept where it was found; what a
    record names as its cause ranks just below it, unless found higher."""
    lifted: dict[int, float] = {}
    for eid, (score, _) in found.items():
        for newer in superseded.get(eid, ()):
            if newer in found:
                lifted[newer] = max(lifted.get(newer, 0.0), score)
        for cause in causes.get(eid, ()):
            if cause in found:
                lifted[cause] = max(lifted.get(cause, 0.0), score * 0.999)
    scored = []
    for eid, (score, via) in found.items():
        row = access.get(eid)
        if row is None or not can_see(viewer, row[0]):
            continue
        if eid in lifted:  # (a replacement just above, a cause just below)
            score = max(score, lifted[eid] * 1.001)
        scored.append((score, eid, via))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored


def fused(engine: Engine, req: Request) -> Context:
    """Planner, constrained hybrid seeds, graph expansion, context under fused memories."""
    return FusedRetriever(engine).retrieve(req.query, viewer=req.viewer, now=req.now, k=req.k)


PIPELINE = Pipeline("fused", fused, "planner + hybrid seeds + graph expansion, grouped "
                    "under fused memories (with fusion off: every event its own memory)",
                    grounded=True)
