"""Source profiles: what a source's fields mean is declared once and read by extraction."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from memfuse_lite import MemFuse, SourceProfile, register_source
from memfuse_lite.sources import (
    _PROFILES,
    DEFAULT,
    actors_of,
    event_time_of,
    place_of,
    profile_of,
    thread_of,
)

from .conftest import FakeEmbedder, obs

TS = datetime.fromisoformat("2025-03-04T12:00")


@pytest.fixture
def voicemail():
    register_source(SourceProfile("voicemail", actor_fields=("caller",),
                                  place_fields=("left_at",), records_moment=True))
    yield
    del _PROFILES["voicemail"]


def test_unknown_sources_read_the_default_fields() -> None:
    assert profile_of("some-new-app") is DEFAULT
    meta = {"contact": "Zhou Tao", "location": "Harbour Cafe", "start": "2025-03-07T19:00"}
    assert actors_of("some-new-app", "lunch", meta, "ana") == ("Zhou Tao",)
    assert place_of("some-new-app", "lunch", meta) == "Harbour Cafe"
    span = event_time_of("some-new-app", "lunch", meta, TS)
    assert span is not None and span[0] == datetime.fromisoformat("2025-03-07T19:00")
    # a reported happening without a time has none; the record's own time is not it
    assert event_time_of("some-new-app", "we should meet", {}, TS) is None


def test_a_registered_profile_changes_what_is_read(voicemail: None) -> None:
    meta = {"caller": "Dr. Lin's clinic", "left_at": "front desk"}
    assert actors_of("voicemail", "please call back", meta, "ana") == ("Dr. Lin's clinic",)
    assert place_of("voicemail", "please call back", meta) == "front desk"
    assert event_time_of("voicemail", "please call back", meta, TS) == (TS, TS)
    # the same fields mean nothing to a source without that profile
    assert actors_of("note", "please call back", meta, "ana") == ()
    assert event_time_of("note", "please call back", meta, TS) is None


def test_profiles_reach_stored_events(voicemail: None, tmp_path) -> None:
    async def run() -> list:
        async with MemFuse(tmp_path / "m", embedder=FakeEmbedder()) as mem:
            await mem.ingest_many([obs("please call back about Thursday", source="voicemail",
                                       meta={"caller": "Dr. Lin's clinic"})])
            await mem.flush()
            hit = mem.search("call back", viewer="ana", pipeline="bm25").hits[0]
            return [mem.get_event(hit.event_id)]

    (event,) = asyncio.run(run())
    assert event.actors == ("Dr. Lin's clinic",)
    assert event.event_start == event.ts  # a voicemail marks the moment it was left


def test_a_profile_needs_a_name() -> None:
    with pytest.raises(ValueError):
        register_source(SourceProfile(""))


def test_a_message_names_its_conversation_however_the_app_spells_it() -> None:
    assert thread_of("sms", {"contactName": "Lena  Wu"}) == thread_of(
        "sms", {"contactName": "lena wu"})
    assert thread_of("sms", {"phoneNumber": "+1 (555) 010-2000"}) == thread_of(
        "sms", {"phoneNumber": "555-010-2000"})
    assert thread_of("chat", {"participants": ["Ben", "Ana"]}) == thread_of(
        "chat", {"participants": ["ana", "ben"]})
    # a thread id wins over the other party; another party is another conversation
    assert thread_of("chat", {"thread_id": 42, "contactName": "Ben"}) == thread_of(
        "chat", {"thread_id": 42, "contactName": "Ana"})
    assert thread_of("sms", {"contactName": "Lena"}) != thread_of("sms", {"contactName": "Ben"})
    # not a message, or no conversation named: none
    assert thread_of("note", {"contactName": "Lena"}) is None
    assert thread_of("sms", {"contactName": " "}) is None
