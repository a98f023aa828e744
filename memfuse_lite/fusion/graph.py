"""The causal fusion graph in memory (rustworkx), mirrored from SQLite.

Nodes are events (``("e", id)``) and fused memories (``("f", id)``); edges carry an
:class:`~memfuse_lite.records.Edge`. ``member_of`` edges come from ``fused_members``,
every other kind from ``edges``. SQLite stays the source of truth: the graph is built
from it at open and updated after each committed batch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import apsw
import rustworkx as rx

from ..records import Edge
from ..store import fused as fused_sql

Node = tuple[str, int]


class FusionGraph:
    """Typed, directed edges between events and fused memories."""

    def __init__(self) -> None:
        self._g: rx.PyDiGraph = rx.PyDiGraph(multigraph=True)
        self._index: dict[Node, int] = {}
        self._lock = threading.RLock()

    def _node(self, node: Node) -> int:
        idx = self._index.get(node)
        if idx is None:
            idx = self._g.add_node(node)
            self._index[node] = idx
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
                self._g.add_edge(self._node(("e", eid)), self._node(("f", fid)),
                                 Edge("member_of", eid, fid))

    def move_members(self, moves: Iterable[tuple[int, int, int]]) -> None:
        """Re-point ``member_of`` edges after fused memories were merged."""
        with self._lock:
            for eid, old, new in moves:
                a = self._index.get(("e", eid))
                b = self._index.get(("f", old))
                if a is not None and b is not None and self._g.has_edge(a, b):
                    self._g.remove_edge(a, b)
                self._g.add_edge(self._node(("e", eid)), self._node(("f", new)),
                                 Edge("member_of", eid, new))

    def remove_fused(self, ids: Iterable[int]) -> None:
        """Drop fused-memory nodes."""
        with self._lock:
            for fid in ids:
                idx = self._index.pop(("f", fid), None)
                if idx is not None:
                    self._g.remove_node(idx)

    def remove_events(self, ids: Iterable[int]) -> None:
        """Drop event nodes with their edges (after the events were forgotten)."""
        with self._lock:
            for eid in ids:
                idx = self._index.pop(("e", eid), None)
                if idx is not None:
                    self._g.remove_node(idx)

    def add_edges(self, edges: Iterable[Edge]) -> None:
        """Event → event edges (duplicates of a (kind, src, dst) are ignored)."""
        with self._lock:
            for edge in edges:
                a, b = self._node(("e", edge.src)), self._node(("e", edge.dst))
                if any(e.kind == edge.kind for e in self._g.get_all_edge_data(a, b)
                       ) if self._g.has_edge(a, b) else False:
                    continue
                self._g.add_edge(a, b, edge)

    def edges_of(self, event_id: int, kinds: Iterable[str] | None = None,
                 direction: str = "both") -> list[Edge]:
        """Edges touching an event (``direction``: out, in or both), member_of excluded."""
        wanted = set(kinds) if kinds is not None else None
        with self._lock:
            idx = self._index.get(("e", event_id))
            if idx is None:
                return []
            found: list[Edge] = []
            if direction in ("out", "both"):
                found.extend(d for _, _, d in self._g.out_edges(idx))
            if direction in ("in", "both"):
                found.extend(d for _, _, d in self._g.in_edges(idx))
        return [e for e in found if e.kind != "member_of" and (wanted is None or e.kind in wanted)]

    def fused_of(self, event_id: int) -> int | None:
        """The fused memory an event belongs to (the newest, for continuations)."""
        with self._lock:
            idx = self._index.get(("e", event_id))
            if idx is None:
                return None
            fids = [d.dst for _, _, d in self._g.out_edges(idx) if d.kind == "member_of"]
        return max(fids) if fids else None

    def members(self, fused_id: int) -> list[int]:
        """Event ids of a fused memory."""
        with self._lock:
            idx = self._index.get(("f", fused_id))
            if idx is None:
                return []
            return sorted(d.src for _, _, d in self._g.in_edges(idx) if d.kind == "member_of")

    def counts(self) -> dict[str, int]:
        """Edges per kind."""
        out: dict[str, int] = {}
        with self._lock:
            for edge in self._g.edges():
                out[edge.kind] = out.get(edge.kind, 0) + 1
        return out
