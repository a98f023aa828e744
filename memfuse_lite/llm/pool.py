"""The memory's local LLMs by name: given ones first, GGUF files loaded on first use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from .base import LLM, Usage


class LLMPool:
    """One instance per model name, shared by every task that uses it (extraction,
    arbitration, planning, answers, summaries)."""

    def __init__(self, given: Mapping[str, LLM] | None, *, resolve: Callable[[str], Path],
                 n_ctx: int, threads: int) -> None:
        """``given`` maps names to ready models, used instead of loading files by those
        names; any other name is turned into a GGUF file by ``resolve`` when first asked."""
        self._models: dict[str, LLM] = dict(given or {})
        self._resolve = resolve
        self._n_ctx = n_ctx
        self._threads = threads

    def get(self, name: str) -> LLM:
        """The model called ``name``, loading it on first use."""
        if name not in self._models:
            from .llamacpp import LlamaCppLLM

            self._models[name] = LlamaCppLLM(self._resolve(name),
                                             n_ctx=self._n_ctx, threads=self._threads)
        return self._models[name]

    def optional(self, name: str | None) -> LLM | None:
        """The model called ``name``, or None when no name is configured."""
        return self.get(name) if name else None

    def usage(self) -> dict[str, Usage]:
        """Tokens per operation, summed over the models loaded so far."""
        out: dict[str, Usage] = {}
        for llm in self._models.values():
            for op, usage in llm.meter.snapshot().items():
                prev = out.get(op)
                out[op] = usage if prev is None else prev + usage
        return out

    def models(self) -> dict[str, LLM]:
        """The models loaded (or given) so far, by name."""
        return dict(self._models)

    def close(self) -> None:
        """Release every loaded model."""
        for llm in self._models.values():
            llm.close()

    def __len__(self) -> int:
        """Models loaded (or given) so far."""
        return len(self._models)
