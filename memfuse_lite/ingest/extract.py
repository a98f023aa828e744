"""Observation → atomic event drafts (the event layer's entry point)."""

from __future__ import annotations

from dataclasses import dataclass

from ..store.sqlite import StoredObservation
from ..timeutil import to_epoch, to_iso


@dataclass(frozen=True, slots=True)
class EventDraft:
    """An atomic event before embedding."""

    observation_id: int
    user: str
    source: str
    ts: str
    ts_epoch: float
    text: str
    audience: tuple[str, ...] | None


def extract_events(item: StoredObservation) -> list[EventDraft]:
    """One event per observation, carrying the observation's text and visibility."""
    obs = item.observation
    return [
        EventDraft(
            observation_id=item.id,
            user=obs.user,
            source=obs.source,
            ts=to_iso(obs.ts),
            ts_epoch=to_epoch(obs.ts),
            text=obs.text,
            audience=obs.audience,
        )
    ]
