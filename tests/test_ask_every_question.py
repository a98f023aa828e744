"""``ask`` never raises on a question: every question of the shared LifeBench person, in both
languages, with and without its options, answered extractively and with a model that
returns anything its schema allows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.adapters import lifebench_observations, lifebench_questions
from bench.quality import build
from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.timeutil import parse_ts

from .fakes import UnrulyLLM

pytestmark = pytest.mark.skipif(
    not (Path(__file__).parents[1].parent / "shared" / "data" / "lifebench").is_dir(),
    reason="the shared LifeBench data is not next to the repository")


@pytest.fixture(scope="module", params=["en", "zh"])
def lifebench(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
              model_dir: Path, embedder: Any) -> Iterator[tuple[Path, MemFuseConfig, str]]:
    """The shared person's memory in one language, built with the real embedder."""
    lang = request.param
    path = tmp_path_factory.mktemp(f"lifebench-{lang}") / "mem"
    config = MemFuseConfig(model_dir=model_dir, tz="UTC")
    build(path, lifebench_observations(lang), config, embedder).close()
    yield path, config, lang


def ask_all(mem: MemFuse, questions: list[dict[str, Any]], llm: bool) -> list[str]:
    """Ask every question (with its options, and the multiple-choice ones without them too);
    the failures, one line each."""
    failures: list[str] = []

    async def run() -> None:
        for n, q in enumerate(questions):
            now = parse_ts(q["now"]) if q["now"] else None
            # with a model, every fourth question through the agentic pipeline (it plans and
            # judges sufficiency with the model too)
            pipeline = "agentic" if llm and n % 4 == 0 else "fused"
            for choices in ([q["choices"], None] if q["choices"] else [None]):
                if llm and choices is None and q["choices"]:
                    continue
                try:
                    answer = await mem.ask(q["question"], viewer=q["viewer"], now=now,
                                           pipeline=pipeline, choices=choices)
                except Exception as exc:  # noqa: BLE001 - the failures are what is counted
                    failures.append(f"{q['id']} {pipeline} choices={bool(choices)}: "
                                    f"{type(exc).__name__}: {exc}")
                    continue
                if not answer.text.strip() or (choices and answer.choice not in choices):
                    failures.append(f"{q['id']}: empty answer or no letter ({answer!r:.200})")

    asyncio.run(run())
    return failures


def test_every_question_is_answered_extractively(lifebench: tuple[Path, MemFuseConfig, str],
                                                 embedder: Any) -> None:
    path, config, lang = lifebench
    questions = list(lifebench_questions(lang))
    mem = MemFuse(path, config=config, embedder=embedder)
    try:
        assert ask_all(mem, questions, llm=False) == []
    finally:
        mem.close()


def test_every_question_is_answered_whatever_the_model_returns(
        lifebench: tuple[Path, MemFuseConfig, str], embedder: Any) -> None:
    path, config, lang = lifebench
    questions = list(lifebench_questions(lang))
    llm = UnrulyLLM()
    cfg = MemFuseConfig(model_dir=config.model_dir, tz="UTC", answer_llm="unruly",
                        plan_llm="unruly")
    mem = MemFuse(path, config=cfg, embedder=embedder, llms={"unruly": llm})
    try:
        assert ask_all(mem, questions, llm=True) == []
    finally:
        mem.close()
    assert llm.meter.total().calls >= len(questions)
