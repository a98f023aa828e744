"""The causal fusion graph: event → event edges in memory (rustworkx), memberships read
from SQLite.

Nodes are events that have an edge (their payload is the id; a map gives the node of an
event id); every edge comes from ``edges`` and carries its
:class:`~memfuse_lite.records.Edge`. ``member_of`` (event → fused memory) is read from
``fused_members`` through the store's lookup connection (an indexed query per call)
instead of being mirrored: at 100k events the mirror took ~40 MB for what
SQLite answers from its page cache. SQLite stays the source of truth.

A graph opened over a store holds none of its edges until :meth:`FusionGraph.read_all`
(called by ``MemFuse.warm_up``, after the first search that asked it, and by whatever
needs the whole graph); until then an event's edges are read from SQLite's ``src`` and
``dst`` indexes, in the order the loaded graph gives them, so a process that opens a
memory to ask once never waits for every edge (290k at 100k events).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

import rustworkx as rx

from ..records import Edge
from ..store import fused as fused_sql
from ..store.sqlite import Store

log = logging.getLogger(__name__)

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
        """An empty graph; ``stored``: the edges in SQLite are read by :meth:`read_all`,
        and answered from SQLite until then. An edge's payload is (kind, weight, reason),
        made an :class:`Edge` when asked for: a large memory's edges load several times
        faster, in less memory."""
        self._store = store
        self._g: rx.PyDiGraph = rx.PyDiGraph(multigraph=True)
        self._events: dict[int, int] = {}
        self._lock = threading.RLock()  # guards the two above and the state below
        self._unread = stored
        # changes applied while a read of every edge runs, replayed onto what it read
        self._pending: list[tuple[list[int], list[Edge]]] | None = None
        self._reading = threading.Lock()  # one read of every edge at a time
        self._loader: threading.Thread | None = None
        self._closed = threading.Event()

    @classmethod
    def load(cls, store: Store) -> FusionGraph:
        """The graph of the edges stored in ``store`` (read from SQLite until
        :meth:`read_all`)."""
        return cls(store, stored=True)

    @property
    def in_memory(self) -> bool:
        """Whether every stored edge has been read into memory."""
        return not self._unread

    def read_all(self) -> None:
        """Read every stored edge into memory, once (a no-op afterwards or after
        :meth:`close`). Searches meanwhile read the edges they need from SQLite; changes
        applied meanwhile are replayed onto what was read."""
        with self._reading:
            with self._lock:
                if not self._unread or self._closed.is_set():
                    return
                self._pending = []
            g: rx.PyDiGraph | None = None
            events: dict[int, int] = {}
            try:
                g, events = self._read_stored()
            finally:
                with self._lock:
                    pending, self._pending = self._pending or [], None
                    if g is not None:  # read whole (not failed, not closed meanwhile)
                        self._g, self._events, self._unread = g, events, False
                        for removed, added in pending:
                            self._remove(removed)
                            self._add(added)

    def read_all_later(self) -> None:
        """Start :meth:`read_all` in a background thread (once; :meth:`close` stops it)."""
        with self._lock:
            if not self._unread or self._loader is not None or self._closed.is_set():
                return
            self._loader = threading.Thread(target=self._read_in_background,
                                            name="memfuse-graph", daemon=True)
            self._loader.start()

    def _read_in_background(self) -> None:
        try:
            self.read_all()
        except Exception as exc:  # noqa: BLE001 - searches keep reading SQLite
            log.warning("reading the fusion graph failed: %s", exc)

    def close(self) -> None:
        """Stop a background read (its searches are over) and wait for it."""
        self._closed.set()
        loader = self._loader
        if loader is not None:
            loader.join()

    def _read_stored(self) -> tuple[rx.PyDiGraph | None, dict[int, int]]:
        """Every stored edge, in a graph of its own (None if closed meanwhile). Each
        (kind, src, dst) is stored once: no duplicate check."""
        g = rx.PyDiGraph(multigraph=True)
        events: dict[int, int] = {}
        batch: list[tuple[int, int, tuple[str, float, str]]] = []
        with self._store.reading_alone() as db:  # searches' lookups go on meanwhile
            for kind, src, dst, weight, reason in fused_sql.all_edge_rows(db):
                batch.append((_node(g, events, src), _node(g, events, dst),
                              (kind, weight, reason)))
                if len(batch) == 20_000:
                    if self._closed.is_set():
                        return None, {}
                    g.add_edges_from(batch)
                    batch = []
        g.add_edges_from(batch)
        return g, events

    def _remove(self, ids: Iterable[int]) -> None:
        for ident in ids:
            idx = self._events.pop(ident, None)
            if idx is not None:
                self._g.remove_node(idx)

    def _add(self, edges: Iterable[Edge]) -> None:
        for edge in edges:
            a = _node(self._g, self._events, edge.src)
            b = _node(self._g, self._events, edge.dst)
            if self._g.has_edge(a, b) and any(
                    kind == edge.kind for kind, _, _ in self._g.get_all_edge_data(a, b)):
                continue
            self._g.add_edge(a, b, (edge.kind, edge.weight, edge.reason))

    def remove_events(self, ids: Iterable[int]) -> None:
        """Drop event nodes with their edges (after the events were forgotten: SQLite no
        longer has their edges)."""
        with self._lock:
            if self._unread:
                if self._pending is not None:
                    self._pending.append((list(ids), []))
                return
            self._remove(ids)

    def add_edges(self, edges: Iterable[Edge]) -> None:
        """Event → event edges, after SQLite committed them (duplicates of a (kind, src,
        dst) are ignored)."""
        with self._lock:
            if self._unread:
                if self._pending is not None:
                    self._pending.append(([], list(edges)))
                return
            self._add(edges)

    def edges_of(self, event_id: int, kinds: Iterable[str] | None = None,
                 direction: str = "both") -> list[Edge]:
        """Edges touching an event (``direction``: out, in or both), those leaving it
        first, each side newest first."""
        wanted = set(kinds) if kinds is not None else None
        rows: list[fused_sql.EdgeRow] = []
        with self._lock:
            unread = self._unread
            if not unread:
                idx = self._events.get(event_id)
                if idx is None:
                    return []
                g = self._g
                if direction in ("out", "both"):
                    rows.extend((kind, event_id, g[b], weight, reason)
                                for _, b, (kind, weight, reason) in g.out_edges(idx))
                if direction in ("in", "both"):
                    rows.extend((kind, g[a], event_id, weight, reason)
                                for a, _, (kind, weight, reason) in g.in_edges(idx))
        if unread:
            with self._store.looking_up() as db:
                for side in ("out", "in"):
                    if direction in (side, "both"):
                        rows.extend(fused_sql.edge_rows_of(db, event_id, side))
        return [Edge(kind, src, dst, weight, reason) for kind, src, dst, weight, reason
                in rows if wanted is None or kind in wanted]

    def neighbours(self, event_ids: Iterable[int]) -> dict[int, frozenset[int]]:
        """The events each event shares an edge with, in either direction."""
        ids = list(event_ids)
        with self._lock:
            if not self._unread:
                out = {}
                for eid in ids:
                    idx = self._events.get(eid)
                    out[eid] = frozenset() if idx is None else frozenset(
                        self._g[n] for n in self._g.neighbors_undirected(idx))
                return out
        linked: dict[int, set[int]] = {eid: set() for eid in ids}
        with self._store.looking_up() as db:
            for src, dst in fused_sql.linked_pairs(db, ids):
                if src in linked:
                    linked[src].add(dst)
                if dst in linked:
                    linked[dst].add(src)
        return {eid: frozenset(found) for eid, found in linked.items()}

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
        self.read_all()
        out: dict[str, int] = {}
        with self._lock:
            for kind, _, _ in self._g.edges():
                out[kind] = out.get(kind, 0) + 1
        with self._store.looking_up() as db:
            members = fused_sql.membership_count(db)
        if members:
            out[MEMBER] = members
        return out


def _node(g: rx.PyDiGraph, events: dict[int, int], ident: int) -> int:
    """The node of event ``ident`` in ``g`` (``events`` maps ids to nodes), added if new."""
    idx = events.get(ident)
    if idx is None:
        idx = g.add_node(ident)
        events[ident] = idx
    return idx
