"""The one internal record of an atomic event, from extraction to the indexes.

Extraction drafts it from an observation (no id, no vector), the embedder fills in its
vector, the store assigns its id when the batch commits, and the derived indexes absorb
it. The public view of a stored event, with its source trail, is
:class:`memfuse_lite.records.AtomicEvent`; fusion reasons over
:class:`memfuse_lite.fusion.model.EventView`, built from this record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .timeutil import epoch_of


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One atomic event (times as ISO strings, as stored; epochs alongside for filters).

    Records read back for an index carry no ``observation_ids`` (indexes never need them).
    """

    user: str
    source: str
    ts: str
    ts_epoch: float
    text: str
    audience: tuple[str, ...] | None
    observation_ids: tuple[int, ...] = ()
    event_start: str | None = None
    event_end: str | None = None
    actors: tuple[str, ...] = ()
    place: str | None = None
    entities: tuple[str, ...] = ()
    embedding: np.ndarray | None = None
    thread: str | None = None
    """The conversation it is a message of, if any (:func:`memfuse_lite.sources.thread_of`)."""
    id: int = 0
    """0 until the store has assigned one."""
    when_epoch: float = field(init=False, compare=False)
    """The event's time: its start, else when observed (a time constraint matches it, or
    ``ts_epoch`` unless the source schedules happenings: :class:`IndexFilter`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "when_epoch", epoch_of(self.event_start)
                           if self.event_start else self.ts_epoch)

    @property
    def vector(self) -> np.ndarray:
        """The embedding (an error to ask before the record was embedded)."""
        if self.embedding is None:
            raise ValueError(f"event {self.id or '(draft)'} has no embedding yet")
        return self.embedding
