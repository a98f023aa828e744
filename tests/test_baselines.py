"""Baselines and ceilings the benchmarks compare against: the long-context window, the
labelled episodes as memories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.baselines import LongContext
from memfuse_lite.timeutil import parse_ts


def test_window_keeps_the_newest_visible_records_before_now(e5_dir: Path) -> None:
    rows = [{"source": "sms", "external_id": f"m{i}", "user": "ana" if i % 2 else "ben",
             "ts": f"2025-03-{1 + i:02d}T09:00", "text": f"message number {i} " * 20,
             "visibility": "private" if i % 3 == 0 else "household"} for i in range(20)]
    lc = LongContext(rows, e5_dir, window_tokens=400)
    window = lc.context("ana", parse_ts("2025-03-15T12:00"))
    ids = [o["external_id"] for o in window]
    assert ids and ids == sorted(ids, key=lambda x: int(x[1:]))  # time order
    assert all(int(x[1:]) <= 14 for x in ids)  # nothing recorded after now
    assert "m14" in ids or "m13" in ids  # the newest visible ones are kept
    assert all(not (int(x[1:]) % 3 == 0 and int(x[1:]) % 2 == 0) for x in ids)  # ben's private
    assert len(ids) < 15  # the window cut the rest
    assert sum(lc.tokens[int(x[1:])] for x in ids) <= 400


def test_the_labelled_episodes_ceiling_keeps_fusions_member_cap() -> None:
    from bench.fusion_eval import bcubed, labelled_episodes

    rec = {4: "sms:c", 1: "sms:a", 2: "note:b", 3: "call:x", 5: "photo:d"}
    gold = {"sms:a": "e1", "note:b": "e1", "sms:c": "e1", "photo:d": "e2", "call:x": "call:x"}
    assign = labelled_episodes(rec, gold, cap=2)
    assert assign["sms:a"] == assign["note:b"] != assign["sms:c"], "the third record continues"
    assert len(set(assign.values())) == 4
    assert bcubed(assign, gold)["precision"] == 1.0


def test_a_missing_evidence_record_is_placed_against_the_found_ones() -> None:
    from bench.misses import place_of

    event_of = {"sms:a": 1, "call:b": 2, "note:c": 3, "photo:d": 4, "push:e": 5}
    memory_of = {1: 10, 2: 10, 3: 11, 4: 12, 5: 13}
    edges = {(3, 1): {"related"}, (1, 3): {"related"}}
    gold = {"sms:a": "e1", "call:b": "e1", "note:c": "e1", "photo:d": "e1", "push:e": "e2"}
    def place(record: str, found: list[str]) -> tuple[str, set[str]]:
        return place_of(record, found, event_of, memory_of, edges, gold)

    assert place("call:b", []) == ("nothing found", set())
    assert place("call:b", ["sms:a"]) == ("same memory", set())
    assert place("note:c", ["sms:a"]) == ("edge", {"related"})
    assert place("photo:d", ["sms:a"]) == ("no link, same episode", set())
    assert place("push:e", ["sms:a"]) == ("no link, other episode", set())


def test_another_lifebench_person_is_read_from_their_own_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import adapters

    phone = tmp_path / "lifebench" / "en" / "wangfang" / "phone_data"
    phone.mkdir(parents=True)
    (phone / "sms.json").write_text(json.dumps([
        {"phone_id": 7, "event_id": 3, "datetime": "2025-05-02 18:05:00",
         "message_type": "Receive", "contactName": "Dr. Lin",
         "message_content": "Your appointment moved to Thursday 15:00."},
        {"phone_id": 8, "message_type": "Send", "message_content": "no time on this one"}]))
    (phone.parent / "QA").mkdir()
    (phone.parent / "QA" / "QA_clean.json").write_text(json.dumps([
        {"question": "When is the appointment?", "ask_time": "2025-05",
         "evidence": [{"type": "sms", "id": 7}], "question_type": "Information Extraction"}]))
    monkeypatch.setattr(adapters, "DATA", tmp_path)

    assert adapters.lifebench_people("en") == ["wangfang"]
    # no other app's file; the record without a time is left out
    (obs,) = adapters.lifebench_observations("en", person="wangfang")
    assert (obs["source"], obs["external_id"], obs["user"]) == ("sms", "7", "wangfang")
    assert "event_id" not in obs["meta"]
    (q,) = adapters.lifebench_questions("en", person="wangfang")
    assert q["viewer"] == "wangfang" and q["evidence"] == [["sms", "7"]]
    assert adapters.lifebench_event_labels("en", "wangfang") == {("sms", "7"): "3"}
    assert adapters.lifebench_name("en", "wangfang") == "lifebench-en-wangfang"
    assert adapters.lifebench_name("en") == "lifebench-en"
    with pytest.raises(ValueError, match="people there: wangfang"):
        adapters.lifebench_dir("en", "leimingxuan")


def test_the_llms_pick_names_a_record_and_falls_back_to_the_first() -> None:
    from bench.citations import gold_share, llm_pick
    from memfuse_lite.records import Hit, Provenance
    from tests.fakes import ScriptedLLM

    def hit(i: int, *records: tuple[str, str]) -> Hit:
        return Hit(i, 1.0 / i, f"record {i}", tuple(
            Provenance(i, s, x, "ana", "phone", "2025-03-01T09:00") for s, x in records))

    hits = [hit(1, ("sms", "1")), hit(2, ("note", "2"), ("sms", "3")), hit(3, ("call", "4"))]
    assert llm_pick(ScriptedLLM({"extract": {"record": 2}}), "where?", hits) is hits[1]
    assert llm_pick(ScriptedLLM({"extract": {"record": 9}}), "where?", hits) is hits[0]
    assert gold_share(hits[1], {("note", "2")}) == 0.5
    assert gold_share(hits[2], {("note", "2")}) == 0.0
