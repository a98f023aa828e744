"""The causal fusion graph in memory (rustworkx), mirrored from SQLite.

Nodes are events and fused memories (their payload is the id; two maps give the node of
an event id and of a fused-memory id). ``member_of`` edges (event → fused memory) come from
``fused_members`` and carry the :data:`MEMBER` marker rather than an object each (there is
one per event); every other edge comes from ``edges`` and carries its
:class:`~memfuse_lite.records.Edge`. SQLite stays the source of truth: the graph is built
from it at open and updated after each committed batch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import apsw
import rustworkx as rx

from ..records import Edge
from ..store import fused as fused_sql

MEMBER = "member_of"
"""The payload of every membership edge."""


class FusionGraph:
    """Typed, directed edges between events and fused memories."""

    def __init__(self) -> None:
        self._g: rx.PyDiGraph = rx.PyDiGraph(multigraph=True)
        self._events: dict[int, int] = {}
        self._fused: dict[int, int] = {}
        self._lock = threading.RLock()

    def _node(self, nodes: dict[int, int], ident: int) -> int:
        idx = nodes.get(ident)
        if idx is None:
            idx = self._g.add_node(ident)
            nodes[ident] = idx
        return idx

    @classmethod
    def load(cls, db: apsw.Connection) -> FusionGraph:
        """Build from SQLite."""
        graph = cls()
        graph.add_members(fused_sql.memberships(db))
        graph.add_edges(fused_sql.all_edges(db))
        return graph

    def add_members(self, pairs: Iterable[tuple[int, int]]) -> None:
        """``member_of`` edges (event → fused memory)."""
        with self._lock:
            for eid, fid in pairs:
                self._g.add_edge(self._node(self._events, eid), self._node(self._fused, fid),
                                 MEMBER)

    def move_members(self, moves: Iterable[tuple[int, int, int]]) -> None:
        """Re-point ``member_of`` edges after fused memories were merged."""
        with self._lock:
            for eid, old, new in moves:
                a, b = self._events.get(eid), self._fused.get(old)
                if a is not None and b is not None and self._g.has_edge(a, b):
                    self._g.remove_edge(a, b)
                self._g.add_edge(self._node(self._events, eid), self._node(self._fused, new),
                                 MEMBER)

    def remove_fused(self, ids: Iterable[int]) -> None:
        """Drop fused-memory nodes."""
        self._remove(self._fused, ids)

    def remove_events(self, ids: Iterable[int]) -> None:
        """Drop event nodes with their edges (after the events were forgotten)."""
        self._remove(self._events, ids)

    def _remove(self, nodes: dict[int, int], ids: Iterable[int]) -> None:
        with self._lock:
            for ident in ids:
                idx = nodes.pop(ident, None)
                if idx is not None:
                    self._g.remove_node(idx)

    def add_edges(self, edges: Iterable[Edge]) -> None:
        """Event → event edges (duplicates of a (kind, src, dst) are ignored)."""
        with self._lock:
            for edge in edges:
                a, b = self._node(self._events, edge.src), self._node(self._events, edge.dst)
                if self._g.has_edge(a, b) and any(
                        e is not MEMBER and e.kind == edge.kind
                        for e in self._g.get_all_edge_data(a, b)):
                    continue
                self._g.add_edge(a, b, edge)

    def edges_of(self, event_id: int, kinds: Iterable[str] | None = None,
                 direction: str = "both") -> list[Edge]:
        """Edges touching an event (``direction``: out, in or both), member_of excluded."""
        wanted = set(kinds) if kinds is not None else None
        with self._lock:
            idx = self._events.get(event_id)
            if idx is None:
                return []
            found: list[Edge] = []
            if direction in ("out", "both"):
                found.extend(d for _, _, d in self._g.out_edges(idx) if d is not MEMBER)
            if direction in ("in", "both"):
                found.extend(d for _, _, d in self._g.in_edges(idx) if d is not MEMBER)
        return [e for e in found if wanted is None or e.kind in wanted]

    def fused_of(self, event_id: int) -> int | None:
        """The fused memory an event belongs to (the newest, for continuations)."""
        with self._lock:
            idx = self._events.get(event_id)
            if idx is None:
                return None
            fids = [self._g[dst] for _, dst, d in self._g.out_edges(idx) if d is MEMBER]
        return max(fids) if fids else None

    def members(self, fused_id: int) -> list[int]:
        """Event ids of a fused memory."""
        with self._lock:
            idx = self._fused.get(fused_id)
            if idx is None:
                return []
            return sorted(self._g[src] for src, _, d in self._g.in_edges(idx) if d is MEMBER)

    def counts(self) -> dict[str, int]:
        """Edges per kind."""
        out: dict[str, int] = {}
        with self._lock:
            for edge in self._g.edges():
                kind = MEMBER if edge is MEMBER else edge.kind
                out[kind] = out.get(kind, 0) + 1
        return out
