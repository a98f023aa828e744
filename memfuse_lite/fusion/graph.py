"""The causal fusion graph: event → event edges in memory (rustworkx), memberships read
from SQLite.

Nodes are events that have an edge (their payload is the id; a map gives the node of an
event id); every edge comes from ``edges`` and carries its
:class:`~memfuse_lite.records.Edge`. ``member_of`` (event → fused memory) is read from
``fused_members`` through the store's lookup connection (an indexed query per call)
instead of being mirrored: at 100k events the mirror took ~40 MB for what
SQLite answers from its page cache. SQLite stays the source of truth: the edges are read
from it when the graph is first asked for one (not at open: a BM25 search, which needs
none, would wait for them) and updated after each committed batch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import rustworkx as rx

from ..records import Edge
from ..store import fused as fused_sql
from ..store.sqlite import Store

MEMBER = "member_of"
"""The kind under which :meth:`FusionGraph.counts` reports memberships."""
STATED_CAUSE = "explicit cue"
"""The reason of a causal edge from the record an event names as its cause ("… because
my flight is delayed"); the other causal edges follow the order within an episode,
except :data:`ANNOUNCED_CHANGE`."""
ANNOUNCED_CHANGE = "news of the change"
"""The reason of a causal edge from the news that announced a change (the clinic's "your
appointment has to be rebooked") to the report of that change that replaced the plan
("my appointment is now Saturday"), which names no cause of its own."""
CAUSES = (STATED_CAUSE, ANNOUNCED_CHANGE)
"""The reasons of causal edges that say why something happened (what a hit was
``caused_by``), not only what came before it."""


class FusionGraph:
    """Typed, directed edges between events, and the memberships of fused memories."""

    def __init__(self, store: Store, *, stored: bool = False) -> None:
        """An empty graph; ``stored``: the edges in SQLite are read at its first use. An
        edge's payload is (kind, weight, reason), made an :class:`Edge` when asked for:
        a large memory's edges load several times faster, in less memory."""
        self._store = store
        self._g: rx.PyDiGraph = rx.PyDiGraph(multigraph=True)
        self._events: dict[int, int] = {}
        self._lock = threading.RLock()
        self._unread = stored

    def _node(self, ident: int) -> int:
        idx = self._events.get(ident)
        if idx is None:
            idx = self._g.add_node(ident)
            self._events[ident] = idx
        return idx

    @classmethod
    def load(cls, store: Store) -> FusionGraph:
        """The graph of the edges stored in ``store``, read at its first use."""
        return cls(store, stored=True)

    def _read_stored(self) -> None:
        """Add the stored edges, once, before anything else touches them (call holding the
        lock). Edges committed since the graph was made are read too: adding one again
        after its batch is a no-op, and a forget deletes edges in SQLite before it removes
        them here, so the graph agrees with SQLite whenever the read happens. Each
        (kind, src, dst) is stored once: no duplicate check."""
        if not self._unread:
            return
        node = self._node
        with self._store.reading_alone() as db:  # searches' lookups go on meanwhile
            self._g.add_edges_from([(node(src), node(dst), (kind, weight, reason))
                                    for kind, src, dst, weight, reason
                                    in fused_sql.all_edge_rows(db)])
        self._unread = False

    def remove_events(self, ids: Iterable[int]) -> None:
        """Drop event nodes with their edges (after the events were forgotten)."""
        with self._lock:
            self._read_stored()
            for ident in ids:
                idx = self._events.pop(ident, None)
                if idx is not None:
                    self._g.remove_node(idx)

    def add_edges(self, edges: Iterable[Edge]) -> None:
        """Event → event edges (duplicates of a (kind, src, dst) are ignored)."""
        with self._lock:
            self._read_stored()
            for edge in edges:
                a, b = self._node(edge.src), self._node(edge.dst)
                if self._g.has_edge(a, b) and any(
                        kind == edge.kind for kind, _, _ in self._g.get_all_edge_data(a, b)):
                    continue
                self._g.add_edge(a, b, (edge.kind, edge.weight, edge.reason))

    def edges_of(self, event_id: int, kinds: Iterable[str] | None = None,
                 direction: str = "both") -> list[Edge]:
        """Edges touching an event (``direction``: out, in or both)."""
        wanted = set(kinds) if kinds is not None else None
        with self._lock:
            self._read_stored()
            idx = self._events.get(event_id)
            if idx is None:
                return []
            g = self._g
            found: list[Edge] = []
            if direction in ("out", "both"):
                found.extend(Edge(kind, event_id, g[b], weight, reason)
                             for _, b, (kind, weight, reason) in g.out_edges(idx))
            if direction in ("in", "both"):
                found.extend(Edge(kind, g[a], event_id, weight, reason)
                             for a, _, (kind, weight, reason) in g.in_edges(idx))
        return [e for e in found if wanted is None or e.kind in wanted]

    def neighbours(self, event_ids: Iterable[int]) -> dict[int, frozenset[int]]:
        """The events each event shares an edge with, in either direction."""
        with self._lock:
            self._read_stored()
            out = {}
            for eid in event_ids:
                idx = self._events.get(eid)
                out[eid] = frozenset() if idx is None else frozenset(
                    self._g[n] for n in self._g.neighbors_undirected(idx))
            return out

    def fused_of(self, event_id: int) -> int | None:
        """The fused memory an event belongs to (the newest, for continuations)."""
        return self.fused_of_many([event_id]).get(event_id)

    def fused_of_many(self, event_ids: Iterable[int]) -> dict[int, int]:
        """:meth:`fused_of` of many events in one statement (events in no memory are left
        out)."""
        with self._store.looking_up() as db:
            return fused_sql.fused_of(db, list(event_ids))

    def members(self, fused_id: int) -> list[int]:
        """Event ids of a fused memory."""
        with self._store.looking_up() as db:
            return fused_sql.member_ids(db, fused_id)

    def counts(self) -> dict[str, int]:
        """Edges per kind, memberships as ``member_of``."""
        out: dict[str, int] = {}
        with self._lock:
            self._read_stored()
            for kind, _, _ in self._g.edges():
                out[kind] = out.get(kind, 0) + 1
        with self._store.looking_up() as db:
            members = fused_sql.membership_count(db)
        if members:
            out[MEMBER] = members
        return out
