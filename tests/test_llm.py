"""The llama.cpp wrapper: schema-constrained JSON, token accounting, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfuse_lite import LLMError, ModelError
from memfuse_lite.llm import LlamaCppLLM, TokenMeter, Usage
from memfuse_lite.llm.grammar import looping
from memfuse_lite.prepare import resolve_llm_file

SCHEMA = {
    "type": "object",
    "properties": {
        "what": {"type": "string"},
        "when": {"type": "string"},
        "people": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
    },
    "required": ["what", "when", "people"],
}


@pytest.fixture(scope="module")
def llm(model_dir: Path) -> LlamaCppLLM:
    return LlamaCppLLM(resolve_llm_file("smollm2-135m", model_dir), n_ctx=1024)


def test_extraction_returns_schema_valid_json_with_token_counts(llm: LlamaCppLLM) -> None:
    messages = [
        {"role": "system", "content": "Extract the event from the message as JSON."},
        {"role": "user", "content": "Mom: the clinic moved my dentist to Thursday 4pm."},
    ]
    value, completion = llm.complete_json(messages, SCHEMA, max_tokens=160, operation="extract")
    assert isinstance(value["what"], str) and isinstance(value["when"], str)
    assert isinstance(value["people"], list)
    assert completion.usage.prompt_tokens > 10 and completion.usage.completion_tokens > 0
    assert completion.usage.calls == 1
    llm.complete(messages, max_tokens=8, operation="answer")
    meter = llm.meter.snapshot()
    assert meter["extract"] == completion.usage
    assert meter["answer"].calls == 1
    assert llm.meter.total().total_tokens == sum(u.total_tokens for u in meter.values())


@pytest.mark.parametrize("text", [
    "Mom: the clinic moved my dentist to Thursday 4pm.",
    "妈妈：牙医改到周四下午四点了，爸爸去接米娅。",
    "ok",
])
def test_greedy_grammar_writes_what_the_full_grammar_pass_writes(
        llm: LlamaCppLLM, model_dir: Path, text: str) -> None:
    # asking the grammar about the chosen token only must not change a single token
    # (a completion that loops ends early instead of at the limit: "ok" makes it loop)
    full = LlamaCppLLM(resolve_llm_file("smollm2-135m", model_dir), n_ctx=1024,
                       greedy_grammar=False)
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"],
                                       "kind": {"enum": ["visit", "call", "other"]}},
              "required": ["kind", *SCHEMA["required"]]}
    messages = [{"role": "system", "content": "Extract the event from the message as JSON."},
                {"role": "user", "content": text}]
    try:
        want = full.complete(messages, max_tokens=96, schema=schema)
    finally:
        full.close()
    got = llm.complete(messages, max_tokens=96, schema=schema)
    if got.usage.completion_tokens < want.usage.completion_tokens:  # a loop, cut short
        assert want.usage.completion_tokens == 96 and want.text.startswith(got.text)
    else:
        assert got.text == want.text
        assert got.usage.completion_tokens == want.usage.completion_tokens


def test_a_completion_that_repeats_itself_ends_where_the_loop_shows(
        llm: LlamaCppLLM, model_dir: Path) -> None:
    schema = {"type": "object", "properties": {"what": {"type": "string"}},
              "required": ["what"]}
    messages = [{"role": "system", "content": "Answer in JSON."},
                {"role": "user", "content": "Continue this text exactly: "
                 + ", ".join(["tick, tock"] * 6) + ","}]
    full = LlamaCppLLM(resolve_llm_file("smollm2-135m", model_dir), n_ctx=1024,
                       greedy_grammar=False)  # no loop guard: runs to the limit
    try:
        endless = full.complete(messages, max_tokens=150, schema=schema)
    finally:
        full.close()
    assert endless.usage.completion_tokens == 150
    cut = llm.complete(messages, max_tokens=150, schema=schema)
    assert endless.text.startswith(cut.text) and cut.text.count("tick") >= 3
    assert cut.usage.completion_tokens < 40
    with pytest.raises(LLMError, match="invalid JSON"):  # the caller falls back
        llm.complete_json(messages, schema, max_tokens=150)


def test_loops_are_stretches_repeated_back_to_back() -> None:
    stretch = list(range(1, 9))
    assert looping([70, 71] + stretch * 3)
    assert not looping(stretch * 2), "twice is not a loop"
    assert not looping([1, 2, 3, 4] * 3), "too short to be one"
    assert looping([5] * 24) and not looping([5] * 23)
    assert not looping(list(range(60)) + list(range(30)))


def test_prompt_larger_than_the_context_is_an_llm_error(llm: LlamaCppLLM) -> None:
    huge = "word " * 5000
    with pytest.raises(LLMError):
        llm.complete([{"role": "user", "content": huge}], max_tokens=8)
    with pytest.raises(LLMError):
        llm.complete([{"role": "user", "content": "hi"}], max_tokens=0)


def test_extra_buffers_can_be_turned_off_for_one_load(model_dir: Path) -> None:
    """What a build with llama.cpp's AMX kernel gets by default: the model loads without
    extra weight buffers, evaluates a multi-token prompt, and later loads are unaffected."""
    from llama_cpp import llama_cpp as low

    path = resolve_llm_file("smollm2-135m", model_dir)
    plain = LlamaCppLLM(path, n_ctx=256, extra_buffers=False)
    assert plain._llm.model_params.use_extra_bufts is False
    text = plain.complete([{"role": "user", "content": "Name three colours of the sky."}],
                          max_tokens=4)
    assert text.usage.prompt_tokens > 5
    plain.close()
    assert low.llama_model_default_params().use_extra_bufts is True
    assert LlamaCppLLM(path, n_ctx=256, extra_buffers=True)._llm.model_params.use_extra_bufts


def test_garbage_gguf_is_a_model_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelError):
        LlamaCppLLM(bad)


def test_token_meter_sums_per_operation() -> None:
    meter = TokenMeter()
    meter.add("fuse", Usage(10, 2, 1))
    meter.add("fuse", Usage(5, 1, 1))
    meter.add("plan", Usage(1, 1, 1))
    assert meter.snapshot()["fuse"] == Usage(15, 3, 2)
    assert meter.total() == Usage(16, 4, 3)


def test_a_streamed_completion_writes_the_same_text_piece_by_piece(llm: LlamaCppLLM) -> None:
    messages = [{"role": "system", "content": "Extract the event from the message as JSON."},
                {"role": "user", "content": "Mom: the clinic moved my dentist to Thursday 4pm."}]
    whole = llm.complete(messages, max_tokens=96, schema=SCHEMA)
    pieces: list[str] = []
    streamed = llm.complete(messages, max_tokens=96, schema=SCHEMA, on_text=pieces.append)
    assert streamed.text == whole.text == "".join(pieces)
    assert len([p for p in pieces if p]) > 3
    assert streamed.usage.completion_tokens == whole.usage.completion_tokens
    assert streamed.usage.prompt_tokens == whole.usage.prompt_tokens
    what: list[str] = []
    value, _ = llm.complete_json(messages, SCHEMA, max_tokens=96, on_field=("what", what.append))
    assert "".join(what) == value["what"]
