"""Observation validation and the JSON forms."""

from __future__ import annotations

from datetime import datetime

import pytest

from memfuse_lite import InvalidObservation, Observation

GOOD = {"source": "sms", "user": "ana", "ts": "2025-03-04T12:00:00", "text": "hello"}


def make(**changes: object) -> Observation:
    fields = {**GOOD, **changes}
    return Observation(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"source": ""}, "source"),
        ({"source": None}, "source"),
        ({"user": ""}, "user"),
        ({"user": "   "}, "user"),
        ({"text": ""}, "text"),
        ({"text": "  \n"}, "text"),
        ({"text": "x" * (64 * 1024 + 1)}, "text"),
        ({"text": "nul\x00byte"}, "text"),
        ({"text": "\ud800 lone surrogate"}, "text"),
        ({"ts": "yesterday"}, "ts"),
        ({"ts": "1066-10-14T09:00"}, "ts"),
        ({"ts": ""}, "ts"),
        ({"meta": {"x": object()}}, "meta"),
        ({"meta": {"x": float("nan")}}, "meta"),
        ({"meta": ["not", "a", "dict"]}, "meta"),
        ({"visibility": "secret"}, "visibility"),
        ({"visibility": []}, "visibility"),
        ({"device": "a\x00b"}, "device"),
        ({"user": 7}, "user"),
    ],
)
def test_bad_observation_names_the_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidObservation) as info:
        make(**changes)
    assert info.value.field == field


def test_deeply_nested_meta_is_rejected_without_recursion_error() -> None:
    meta: dict[str, object] = {}
    cur = meta
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]  # type: ignore[assignment]
    with pytest.raises(InvalidObservation) as info:
        make(meta=meta)
    assert info.value.field == "meta"


def test_normalisation_and_defaults() -> None:
    o = make(source=" SMS ", visibility=["ben", "ben", "cy"], external_id=42)
    assert o.source == "sms"
    assert o.visibility == ("ben", "cy")
    assert o.external_id == "42"
    assert o.audience == ("ana", "ben", "cy")
    assert isinstance(o.ts, datetime)
    assert make().audience is None
    assert make(visibility="private").audience == ("ana",)
    assert make().external_id.startswith("sha256:")


def test_identity_ignores_device_and_id_but_not_text_or_counterpart() -> None:
    a = make(device="phone", external_id="1", meta={"phoneNumber": "+1 (555) 010-2000"})
    b = make(device="laptop", external_id="2", meta={"phoneNumber": "5550102000",
                                                      "thread_id": 7})
    assert a.identity == b.identity  # a device's own thread id is not the record
    assert make(text="other").identity != make().identity
    assert make(meta={"to": "Lena"}).identity != make(meta={"to": "Tom"}).identity
    assert make(meta={"direction": "sent"}).identity != make(meta={"direction": "received"}).identity


def test_identity_of_a_source_without_profile_holds_all_its_fields() -> None:
    a = make(source="journal", meta={"mood": "calm"})
    assert a.identity != make(source="journal", meta={"mood": "tired"}).identity
    assert a.identity == make(source="journal", meta={"mood": " Calm "}).identity


def test_json_round_trip_and_unknown_keys() -> None:
    o = make(meta={"contact": "Dr. Lin", "n": [1, 2]}, visibility=["ben"])
    assert Observation.from_json(o.to_json()) == o
    with pytest.raises(InvalidObservation) as info:
        Observation.from_json({**GOOD, "colour": "red"})
    assert info.value.field == "colour"
    with pytest.raises(InvalidObservation) as info:
        Observation.from_json({"source": "sms", "user": "a", "text": "x"})
    assert info.value.field == "ts"


@pytest.mark.parametrize("field, value", [
    ("user", "a\ud800"), ("source", "s\udfff"), ("device", "\ud800"), ("external_id", "x\ud800"),
    ("text", "lone \ud800 surrogate"), ("meta", {"k": "\ud800"}), ("meta", {"\ud800": 1}),
    ("visibility", ["\ud800"]),
])
def test_lone_surrogates_are_refused_in_every_field(field: str, value: object) -> None:
    fields: dict[str, object] = {"source": "sms", "user": "ana", "ts": "2025-01-01T09:00",
                                 "text": "hello"}
    fields[field] = value
    with pytest.raises(InvalidObservation) as info:
        Observation(**fields)  # type: ignore[arg-type]
    assert info.value.field == field
