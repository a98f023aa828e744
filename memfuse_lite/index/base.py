"""What every derived index shares: a sidecar file recording what it has absorbed.

A derived index is never trusted: its sidecar records the SQLite watermark (the last
event id absorbed), the embedding model and a checksum; whatever disagrees with the
store is rebuilt from it.
"""

from __future__ import annotations

import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from ..event import EventRecord

log = logging.getLogger("memfuse_lite.index")

VectorSource = Callable[[Sequence[int]], tuple[np.ndarray, np.ndarray]]
"""Event ids → (the ids found, their stored vectors as rows): the store's copies, which a
dense index may read to score a few events exactly (:meth:`Store.vectors`)."""


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The sidecar's content, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_sidecar(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temp file + fsync + rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass(frozen=True, slots=True)
class IndexFilter:
    """Constraints on what an index search returns: applied inside the query, or checked
    on the ranked hits, read on until ``k`` pass (never by cutting a short list)."""

    start: float | None = None
    end: float | None = None
    """A time range (epochs, inclusive) that the event's time (its ``event_start``, else
    when it was recorded) falls in, or, unless its source is one of :attr:`scheduled`,
    the moment it was recorded: "in July" holds what happened in July and what was said
    in July about August, not the July entry for an August appointment."""
    scheduled: frozenset[str] = frozenset()
    """Sources whose records plan happenings (a calendar): a time range matches them by
    the happening's time only (the caller says which: :func:`sources.scheduling_sources`)."""
    observed_before: float | None = None
    """Only what was recorded by then (a question asked at ``now`` sees memory as of now)."""
    users: frozenset[str] | None = None
    sources: frozenset[str] | None = None


class DerivedIndex(ABC):
    """An index built from the store's events; ``watermark`` is the last event id absorbed."""

    name: str
    watermark: int
    rebuilt_reason: str | None = None
    """Why the index was found unusable at open and started empty (None: it was fine)."""

    @abstractmethod
    def add(self, rows: Sequence[EventRecord]) -> None:
        """Absorb events (re-adding an id replaces it)."""

    @abstractmethod
    def remove(self, ids: Sequence[int]) -> None:
        """Forget events by id (they are no longer found; :meth:`erase` makes their
        content unreadable from the index's files too)."""

    def erase(self) -> None:  # noqa: B027 - a hook: a backend may erase on removal
        """Overwrite or drop what removed events left in the index's files (a backend
        whose removal already does so needs nothing here)."""

    @abstractmethod
    def labels(self) -> set[int]:
        """Every event id held (checked against the store at open)."""

    def event_count(self) -> int:
        """Events held (override with something cheaper than listing them)."""
        return len(self.labels())

    @abstractmethod
    def reset(self) -> None:
        """Drop everything (before a rebuild)."""

    @abstractmethod
    def persist(self) -> None:
        """Make what was absorbed durable and record the watermark."""

    @abstractmethod
    def close(self) -> None:
        """Persist and release files."""

    def __len__(self) -> int:
        return 0


class DenseIndex(DerivedIndex):
    """Nearest neighbours over event embeddings, filtered inside the search."""

    described: bool = True
    """Whether the filters know every indexed event (false when vectors were loaded from
    disk without them: catch-up then calls :meth:`describe` with every stored event)."""

    @abstractmethod
    def search(self, query: np.ndarray, viewer: str, k: int,
               where: IndexFilter | None = None) -> list[tuple[int, float]]:
        """The k nearest events the viewer may see within ``where``, as (id, cosine)."""

    @abstractmethod
    def search_all(self, query: np.ndarray, k: int, below: int | None = None,
                   ef: int | None = None) -> list[tuple[int, float]]:
        """The k nearest events regardless of audience, ids below ``below`` only (fusion's
        candidates; visibility is applied when fused memories are read); ``ef``: the
        search breadth of an approximate index (default: the configured one)."""

    @abstractmethod
    def similarities(self, query: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of ``query`` with each indexed id (ids not indexed are left out)."""

    def vector_of(self, text: str) -> np.ndarray | None:
        """The vector an event of exactly this text holds, if one is indexed (ingest then
        need not embed the text again); None when there is none or the backend cannot
        tell."""
        return None

    def describe(self, rows: Sequence[EventRecord]) -> None:  # noqa: B027 - optional hook
        """Learn what filters need of events whose vectors were loaded from disk."""

    def read_vectors_from(self, source: VectorSource) -> None:  # noqa: B027 - optional hook
        """Where to read events' vectors when scoring them exactly is cheaper than
        searching (the store; an index without the hook reads its own or never scores
        exactly)."""

    def compact_if_worthwhile(self, rows: Callable[[], Iterable[Sequence[EventRecord]]]
                              ) -> bool:
        """Rebuild without removed entries when that pays off; ``rows`` yields every
        live event. Returns whether it did."""
        return False


DocKind = Literal["event", "fused"]
EVENT: DocKind = "event"
FUSED: DocKind = "fused"


class TextHit(NamedTuple):
    """One text-search result: an event or a fused memory, by id, with its score."""

    kind: DocKind
    id: int
    score: float


class TextIndex(DerivedIndex):
    """Full-text search over events and over fused memories as whole documents."""

    @abstractmethod
    def search(self, text: str, viewer: str, k: int, where: IndexFilter | None = None,
               kinds: Sequence[DocKind] = (EVENT,)) -> list[TextHit]:
        """The k best documents of the given kinds the viewer may see within ``where``,
        in one ranking."""

    @abstractmethod
    def terms_of(self, text: str) -> frozenset[str]:
        """The terms a search for ``text`` ranks by: texts with the same terms get the
        same hits (a caller asking several phrasings of a question asks once)."""

    @abstractmethod
    def upsert_fused(self, docs: Sequence[tuple[int, str, float]], *,
                     commit: bool = True) -> None:
        """Index fused memories as (id, household-visible text, start epoch); an empty
        text removes the memory's document. ``commit=False`` leaves the change to be
        committed with the next :meth:`add` (an ingested batch: one commit, and a crash
        before it leaves the index behind the store, so catch-up rewrites the documents)."""

    @abstractmethod
    def remove_fused(self, ids: Sequence[int], *, commit: bool = True) -> None:
        """Drop fused-memory documents (``commit`` as in :meth:`upsert_fused`)."""

    @abstractmethod
    def fused_ids(self) -> set[int]:
        """Fused memories that have a document."""

    def erase_documents(self, events: Sequence[int], fused: Sequence[int]) -> None:
        """Delete these event and fused-memory documents so that nothing of them stays in
        the index's files once :meth:`erase` returns (a backend whose removal erases:
        removal)."""
        self.remove(events)
        self.remove_fused(fused)

    def search_events(self, text: str, viewer: str, k: int,
                      where: IndexFilter | None = None) -> list[tuple[int, float]]:
        """Events only, as (id, score)."""
        return [(h.id, h.score) for h in self.search(text, viewer, k, where)]
