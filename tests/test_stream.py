"""Answers streamed while the model writes them: the JSON field reader and ``ask_stream``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memfuse_lite import MemFuse, MemFuseConfig, MemFuseError
from memfuse_lite.answer.support import NOT_STATED
from memfuse_lite.llm.stream import FieldStream

from .conftest import obs
from .fakes import ScriptedLLM


@pytest.mark.parametrize("value", [
    {"answer": "Ben picks \"Mia\" up at 3pm\\today\n周四 😀 \u00e9", "citations": [1, 2]},
    {"known": True, "answer": "", "citations": []},
    {"citations": [1], "answer": "x\ty\u2028z"},
])
def test_a_field_is_read_whole_however_the_text_is_cut(value: dict[str, object]) -> None:
    for raw in (json.dumps(value), json.dumps(value, ensure_ascii=False),
                json.dumps(value, indent=2)):
        for step in (1, 2, 3, 5, 11, len(raw)):
            got: list[str] = []
            reader = FieldStream("answer", got.append)
            for i in range(0, len(raw), step):
                reader.feed(raw[i:i + step])
            assert "".join(got) == value["answer"]
            assert reader.state == "done"


def test_text_after_the_field_is_not_passed_on() -> None:
    got: list[str] = []
    reader = FieldStream("answer", got.append)
    reader.feed('{"answer": "yes", "other": "no"}')
    reader.feed(' trailing "text"')
    assert got == ["yes"]


def ingest(mem: MemFuse, texts: list[str]) -> None:
    async def run() -> None:
        await mem.ingest_many([obs(t, ts=f"2025-03-0{i + 1}T09:00") for i, t in enumerate(texts)])
        await mem.flush()
    asyncio.run(run())


def read(mem: MemFuse, question: str) -> tuple[list[str], object]:
    async def run() -> tuple[list[str], object]:
        stream = mem.ask_stream(question, viewer="ana")
        pieces = [p async for p in stream]
        return pieces, stream.answer
    return asyncio.run(run())


@pytest.fixture
def seeded(tmp_path: Path, config: MemFuseConfig, embedder) -> Path:
    mem = MemFuse(tmp_path / "m", config=config, embedder=embedder)
    ingest(mem, ["Dentist appointment with Dr. Lin on Wednesday"])
    mem.close()
    return tmp_path / "m"


def with_model(path: Path, config: MemFuseConfig, embedder, answer: str) -> MemFuse:
    llm = ScriptedLLM(lambda op, prompt: {"answer": answer, "citations": [1], "known": True}
                      if op == "answer" else {"sufficient": True, "follow_up": ""})
    cfg = MemFuseConfig(model_dir=config.model_dir, tz="UTC", answer_llm="scripted")
    return MemFuse(path, config=cfg, embedder=embedder, llms={"scripted": llm})


@pytest.mark.parametrize(("said", "mode", "reason"), [
    ("On Wednesday, with Dr. Lin", "llm", None),
    # the records do not state it: streamed as written, then replaced
    ("On Friday at 5pm", "fallback", NOT_STATED),
])
def test_the_models_answer_streams_and_the_checked_answer_follows(
        seeded: Path, config: MemFuseConfig, embedder, said: str, mode: str,
        reason: str | None) -> None:
    mem = with_model(seeded, config, embedder, said)
    try:
        pieces, answer = read(mem, "When is the dentist?")
    finally:
        mem.close()
    assert "".join(pieces) == said
    assert answer.mode == mode  # type: ignore[attr-defined]
    if reason is None:
        assert answer.text.startswith(said) and answer.rejected is None  # type: ignore[attr-defined]
    else:
        assert "Dentist appointment" in answer.text  # type: ignore[attr-defined]
        assert (answer.rejected.reason, answer.rejected.text) == (reason, said)  # type: ignore[attr-defined]


def test_without_a_model_the_stream_is_the_extractive_answer(
        seeded: Path, config: MemFuseConfig, embedder) -> None:
    mem = MemFuse(seeded, config=config, embedder=embedder)
    try:
        pieces, answer = read(mem, "When is the dentist?")
        stream = mem.ask_stream("When is the dentist?", viewer="ana")
        with pytest.raises(MemFuseError, match="read to its end"):
            stream.answer  # noqa: B018 - the property raises
        assert asyncio.run(stream.text()) == answer.text  # type: ignore[attr-defined]
        with pytest.raises(MemFuseError, match="read once"):
            stream.__aiter__()
    finally:
        mem.close()
    assert pieces == [answer.text] and answer.mode == "extractive"  # type: ignore[attr-defined]
