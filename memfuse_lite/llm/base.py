"""The LLM interface, with token accounting shared by every backend."""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LLMError
from .stream import FieldStream

Message = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one or more calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens, self.calls + other.calls)


@dataclass(frozen=True, slots=True)
class Completion:
    """One completion: its text, its usage and the seconds it took."""

    text: str
    usage: Usage
    seconds: float


class TokenMeter:
    """Sums usage per operation (``extract``, ``fuse``, ``plan``, ``answer`` …)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_op: dict[str, Usage] = {}

    def add(self, operation: str, usage: Usage) -> None:
        """Count one call's usage under ``operation``."""
        with self._lock:
            self._by_op[operation] = self._by_op.get(operation, Usage()) + usage

    def snapshot(self) -> dict[str, Usage]:
        """Usage per operation so far."""
        with self._lock:
            return dict(self._by_op)

    def total(self) -> Usage:
        """Usage over all operations."""
        total = Usage()
        for usage in self.snapshot().values():
            total = total + usage
        return total


class LLM(ABC):
    """A chat model; backends implement :meth:`complete`."""

    model_id: str
    n_ctx: int

    def __init__(self) -> None:
        self.meter = TokenMeter()

    @abstractmethod
    def _complete(
        self, messages: Sequence[Message], *, max_tokens: int, schema: Mapping[str, Any] | None,
        temperature: float,
    ) -> Completion:
        """Run one chat completion (constrained to ``schema`` when given)."""

    def _stream(
        self, messages: Sequence[Message], *, max_tokens: int, schema: Mapping[str, Any] | None,
        temperature: float, on_text: Callable[[str], None],
    ) -> Completion:
        """:meth:`_complete`, passing the text to ``on_text`` as it is written. Backends that
        can stream override this; here the whole text is passed at the end."""
        result = self._complete(messages, max_tokens=max_tokens, schema=schema,
                                temperature=temperature)
        on_text(result.text)
        return result

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's vocabulary. Backends with a tokenizer count
        exactly; this estimate allows one token per four bytes of UTF-8 (about four Latin
        letters, or one Chinese character)."""
        return -(-len(text.encode("utf-8")) // 4)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        operation: str = "chat",
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        """One chat completion, counted under ``operation``; ``on_text`` is given the text
        piece by piece as the model writes it."""
        result = self._complete(messages, max_tokens=max_tokens, schema=schema,
                                temperature=temperature) if on_text is None else self._stream(
            messages, max_tokens=max_tokens, schema=schema, temperature=temperature,
            on_text=on_text)
        self.meter.add(operation, result.usage)
        return result

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: Mapping[str, Any],
        *,
        max_tokens: int = 256,
        operation: str = "chat",
        on_field: tuple[str, Callable[[str], None]] | None = None,
    ) -> tuple[dict[str, Any], Completion]:
        """A schema-constrained completion parsed as a JSON object. ``on_field`` (a
        top-level string field's name, a sink): the field's characters are passed to the
        sink as the model writes them (:class:`~.stream.FieldStream`)."""
        on_text = FieldStream(*on_field).feed if on_field is not None else None
        result = self.complete(messages, max_tokens=max_tokens, schema=schema,
                               operation=operation, on_text=on_text)
        try:
            value = json.loads(result.text)
        except ValueError as exc:
            raise LLMError(f"the model returned invalid JSON: {result.text[:200]!r}") from exc
        if not isinstance(value, dict):
            raise LLMError(f"expected a JSON object, got {type(value).__name__}")
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            raise LLMError(f"the model's JSON lacks required keys {missing}")
        return value, result

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model (optional)."""
