"""One clock: times without an offset are read in the memory's home zone, and records
from importers (with offsets), JSONL (without) and assistants compare as instants."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import pytest

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.config import IngestConfig, RetrievalConfig
from memfuse_lite.importers import ImportContext, read
from memfuse_lite.store import Store

from .conftest import FakeEmbedder


def memory(path: Path, tz: str | None) -> MemFuse:
    """The fake embedder: these tests are about time, not vectors."""
    return MemFuse(path, embedder=FakeEmbedder(), config=MemFuseConfig(
        tz=tz, ingest=IngestConfig(batch_size=16, batch_latency_s=0.01)))


def put(mem: MemFuse, *records: Observation) -> list[str]:
    async def run() -> list[str]:
        results = await mem.ingest_many(list(records))
        await mem.flush()
        return [r.status for r in results]

    return asyncio.run(run())


def note(ts: str, text: str = "dentist moved to Thursday", ext: str = "") -> Observation:
    return Observation(source="note", user="ana", ts=ts, text=text, external_id=ext)


def found(mem: MemFuse, now: object, query: str = "dentist") -> list[str]:
    hits = mem.search(query, viewer="ana", pipeline="bm25", now=now).hits  # type: ignore[arg-type]
    return [h.provenance[0].external_id for h in hits]


@pytest.mark.parametrize(("record", "before", "after"), [
    # an importer's record (with an offset); `now` as a person types it (without)
    ("2025-03-04T12:10:00+08:00", "2025-03-04T12:09", "2025-03-04T12:11"),
    # a JSONL record (without); `now` as another program gives it (with an offset)
    ("2025-03-04T12:10:00", "2025-03-04T04:09:00Z", "2025-03-04T04:11:00+00:00"),
    ("2025-03-04T12:10:00", datetime(2025, 3, 4, 12, 9), datetime(2025, 3, 4, 12, 11)),
])
def test_now_a_minute_either_side_of_a_record_across_the_offset(
        tmp_path: Path, record: str, before: object, after: object) -> None:
    with memory(tmp_path / "m", "Asia/Shanghai") as mem:
        assert put(mem, note(record, ext="r1")) == ["accepted"]
        assert found(mem, before) == []
        assert found(mem, after) == ["r1"]
        assert mem.get_event(1).ts == "2025-03-04T12:10:00+08:00"  # kept, with its offset


def test_the_same_record_with_and_without_an_offset_is_one_record(tmp_path: Path) -> None:
    with memory(tmp_path / "m", "Asia/Shanghai") as mem:
        assert put(mem, note("2025-03-04T12:10"), note("2025-03-04T12:10:00+08:00"),
                   note("2025-03-04T04:10:00Z")) == ["accepted", "duplicate", "duplicate"]
        assert put(mem, note("2025-03-04T12:10:00+00:00")) == ["accepted"]  # 8 hours later


def test_clocks_going_back_and_forward(tmp_path: Path) -> None:
    """Berlin: 02:30 happened twice on 26 October 2025 and never on 30 March 2025."""
    with memory(tmp_path / "m", "Europe/Berlin") as mem:
        put(mem, note("2025-10-26T02:30:00+02:00", ext="first-0230"),
            note("2025-03-30T02:30", "dentist at a time that never was", ext="gap"))
        # 02:10 after the clocks went back is 40 minutes after the record
        assert found(mem, "2025-10-26T02:10:00+01:00", "moved") == ["first-0230"]
        # a repeated hour without an offset is its first occurrence
        assert found(mem, "2025-10-26T02:20", "moved") == []
        assert found(mem, "2025-10-26T02:40", "moved") == ["first-0230"]
        # a time skipped when clocks went forward is read with the offset before the change
        assert found(mem, "2025-03-30T03:29:00+02:00", "never") == []
        assert found(mem, "2025-03-30T03:31:00+02:00", "never") == ["gap"]


def test_a_question_names_days_where_it_is_asked(tmp_path: Path) -> None:
    """Half past midnight in Shanghai on 4 March is 3 March in UTC, and 7 am on 5 March
    is still 4 March there: the question's day is Shanghai's."""
    config = MemFuseConfig(tz="Asia/Shanghai", retrieval=RetrievalConfig(use_expansion=False),
                           ingest=IngestConfig(batch_size=16, batch_latency_s=0.01))
    with MemFuse(tmp_path / "m", embedder=FakeEmbedder(), config=config) as mem:
        put(mem, note("2025-03-04T00:30+08:00", "dentist appointment booked", ext="on-the-4th"),
            note("2025-03-05T07:00+08:00", "dentist appointment reminder", ext="on-the-5th"))
        hits = mem.search("dentist appointment on March 4", viewer="ana", pipeline="fused",
                          now="2025-03-10T09:00").hits
        assert [h.provenance[0].external_id for h in hits] == ["on-the-4th"]


def test_an_importer_reads_times_in_the_home_zone(tmp_path: Path) -> None:
    chat = tmp_path / "WhatsApp Chat with Ben.txt"
    chat.write_text("09/01/2025, 08:05 - Ben: dentist moved\n", encoding="utf-8")
    with memory(tmp_path / "m", "Asia/Shanghai") as mem:
        ctx = ImportContext(user="ana", tz=mem.engine.clock.zone)
        (obs,) = read("whatsapp", chat, ctx)
        assert isinstance(obs, Observation) and put(mem, obs) == ["accepted"]
        assert put(mem, Observation(source="chat", user="ana", ts="2025-01-09T08:05",
                                    text="Ben: dentist moved",
                                    meta={"sender": "Ben", "chat": "Ben"})) == ["duplicate"]


def test_the_home_zone_is_recorded_when_a_memory_is_made(tmp_path: Path) -> None:
    with memory(tmp_path / "m", "Asia/Shanghai") as mem:
        assert mem.tz == "Asia/Shanghai" and mem.stats()["time_zone"] == "Asia/Shanghai"
    with memory(tmp_path / "m", None) as mem:
        assert mem.tz == "Asia/Shanghai"
    with memory(tmp_path / "m", "Europe/Berlin") as mem:  # this session reads in Berlin
        assert mem.tz == "Europe/Berlin"
    with memory(tmp_path / "m", None) as mem:
        assert mem.tz == "Asia/Shanghai"


def test_a_memory_from_before_home_zones_keeps_reading_utc(tmp_path: Path) -> None:
    path = tmp_path / "old"
    path.mkdir()
    store = Store(path / "memfuse.db")
    store.insert_observations([note("2025-03-04T12:10", ext="old")])
    store.close()
    with memory(path, None) as mem:
        assert mem.tz == "UTC"
