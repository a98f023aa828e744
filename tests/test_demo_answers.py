"""The demo household's questions are answered correctly with and without a local LLM:
the real model's answer is kept only when the records it cites state it, so a weak model
cannot make an answer wrong (it can only fall back to the extractive one)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.demo import NOW, QUESTIONS, ingest_concurrently, observations

EXPECTED = [
    ("Thursday", "4"),  # the moved appointment, not Wednesday's calendar entry
    ("flight", "delay"),
    ("周五",),  # Friday
    ("don't know",),  # ana may not see ben's private note about her gift
    ("jade bracelet",),
]


@pytest.mark.parametrize("llm", [None, "smollm2-135m"])
def test_demo_questions(tmp_path: Path, embedder, model_dir: Path, llm: str | None) -> None:
    config = MemFuseConfig(model_dir=model_dir, answer_llm=llm)

    async def run() -> list:
        async with MemFuse(tmp_path / "demo", config=config, embedder=embedder) as mem:
            await ingest_concurrently(mem, observations())  # as `memfuse demo` does
            await mem.flush()
            return [await mem.ask(q, viewer=viewer, now=NOW) for viewer, q in QUESTIONS]

    answers = asyncio.run(run())
    assert len(answers) == len(EXPECTED)
    for answer, facts in zip(answers, EXPECTED, strict=True):
        text = answer.text.lower()
        assert all(f.lower() in text for f in facts), (answer.mode, answer.text)
        assert answer.mode == ("extractive" if llm is None else answer.mode)
        assert "wednesday" not in text or "replaces" in text
    assert answers[3].citations == () and not answers[3].known
