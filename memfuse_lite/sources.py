"""Source profiles: what the structured fields of each kind of record mean.

A profile names the ``meta`` fields that carry the people involved, the place, and the
start and end of the happening, and says whether the record itself marks the moment
something happened (a call, a photo, a payment) or reports it (a chat about Thursday's
dentist). Sources without a profile of their own use :data:`DEFAULT`. Extraction and
fusion read profiles; nothing else names a source's fields.

>>> register_source(SourceProfile("voicemail", records_moment=True,        # doctest: +SKIP
...                               actor_fields=("caller",)))
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .errors import InvalidConfig
from .text.features import people_in, place_in
from .text.timeexpr import Span, resolve_time
from .timeutil import in_zone_of, parse_ts

MAX_ACTORS = 8


@dataclass(frozen=True, slots=True)
class SourceProfile:
    """How to read one source's records."""

    name: str
    actor_fields: tuple[str, ...] = ("contactName", "contact", "from", "to", "sender",
                                     "receiver", "recipient", "participants", "attendees",
                                     "with", "people", "speaker")
    """Fields naming the people involved (a string, a list, or objects with ``name``)."""
    place_fields: tuple[str, ...] = ("location", "place", "address", "venue", "poi")
    """Fields naming where (a string, or an object with poi/name/street/district/city)."""
    start_fields: tuple[str, ...] = ("start_time", "start", "starts_at", "begin")
    end_fields: tuple[str, ...] = ("end_time", "end", "ends_at")
    records_moment: bool = False
    """The record is made when the happening is (its timestamp is the event time)."""
    schedules: bool = False
    """The record plans a happening (a calendar entry): it belongs to the time of what it
    plans, not to when it was written. Other records are also found by when they were
    made ("what did Ben text in July" holds his July message about August)."""
    makes_events: bool = True
    """False for reference records (contact cards): stored, exported and forgotten like
    any observation, read by importers, but no event of their own."""
    thread_fields: tuple[str, ...] = ()
    """For messages: fields naming the conversation a record belongs to (a thread id, else
    the other party), the first one set wins. Messages of one conversation sent close
    together are one exchange, fused as one episode (``FusionConfig.thread_minutes``);
    none: records of this source are not messages of a conversation."""
    identity_fields: tuple[str, ...] | None = None
    """The ``meta`` fields that, beside the source, user, time and text, make a record
    itself (:func:`record_identity`): copies of one record from two devices agree on them,
    two records differ in one (an "ok" to Lena and an "ok" to Tom). None: all of ``meta``,
    so nothing that differs in any structured field is taken for a copy."""


MESSAGE_THREAD = ("thread_id", "thread", "conversation_id", "chat_id", "group", "contactName",
                  "phoneNumber", "address", "participants", "with")
"""Where messaging apps name the conversation: an id, a group, else the other party."""

MESSAGE_IDENTITY = ("chat", "chat_id", "group", "conversation_id", "contactName", "contact",
                    "phoneNumber", "address", "number", "from", "to", "sender", "receiver",
                    "recipient", "participants", "with", "speaker", "direction", "type", "box",
                    "seq")
"""What makes a message itself: the other party or the chat, who sent it, its direction
and its position among like messages of one minute (``seq``), never a device's own ids
(an Android ``thread_id`` differs between a phone and the laptop it syncs to)."""

CALL_IDENTITY = ("contactName", "contact", "phoneNumber", "number", "address", "direction",
                 "type", "duration_s", "duration")

DEFAULT = SourceProfile("*")
"""The profile of a source nobody registered."""

_PROFILES: dict[str, SourceProfile] = {}


def register_source(profile: SourceProfile) -> None:
    """Use ``profile`` for records whose source is ``profile.name`` (replacing any)."""
    if not profile.name or profile.name == DEFAULT.name:
        raise InvalidConfig("a source profile needs the source's name")
    _PROFILES[profile.name] = profile


def profile_of(source: str) -> SourceProfile:
    """The profile for a source (the default when it has none)."""
    return _PROFILES.get(source, DEFAULT)


def scheduling_sources() -> frozenset[str]:
    """The sources whose records plan a happening (:attr:`SourceProfile.schedules`)."""
    return frozenset(name for name, p in _PROFILES.items() if p.schedules)


for _profile in (
    replace(DEFAULT, name="call", end_fields=(*DEFAULT.end_fields, "datetime_end"),
            records_moment=True, identity_fields=CALL_IDENTITY),
    replace(DEFAULT, name="photo", actor_fields=(*DEFAULT.actor_fields, "faceRecognition"),
            records_moment=True),
    replace(DEFAULT, name="payment", records_moment=True),
    replace(DEFAULT, name="location", records_moment=True),
    replace(DEFAULT, name="fitness_health", records_moment=True),
    replace(DEFAULT, name="calendar", schedules=True),
    replace(DEFAULT, name="contact", makes_events=False),
    replace(DEFAULT, name="sms", thread_fields=MESSAGE_THREAD, identity_fields=MESSAGE_IDENTITY),
    replace(DEFAULT, name="mms", thread_fields=MESSAGE_THREAD, identity_fields=MESSAGE_IDENTITY),
    replace(DEFAULT, name="chat", thread_fields=MESSAGE_THREAD, identity_fields=MESSAGE_IDENTITY),
):
    register_source(_profile)


# -- reading a record through its profile ------------------------------------------


def actors_of(source: str, text: str, meta: Mapping[str, Any], user: str) -> tuple[str, ...]:
    """People involved: the profile's fields first, then people the text names; never
    the record's own user."""
    found: list[str] = []
    for key in profile_of(source).actor_fields:
        if key in meta:
            found.extend(_names(meta[key]))
    found.extend(people_in(text))
    seen: dict[str, None] = {}
    for name in found:
        key = name.strip()
        if key and key.lower() != user.lower():
            seen.setdefault(key, None)
    return tuple(list(seen)[:MAX_ACTORS])


def place_of(source: str, text: str, meta: Mapping[str, Any]) -> str | None:
    """Where: the profile's place fields, else a place the text names."""
    for key in profile_of(source).place_fields:
        if key in meta:
            place = _place(meta[key])
            if place:
                return place[:200]
    return place_in(text)


def event_time_of(source: str, text: str, meta: Mapping[str, Any], ts: datetime
                  ) -> Span | None:
    """When the happening is: the profile's start/end fields, the record's own time for
    sources that mark the moment, else a time the text states; None when unknown."""
    profile = profile_of(source)
    start = _meta_time(meta, profile.start_fields, ts)
    end = _meta_time(meta, profile.end_fields, ts)
    if start is not None:
        return start, end if end is not None and end >= start else start
    if profile.records_moment:
        return ts, end if end is not None and end >= ts else ts
    return resolve_time(text, ts)


def thread_of(source: str, meta: Mapping[str, Any]) -> str | None:
    """The conversation a message belongs to, from its profile's ``thread_fields``
    (the first set; several people as one sorted list, letters in lower case, a phone
    number's digits), or None: not a message, or no conversation named."""
    for key in profile_of(source).thread_fields:
        value = meta.get(key)
        if isinstance(value, int | float):  # a numeric thread id
            names = [str(value)]
        else:
            names = sorted({" ".join(n.lower().split()) for n in _names(value)})
        if not names:
            continue
        key_text = ", ".join(names)
        digits = re.sub(r"\D", "", key_text)
        if len(digits) >= 7 and not re.search(r"[^\d\s()+\-.]", key_text):
            key_text = digits[-10:]  # +1 (555) 010-2000 and 5550102000 are one number
        return f"{key}:{key_text}"[:200]
    return None


def record_identity(source: str, user: str, instant: str, text: str,
                    meta: Mapping[str, Any]) -> str:
    """sha256 of what makes a record itself: source, user, the instant it was recorded, its
    text and its profile's :attr:`~SourceProfile.identity_fields` (names in lower case,
    phone numbers by their last ten digits). Records alike in all of it are copies of one
    record (:meth:`memfuse_lite.store.sqlite.Store.insert_observations` says when copies
    are merged)."""
    fields = profile_of(source).identity_fields
    keys = sorted(meta) if fields is None else [k for k in fields if k in meta]
    payload = json.dumps([source, user, instant, text, [[k, _canonical(meta[k])] for k in keys]],
                         ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _canonical(value: object) -> object:
    """A field's value as copies from two apps agree on it (case, spacing, number format)."""
    if isinstance(value, str):
        text = " ".join(value.lower().split())
        digits = re.sub(r"\D", "", text)
        if len(digits) >= 7 and not re.search(r"[^\d\s()+\-.]", text):
            return digits[-10:]
        return text
    if isinstance(value, list | tuple):
        items = [_canonical(v) for v in value]
        texts = [i for i in items if isinstance(i, str)]
        return sorted(texts) if len(texts) == len(items) else items
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    return value


def _names(value: object) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,;、，/]| and ", value) if v.strip()]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _names(v)]
    if isinstance(value, Mapping):
        return [n for k in ("name", "contactName") if k in value for n in _names(value[k])]
    return []


def _place(value: object) -> str | None:
    if isinstance(value, Mapping):
        parts = [value.get(k) for k in ("poi", "name", "streetName", "district", "city")]
        text = ", ".join(str(p) for p in parts if p)
        return text or None
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _meta_time(meta: Mapping[str, Any], keys: tuple[str, ...], ts: datetime
               ) -> datetime | None:
    """The first time among ``keys``; one without an offset is read in the zone of the
    record's own time (a calendar entry's start is where its calendar is)."""
    for key in keys:
        value = meta.get(key)
        if value:
            try:
                return in_zone_of(parse_ts(value), ts)
            except ValueError:
                continue
    return None
