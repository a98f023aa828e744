"""What readers see of the cluster layer: fused memories as a viewer may see them, with
their members and edges, the people a question can name, and the caches behind both."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

from .config import MemFuseConfig
from .errors import LLMError, NotFound
from .fusion.graph import FusionGraph
from .fusion.runtime import FusionRuntime
from .fusion.summary import template_summary, viewer_rows
from .fusion.terms import TermWeights
from .llm.pool import LLMPool
from .records import AtomicEvent, Card, Edge, FusedMemory, can_see
from .store import fused as fused_sql
from .store.sqlite import Store, audience_of_column

log = logging.getLogger("memfuse_lite")


PAGE_SCAN = 256
"""Events read per step of a timeline page (:meth:`MemoryViews.page`)."""


class MemoryViews:
    """Fused memories, event edges and people, read per viewer (caches included)."""

    def __init__(self, store: Store, fusion: FusionRuntime | None, llms: LLMPool,
                 config: MemFuseConfig) -> None:
        self.store = store
        self.fusion = fusion
        self.llms = llms
        self.config = config
        self._lock = threading.Lock()
        self._people: tuple[int, tuple[list[str], list[str]]] | None = None
        self._summaries: dict[tuple[int, tuple[int, ...]], str | None] = {}
        self.term_weights = TermWeights()
        """Questions' term weights for the ranking stage (cleared with the caches)."""

    @property
    def graph(self) -> FusionGraph | None:
        """The fusion graph (None when fusion is off)."""
        return self.fusion.graph if self.fusion is not None else None

    def invalidate(self) -> None:
        """Drop the caches (after something was forgotten or the memory rebuilt)."""
        with self._lock:
            self._people = None
            self._summaries.clear()
            self.term_weights.clear()

    def timeline(self, fused_id: int, viewer: str
                 ) -> tuple[FusedMemory, list[AtomicEvent], list[Edge]]:
        """A fused memory, its visible members in time order and the edges among them."""
        with self.store.reading() as db:
            rows = viewer_rows(fused_sql.member_rows(db, fused_id), viewer)
        if not rows:
            raise NotFound(f"no fused memory {fused_id} visible to {viewer}")
        events = self.store.get_events([r[0] for r in rows])
        members = [events[r[0]] for r in rows if r[0] in events]
        ids = {e.id for e in members}
        edges: list[Edge] = []
        graph = self.graph
        if graph is not None:
            seen: set[tuple[str, int, int]] = set()
            for eid in sorted(ids):
                for edge in graph.edges_of(eid):
                    key = (edge.kind, edge.src, edge.dst)
                    if edge.src in ids and edge.dst in ids and key not in seen:
                        seen.add(key)
                        edges.append(edge)
        summary, start, end = template_summary(rows)
        if self.config.summary_llm:
            summary = self._llm_summary(fused_id, rows) or summary
        participants = sorted({a for e in members for a in e.actors} | {e.user for e in members})
        fused = FusedMemory(
            id=fused_id, member_ids=tuple(e.id for e in members), start=start, end=end,
            participants=tuple(participants), sources=tuple(sorted({e.source for e in members})),
            users=tuple(sorted({e.user for e in members})), summary=summary,
            conflicts=tuple(e.reason for e in edges if e.kind == "conflicts_with"))
        return fused, members, edges

    def fused(self, fused_id: int, viewer: str) -> FusedMemory | None:
        """A fused memory as ``viewer`` may see it, or None when they see none of it."""
        try:
            return self.timeline(fused_id, viewer)[0]
        except NotFound:
            return None

    def edges_of(self, event: AtomicEvent, viewer: str) -> list[Edge]:
        """Graph edges of a (visible) event whose other end the viewer may also see."""
        graph = self.graph
        if graph is None:
            return []
        edges = graph.edges_of(event.id)
        others = self.store.get_events([e.dst if e.src == event.id else e.src for e in edges])
        return [e for e in edges
                if (o := others.get(e.dst if e.src == event.id else e.src)) is not None
                and can_see(viewer, o.audience)]

    def page(self, viewer: str, before: tuple[float, int] | None, size: int
             ) -> tuple[list[Card], tuple[float, int] | None]:
        """One page of the viewer's timeline, newest first: up to ``size`` cards (a fused
        memory, or an event in none), each placed at its newest member the viewer may see,
        and the cursor to pass as ``before`` for the next page (None at the oldest record).
        Reads along the time index, a few hundred events at a time, never the whole
        memory; a memory already placed on an earlier page (a newer visible member than
        ``before``) is not repeated."""
        cards: list[Card] = []
        placed: set[tuple[str, int]] = set()
        cursor = before
        while len(cards) < size:
            with self.store.reading() as db:
                rows = fused_sql.events_before(db, cursor, PAGE_SCAN)
            if not rows:
                return cards, None
            for eid, epoch, audience, fid in rows:
                if len(cards) == size:
                    return cards, cursor
                cursor = (epoch, eid)
                if not can_see(viewer, audience_of_column(audience)):
                    continue
                key = ("fused", fid) if fid is not None else ("event", eid)
                if key in placed:
                    continue
                placed.add(key)
                if fid is not None and before is not None and self._shown_before(
                        fid, viewer, before):
                    continue
                cards.append(Card(fid, eid, epoch))
        return cards, cursor

    def _shown_before(self, fused_id: int, viewer: str, before: tuple[float, int]) -> bool:
        """Whether a fused memory has a member the viewer may see at or after ``before``
        (its card was on an earlier page)."""
        with self.store.reading() as db:
            members = fused_sql.member_times(db, fused_id)
        return any((epoch, eid) >= before for eid, epoch, audience in members
                   if can_see(viewer, audience_of_column(audience)))

    def counts(self, viewer: str) -> list[tuple[str, str, int]]:
        """(source, user, events) of what ``viewer`` may see, most first."""
        totals: dict[tuple[str, str], int] = {}
        with self.store.reading() as db:
            for source, user, audience, n in fused_sql.visible_counts(db):
                if can_see(viewer, audience_of_column(audience)):
                    totals[(source, user)] = totals.get((source, user), 0) + n
        return sorted(((s, u, n) for (s, u), n in totals.items()), key=lambda r: (-r[2], r))

    def people(self) -> tuple[list[str], list[str]]:
        """Users of this memory and contacts named often enough to plan with (cached
        until the next event)."""
        top = self.store.max_event_id()
        with self._lock:
            if self._people is not None and self._people[0] == top:
                return self._people[1]
        with self.store.reading_alone() as db:  # a scan: the shared reader stays free
            users = [r[0] for r in db.execute("SELECT DISTINCT user FROM events")]
            counts: dict[str, int] = {}
            for (actors,) in db.execute("SELECT actors FROM events WHERE actors != '[]'"):
                for a in json.loads(actors):
                    counts[a] = counts.get(a, 0) + 1
        contacts = [a for a, n in sorted(counts.items(), key=lambda kv: -kv[1])[:500]]
        with self._lock:
            self._people = (top, (users, contacts))
        return users, contacts

    def _llm_summary(self, fused_id: int, rows: Sequence[tuple[Any, ...]]) -> str | None:
        """An LLM-written summary of exactly these (visible) members, cached per member set."""
        key = (fused_id, tuple(r[0] for r in rows))
        with self._lock:
            if key in self._summaries:
                return self._summaries[key]
        from .prompts import summarize

        llm = self.llms.get(str(self.config.summary_llm))
        records = "\n".join(f"- {(r[5] or r[4] or '')[:16]} {r[2]}/{r[1]}: "
                            f"{' '.join(r[3].split())[:140]}" for r in rows[:8])
        try:
            value, _ = llm.complete_json(summarize.messages(records), summarize.SCHEMA,
                                         max_tokens=96, operation="summary")
        except LLMError as exc:
            log.warning("LLM summary of fused memory %s failed: %s", fused_id, exc)
            return None
        summary = str(value.get("summary") or "").strip() or None
        with self._lock:
            self._summaries[key] = summary
        return summary
