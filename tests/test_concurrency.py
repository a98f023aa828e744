"""Producers, searches, asks and forgets at the same time: no deadlock, nothing lost or
doubled, and a search never sees half of a committed batch."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

from memfuse_lite import MemFuse, MemFuseConfig, NotFound
from memfuse_lite.config import IngestConfig

from .conftest import FakeEmbedder, obs

APPS = ["sms", "chat", "calendar", "call", "photo", "email"]
PIPELINES = ("bm25", "dense", "hybrid", "fused", "agentic")


def test_producers_searches_asks_and_forgets_run_together(tmp_path: Path) -> None:
    config = MemFuseConfig(model_dir=tmp_path, ingest=IngestConfig(batch_size=8,
                                                                   batch_latency_s=0.002))
    mem = MemFuse(tmp_path / "m", config=config, embedder=FakeEmbedder())
    stop = threading.Event()
    problems: list[str] = []
    searches = [0]

    def searcher(viewer: str) -> None:
        n = 0
        while not stop.is_set():
            pipeline = PIPELINES[n % len(PIPELINES)]
            n += 1
            try:
                result = mem.search("dentist record", viewer=viewer, pipeline=pipeline, k=20)
                for hit in result.hits:
                    if not hit.provenance:
                        problems.append(f"event {hit.event_id} without its source trail")
                    with contextlib.suppress(NotFound):  # forgotten since: allowed
                        mem.get_event(hit.event_id)
                if n % 7 == 0:
                    answer = asyncio.run(mem.ask("when is the dentist?", viewer=viewer))
                    if answer.known and not answer.citations:
                        problems.append("an answer without citations")
            except Exception as exc:  # noqa: BLE001 - any error is a finding
                problems.append(f"{pipeline}: {exc!r}")
            searches[0] += 1

    async def producer(app: str, user: str) -> list[str]:
        out = []
        for i in range(40):
            results = await mem.ingest_many([
                obs(f"{app} record {i}.{j} about the dentist and errand {i % 5}", source=app,
                    user=user, ts=f"2025-03-{1 + i % 28:02d}T10:{j:02d}", ext=f"{app}-{i}-{j}",
                    visibility="private" if j == 2 else "household")
                for j in range(3)])
            out += [r.status for r in results]
            if i % 10 == 9:  # forget one of our own records now and then
                await asyncio.to_thread(mem.forget, observation=results[0].observation_id)
        return out

    async def run() -> list[list[str]]:
        out = await asyncio.wait_for(asyncio.gather(
            *(producer(app, user) for app in APPS for user in ("ana", "ben"))), timeout=300)
        await asyncio.wait_for(mem.flush(), timeout=300)
        return out

    threads = [threading.Thread(target=searcher, args=(v,)) for v in ("ana", "ben")]
    for t in threads:
        t.start()
    try:
        statuses = asyncio.run(run())
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a searcher is stuck"
    assert problems == []
    assert searches[0] > 10
    assert all(s == "accepted" for group in statuses for s in group)
    forgotten = len(APPS) * 2 * 4
    stats = mem.stats()
    assert stats["observations"] == len(APPS) * 2 * 40 * 3 - forgotten
    assert stats["events"] == stats["observations"] and stats["inbox"] == 0
    with mem.engine.store.reading() as db:
        events = {int(r[0]) for r in db.execute("SELECT id FROM events")}
        doubled = db.execute("SELECT count(*) FROM (SELECT observation_id FROM event_sources"
                             " GROUP BY 1 HAVING count(*) > 1)").fetchone()[0]
    assert doubled == 0
    assert mem.engine.dense.labels() == events == mem.engine.text.labels()
    mem.close()
