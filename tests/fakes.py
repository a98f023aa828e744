"""Fakes at the model boundary, for tests about what the engine does with a model's output."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memfuse_lite.llm.base import LLM, Completion, Message, Usage

Script = Callable[[str, str], dict[str, Any]]
"""(operation, prompt text) → the JSON object the fake model answers."""


class ScriptedLLM(LLM):
    """Fake LLM: answers each call with what ``script`` returns for its operation and
    prompt, and records every (operation, prompt). The operation is recognised from the
    JSON schema's keys, as the engine names none in the prompt."""

    model_id = "fake-scripted"
    n_ctx = 4096

    def __init__(self, script: Script | Mapping[str, dict[str, Any]]) -> None:
        super().__init__()
        self.script = script
        self.calls: list[tuple[str, str]] = []

    def _complete(self, messages: Sequence[Message], *, max_tokens: int,
                  schema: Mapping[str, Any] | None, temperature: float) -> Completion:
        prompt = "\n".join(m["content"] for m in messages)
        operation = operation_of(schema or {})
        self.calls.append((operation, prompt))
        value = self.script(operation, prompt) if callable(self.script) else self.script[operation]
        return Completion(json.dumps(value), Usage(len(prompt) // 4, 8, 1), 0.0)

    def operations(self) -> list[str]:
        """The operations called, in order."""
        return [op for op, _ in self.calls]


def operation_of(schema: Mapping[str, Any]) -> str:
    """Which task a schema belongs to (answer, plan, agentic, fuse, extract, summary)."""
    keys = set((schema.get("properties") or {}).keys())
    for op, marker in (("answer", "citations"), ("plan", "rewrites"), ("agentic", "sufficient"),
                       ("fuse", "same_episode"), ("summary", "summary")):
        if marker in keys:
            return op
    return "extract"


class UnrulyLLM(LLM):
    """Fake LLM that answers every call with values of the shape its schema asks for, drawn
    at random (seeded by the prompt, so a run repeats): copies of the prompt's words, record
    numbers in and out of range, empty strings, letters outside the options. For tests that
    an engine step survives whatever a model returns."""

    model_id = "fake-unruly"
    n_ctx = 4096

    def _complete(self, messages: Sequence[Message], *, max_tokens: int,
                  schema: Mapping[str, Any] | None, temperature: float) -> Completion:
        prompt = "\n".join(m["content"] for m in messages)
        rng = random.Random(hashlib.sha256(prompt.encode()).digest())
        words = prompt.split() or ["nothing"]
        value = {key: _unruly(rng, spec, words)
                 for key, spec in ((schema or {}).get("properties") or {}).items()}
        return Completion(json.dumps(value, ensure_ascii=False),
                          Usage(len(prompt) // 4, 8, 1), 0.0)


def _unruly(rng: random.Random, spec: Mapping[str, Any], words: list[str]) -> Any:
    """One value of the JSON type ``spec`` names, often an unlikely one."""
    if "enum" in spec:
        return rng.choice([*spec["enum"], "Z", ""])
    kind = spec.get("type")
    if kind == "array":
        return [_unruly(rng, spec.get("items") or {"type": "integer"}, words)
                for _ in range(rng.randrange(0, 5))]
    if kind == "integer":
        return rng.choice([0, 1, 2, 3, -1, 99, rng.randrange(1, 30)])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "number":
        return rng.uniform(-1, 2)
    start = rng.randrange(len(words))
    return rng.choice(["", " ".join(words[start:start + rng.randrange(1, 40)])])
