"""Fusion at run time: the agent, the in-memory graph, and the one way a fusion change
(a fused batch, a rebuild step, a forget) reaches the graph and the text index."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from ..config import FusionConfig
from ..index.base import DenseIndex, TextIndex
from ..store import fused as fused_sql
from ..store.sqlite import Store
from .agent import Arbiter, FusionAgent, FusionChange
from .graph import FusionGraph
from .summary import document_of, refresh_summary

FUSED_DOCS_DIRTY = "sparse_fused_dirty"
"""Meta flag: fused documents in the text index may be stale (set while a forget runs)."""


@dataclass
class FusionRuntime:
    """The fusion agent and the graph it keeps up to date."""

    agent: FusionAgent
    graph: FusionGraph
    llm_calls: int = 0

    @classmethod
    def open(cls, store: Store, cfg: FusionConfig, dense: DenseIndex,
             arbiter: Arbiter | None = None) -> FusionRuntime:
        """The agent over ``dense``'s neighbours with its zone, and the graph of the edges
        stored in SQLite (read at its first use)."""
        agent = FusionAgent(cfg, dense.search_all, arbiter)
        with store.reading() as db:
            agent.load_zone(db)
        return cls(agent, FusionGraph.load(store))

    def apply(self, change: FusionChange, text: TextIndex | None, *,
              commit: bool = True) -> None:
        """Bring the zone, the graph and the text index's fused documents in line with a
        change whose transaction has committed (``text=None``: the caller rewrites the
        documents afterwards, as a rebuild does once at its end; ``commit=False``: the
        text index commits them with the batch's events)."""
        if change.zone is not None:
            self.agent.adopt_zone(change.zone)
        self.graph.remove_events(change.events_removed)  # memberships are read from SQLite
        self.graph.add_edges(change.edges)
        self.llm_calls += change.llm_calls
        if text is not None:
            apply_documents(change, text, commit=commit)


def apply_documents(change: FusionChange, text: TextIndex, *, commit: bool = True) -> None:
    """The text-index half of :meth:`FusionRuntime.apply` (all a memory without fusion
    needs when a forget changes fused memories made earlier)."""
    text.remove_fused(sorted(change.removed), commit=commit)
    text.upsert_fused(change.fused_docs, commit=commit)


def mark_documents_stale(db: apsw.Connection) -> None:
    """Record, inside a write transaction, that the text index's fused documents may be
    stale until they are rewritten (an interrupted forget or rebuild is repaired at open)."""
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (FUSED_DOCS_DIRTY,))


def fused_documents(db: apsw.Connection, ids: Sequence[int]) -> list[tuple[int, str, float]]:
    """Refresh the stored summaries of these fused memories and return their text-index
    documents (call inside a write transaction)."""
    return [(fid, *refresh_summary(db, fid)) for fid in ids]


def reindex_documents(store: Store, text: TextIndex, *, write: bool = True) -> None:
    """Rewrite every fused memory's document in the text index (after the index was
    rebuilt or a forget was interrupted: the documents are derived from SQLite too).
    ``write=False`` (a reader beside the owner) reads the members without refreshing the
    stored summaries, which are the owner's to write."""
    with store.reading() as db:
        ids = fused_sql.fused_ids(db)
        if not write:
            docs = [(fid, *document_of(fused_sql.member_rows(db, fid))) for fid in ids]
    stale = sorted(text.fused_ids() - set(ids))
    if stale:
        text.remove_fused(stale)
    if write:
        with store.atomic() as db:
            docs = fused_documents(db, ids)
    for start in range(0, len(docs), 1000):
        text.upsert_fused(docs[start : start + 1000])
    if write:
        store.meta_delete(FUSED_DOCS_DIRTY)
