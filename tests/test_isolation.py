"""Zero leaks: every question of a generated household, asked as every user."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from bench.gen import GenConfig, generate
from bench.isolation import RECORDER_CONFIG, check, recorder_llms
from memfuse_lite import Observation


def test_every_question_as_every_user_leaks_nothing(open_memory, config) -> None:
    gen = generate(GenConfig(seed=9, size=400, questions=24))
    mem = open_memory(config=replace(config, **RECORDER_CONFIG), llms=recorder_llms())

    async def ingest() -> None:
        await mem.ingest_many([Observation.from_json(o) for o in gen.observations])
        await mem.flush()

    asyncio.run(ingest())
    users = sorted({o["user"] for o in gen.observations})
    assert mem.stats()["fused_memories"] < mem.stats()["events"]  # something fused
    report = check(mem, gen.questions, users)
    assert report.searches == len(gen.questions) * len(users) * 5
    assert report.asks == len(gen.questions) * len(users) and report.shows > 0
    assert report.leaks == 0, report.examples


def test_the_check_sees_a_leak(open_memory, config, monkeypatch) -> None:
    """The checker is not blind: with visibility switched off it finds the leak."""
    mem = open_memory(config=replace(config, **RECORDER_CONFIG), llms=recorder_llms())
    secret = Observation(source="note", user="ana", ts="2025-03-01T09:00", visibility="private",
                         text="ana's private note: the safe code is 4711, tell nobody")

    async def ingest() -> None:
        await mem.ingest_many([secret])
        await mem.flush()

    asyncio.run(ingest())
    dense = mem.engine.dense  # break visibility inside the dense index (all household) …
    monkeypatch.setattr(dense, "search", lambda query, viewer, k, where=None:
                        dense.search_all(query, k))
    for module in ("memfuse_lite.retrieve.plain", "memfuse_lite.retrieve.fused"):
        monkeypatch.setattr(f"{module}.can_see", lambda viewer, audience: True)  # … and after
    report = check(mem, [{"text": "safe code", "now": None}], ["ben"], pipelines=("dense",))
    assert report.hit_leaks >= 1 and report.prompt_leaks >= 1
