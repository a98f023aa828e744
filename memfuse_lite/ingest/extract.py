"""Observation → atomic event drafts (the event layer's entry point).

Rule-based and source-aware: structured fields first, read through the source's profile
(a calendar entry's start and end, a call's contact, a photo's location), then the text (relative times in English and
Chinese resolved against the observation's timestamp, roles, names, places, entities).
"""

from __future__ import annotations

from ..event import EventRecord
from ..sources import actors_of, event_time_of, place_of, profile_of, thread_of
from ..store.sqlite import StoredObservation
from ..text.features import entities_of
from ..timeutil import to_epoch, to_iso


def extract_events(item: StoredObservation) -> list[EventRecord]:
    """One event per observation, with its event time, actors, place and entities (none
    for sources whose profile makes no events, such as contact cards)."""
    obs = item.observation
    if not profile_of(obs.source).makes_events:
        return []
    span = event_time_of(obs.source, obs.text, obs.meta, obs.ts)
    return [
        EventRecord(
            observation_ids=(item.id,),
            user=obs.user,
            source=obs.source,
            ts=to_iso(obs.ts),
            ts_epoch=to_epoch(obs.ts),
            text=obs.text,
            audience=obs.audience,
            event_start=to_iso(span[0]) if span else None,
            event_end=to_iso(span[1]) if span else None,
            actors=actors_of(obs.source, obs.text, obs.meta, obs.user),
            place=place_of(obs.source, obs.text, obs.meta),
            entities=entities_of(obs.text),
            thread=thread_of(obs.source, obs.meta),
        )
    ]
