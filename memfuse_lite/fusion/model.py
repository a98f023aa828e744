"""The view of an event that fusion reasons over, loaded from SQLite or built in a batch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone

import apsw
import numpy as np

from ..event import EventRecord
from ..text.features import has_cancel, has_reschedule, name_tokens
from ..timeutil import epoch_of, offset_of

DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class EventView:
    """One event's fusion features (times as epoch seconds)."""

    id: int
    user: str
    source: str
    text: str
    ts: float
    start: float | None
    end: float | None
    actors: frozenset[str]
    place: str | None
    entities: frozenset[str]
    vec: np.ndarray
    audience: tuple[str, ...] | None
    reschedule: bool
    cancel: bool
    names: frozenset[str]
    people: frozenset[str]
    """Its actors and entities: who and what it is about (compared with every candidate)."""
    thread: str | None = None
    """The conversation it is a message of (:func:`memfuse_lite.sources.thread_of`)."""
    offset: float = 0.0
    """Seconds east of UTC of the clock it was recorded by: its days are that clock's days
    (:meth:`day`; "tomorrow" in a message is its writer's tomorrow)."""

    @property
    def when(self) -> float:
        """The best single time for ordering: event start, else observation time."""
        return self.start if self.start is not None else self.ts

    def day(self, epoch: float) -> date:
        """The calendar day of ``epoch`` on the clock this event was recorded by."""
        return datetime.fromtimestamp(epoch + self.offset, tz=UTC).date()

    def local(self, epoch: float) -> datetime:
        """``epoch`` as a time on the clock this event was recorded by."""
        return datetime.fromtimestamp(epoch, tz=timezone(timedelta(seconds=self.offset)))


def _epoch(value: str | None) -> float | None:
    return None if value is None else epoch_of(value)


def view_from_row(row: Sequence[object]) -> EventView:
    """Build from ``SELECT`` :data:`VIEW_COLUMNS`."""
    (eid, user, source, text, ts_epoch, start, end, actors, place, entities, audience,
     blob, thread, ts) = row
    named: list[str] = json.loads(str(actors))
    actor_set = frozenset(a.lower() for a in named)
    entity_set = frozenset(json.loads(str(entities)))
    return EventView(
        id=int(eid),  # type: ignore[call-overload]
        user=str(user),
        source=str(source),
        text=str(text),
        ts=float(ts_epoch),  # type: ignore[arg-type]
        start=_epoch(start),  # type: ignore[arg-type]
        end=_epoch(end),  # type: ignore[arg-type]
        actors=actor_set,
        place=str(place).lower() if place else None,
        entities=entity_set,
        vec=np.frombuffer(blob, dtype=np.float32),  # type: ignore[call-overload]
        audience=None if audience is None else tuple(json.loads(str(audience))),
        reschedule=has_reschedule(str(text)),
        cancel=has_cancel(str(text)),
        names=name_tokens(str(text), frozenset(named)),
        people=actor_set | entity_set,
        thread=None if thread is None else str(thread),
        offset=offset_of(str(ts)),
    )


def view_of(record: EventRecord) -> EventView:
    """Build from a committed record (the batch being fused: no re-read of its rows)."""
    actor_set = frozenset(a.lower() for a in record.actors)
    entity_set = frozenset(record.entities)
    return EventView(
        id=record.id,
        user=record.user,
        source=record.source,
        text=record.text,
        ts=record.ts_epoch,
        start=_epoch(record.event_start),
        end=_epoch(record.event_end),
        actors=actor_set,
        place=record.place.lower() if record.place else None,
        entities=entity_set,
        vec=np.asarray(record.vector, dtype=np.float32),
        audience=record.audience,
        reschedule=has_reschedule(record.text),
        cancel=has_cancel(record.text),
        names=name_tokens(record.text, frozenset(record.actors)),
        people=actor_set | entity_set,
        thread=record.thread,
        offset=offset_of(record.ts),
    )


VIEW_COLUMNS = ("id, user, source, text, ts_epoch, event_start, event_end, actors, place, "
                "entities, audience, embedding, thread, ts")


def load_views(db: apsw.Connection, ids: Sequence[int]) -> dict[int, EventView]:
    """Views of the given events."""
    out: dict[int, EventView] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        for row in db.execute(f"SELECT {VIEW_COLUMNS} FROM events WHERE id IN ({marks})", chunk):
            out[int(row[0])] = view_from_row(row)
    return out


def last_views(db: apsw.Connection, n: int) -> list[EventView]:
    """The last ``n`` processed events, oldest first (the accumulation zone at open)."""
    rows = db.execute(f"SELECT {VIEW_COLUMNS} FROM events ORDER BY id DESC LIMIT ?",
                      (n,)).fetchall()
    return [view_from_row(r) for r in reversed(rows)]
