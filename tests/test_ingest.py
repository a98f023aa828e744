"""Durable asynchronous ingestion: concurrency, flush, duplicates, dead letters, replay."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.config import IngestConfig
from memfuse_lite.heap import HeapTrimmer

from .conftest import FakeEmbedder, obs


def test_concurrent_producers_lose_and_duplicate_nothing(open_memory) -> None:
    mem = open_memory()
    apps = ["sms", "chat", "calendar", "call", "photo", "email"]

    async def producer(app: str) -> list[str]:
        statuses = []
        for i in range(25):
            r = await mem.ingest(obs(f"{app} record {i} about the dentist", source=app,
                                     ts=f"2025-03-04T10:{i:02d}", ext=f"{app}-{i}"))
            statuses.append(r.status)
        return statuses

    async def run() -> list[list[str]]:
        out = await asyncio.gather(*(producer(a) for a in apps))
        await mem.flush()
        return out

    statuses = asyncio.run(run())
    assert all(s == "accepted" for group in statuses for s in group)
    stats = mem.stats()
    assert stats["observations"] == stats["events"] == 150
    assert stats["inbox"] == 0
    assert stats["dense_index"]["size"] == stats["sparse_index"]["size"] == 150


def test_flush_makes_everything_searchable_and_duplicates_are_reported(open_memory) -> None:
    mem = open_memory()

    async def run():
        first = await mem.ingest_many([obs("Dentist Wed 15:00", source="calendar", ext="k1"),
                                       obs("dentist moved to Thursday", ext="c1")])
        again = await mem.ingest_many([obs("Dentist Wed 15:00", source="calendar", ext="k1"),
                                       obs("dentist moved to Thursday", ext="c1-copy",
                                           device="laptop")])
        await mem.flush()
        return first, again

    first, again = asyncio.run(run())
    assert [r.status for r in first] == ["accepted", "accepted"]
    assert [r.status for r in again] == ["duplicate", "duplicate"]
    assert [r.observation_id for r in again] == [r.observation_id for r in first]
    hits = mem.search("dentist", viewer="ana", pipeline="bm25").hits
    assert len(hits) == 2


def test_a_failing_observation_is_dead_lettered_and_does_not_block(tmp_path: Path,
                                                                    config) -> None:
    mem = MemFuse(tmp_path / "m", config=config, embedder=FakeEmbedder())

    async def run() -> None:
        await mem.ingest_many([obs("fine one", ext="1"), obs("poison pill", ext="2"),
                               obs("fine two", ext="3")])
        await mem.flush()
        await mem.ingest(obs("fine again later", ext="4"))
        await mem.flush()

    asyncio.run(run())
    dead = mem.dead_letters()
    assert len(dead) == 1 and "poisoned text" in dead[0][1]
    stats = mem.stats()
    assert stats["events"] == 3 and stats["inbox"] == 0
    assert {h.text for h in mem.search("fine", viewer="ana", pipeline="bm25").hits} == {
        "fine one", "fine two", "fine again later"}
    mem.close()


class CountingEmbedder(FakeEmbedder):
    """The fake embedder, noting each passage it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.passages: list[str] = []

    def embed_batch(self, texts, role):  # type: ignore[no-untyped-def]
        if role == "passage":
            self.passages += list(texts)
        return super().embed_batch(texts, role)


def test_a_text_is_embedded_once_and_again_only_after_it_was_forgotten(tmp_path: Path,
                                                                        config) -> None:
    embedder = CountingEmbedder()
    mem = MemFuse(tmp_path / "m", config=config, embedder=embedder)
    call = "Outgoing call to HomeCare Repairs, 5 min"

    def calls(*hours: int):  # type: ignore[no-untyped-def]
        return [obs(call, source="call", ts=f"2025-03-04T{h:02d}:00") for h in hours]

    async def ingest(observations) -> None:  # type: ignore[no-untyped-def]
        await mem.ingest_many(observations)
        await mem.flush()

    try:
        asyncio.run(ingest([*calls(9, 10), obs("Parcel delivered to the door")]))
        assert len(embedder.passages) == 2, "the call once, however often it recurs"
        asyncio.run(ingest([*calls(11), obs("Dinner with grandma")]))
        assert len(embedder.passages) == 3, "a call the index holds is not embedded again"
        hits = mem.search("HomeCare Repairs call", viewer="ana", pipeline="dense", k=3).hits
        assert [h.provenance[0].ts[:13] for h in hits] == [
            "2025-03-04T11", "2025-03-04T10", "2025-03-04T09"]
        mem.forget(source="call")
        asyncio.run(ingest(calls(12)))
        assert len(embedder.passages) == 4, "once forgotten, the text is embedded anew"
    finally:
        mem.close()


def test_unprocessed_inbox_is_replayed_on_open(tmp_path: Path, config) -> None:
    path = tmp_path / "m"
    mem = MemFuse(path, config=config, embedder=FakeEmbedder())
    # Acknowledge without ever running the worker: as if the process died right after.
    mem.engine.store.insert_observations([obs(f"errand {i}", ext=str(i)) for i in range(5)])
    mem.close()
    mem = MemFuse(path, config=config, embedder=FakeEmbedder())
    assert mem.stats()["inbox"] == 5

    async def run() -> None:
        await mem.flush()

    asyncio.run(run())
    assert mem.stats()["events"] == 5 and mem.stats()["inbox"] == 0
    mem.close()


@pytest.mark.parametrize("kill_after", [3, 12, 30])
def test_sigkill_after_acknowledgement_loses_nothing(tmp_path: Path, model_dir: Path,
                                                     embedder, kill_after: int) -> None:
    db = tmp_path / "m"
    env = {**os.environ, "MEMFUSE_MODEL_DIR": str(model_dir)}
    child = Path(__file__).with_name("_crash_child.py")
    proc = subprocess.Popen([sys.executable, str(child), str(db), "0"], stdout=subprocess.PIPE,
                            text=True, env=env, cwd=Path(__file__).parents[1])
    acked: list[str] = []
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while len(acked) < kill_after and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(acked) >= kill_after, "the child never acknowledged enough observations"

    config = MemFuseConfig(model_dir=model_dir, ingest=IngestConfig(batch_latency_s=0.005))
    mem = MemFuse(db, config=config, embedder=embedder)

    async def run() -> None:
        await mem.flush()

    asyncio.run(run())
    with mem.engine.store.reading() as conn:
        rows = conn.execute("SELECT external_id, count(*) FROM observations GROUP BY 1").fetchall()
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    counts = dict(rows)
    assert all(counts.get(e) == 1 for e in acked), "an acknowledged observation was lost"
    assert max(counts.values()) == 1
    assert events == len(counts)
    assert mem.engine.dense.labels() == mem.engine.text.labels() == set(range(1, events + 1))
    mem.close()


def test_the_queue_prepares_the_next_batch_while_the_previous_one_commits() -> None:
    import threading

    from memfuse_lite.ingest.queue import IngestQueue

    log: list[tuple[str, tuple[int, ...]]] = []
    second_prepare_started = threading.Event()

    def prepare(ids: list[int]) -> tuple[int, ...]:
        log.append(("prepare", tuple(ids)))
        if len([op for op, _ in log if op == "prepare"]) == 2:
            second_prepare_started.set()
        return tuple(ids)

    overlapped: list[bool] = []

    def commit(batch: tuple[int, ...]) -> int:
        if not overlapped:  # the first commit waits to see the next batch being prepared
            overlapped.append(second_prepare_started.wait(timeout=10))
        log.append(("commit", batch))
        return len(batch)

    async def run() -> None:
        queue = IngestQueue(prepare, commit, IngestConfig(batch_size=2, batch_latency_s=0.01))
        await queue.put(list(range(6)))
        await queue.join()
        await queue.close()

    asyncio.run(run())
    assert overlapped == [True], "the second batch was prepared only after the first commit"
    commits = [batch for op, batch in log if op == "commit"]
    assert [i for batch in commits for i in batch] == list(range(6)), "in order, all of them"


def test_heap_trimmer_trims_at_most_once_per_interval() -> None:
    calls: list[int] = []
    trimmer = HeapTrimmer(3600.0, trim=lambda pad: calls.append(pad) or 1)
    assert not trimmer.maybe_release(), "the interval starts when the trimmer is made"
    trimmer._last -= 3601.0
    assert trimmer.maybe_release() and calls == [0]
    assert not trimmer.maybe_release() and calls == [0]
    never = HeapTrimmer(0.0, trim=lambda pad: calls.append(pad) or 1)
    never._last -= 10**6
    assert not never.maybe_release() and calls == [0]
    with pytest.raises(ValueError, match="trim_interval_s"):
        IngestConfig(trim_interval_s=-1.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_ingest_hands_freed_heap_back_between_commits(tmp_path: Path, config) -> None:
    cfg = replace(config, ingest=IngestConfig(batch_size=4, batch_latency_s=0.0,
                                              trim_interval_s=1e-9))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=FakeEmbedder())

    async def run() -> None:
        for i in range(3):
            await mem.ingest_many([obs(f"note {i}-{j} about the boiler", ext=f"n{i}-{j}")
                                   for j in range(4)])
            await mem.flush()

    asyncio.run(run())
    assert mem._processor.trimmer.calls >= 3, "one trim after each commit at this interval"
    assert mem.stats()["events"] == 12
    mem.close()
