"""llama-cpp-python backend: a GGUF model on the CPU.

One ``Llama`` per model, guarded by a lock (it is not thread-safe). Consecutive calls
that share a prompt prefix (the same system prompt, say) reuse the evaluated KV cache:
llama.cpp matches the longest common token prefix with what it last evaluated.

A llama.cpp built for the machine it runs on (``GGML_NATIVE``, the default) includes an
AMX kernel on Intel Xeons that have AMX, and that kernel crashes the process in its first
multi-token evaluation on some of them (llama.cpp issue #20824; seen on a 2-core
Xeon VM). A build that has that kernel is therefore loaded with llama.cpp's extra weight
buffers (AMX and repacking) turned off, which avoids it; measured there, that is still
faster than a portable AVX2 build (``CMAKE_ARGS="-DGGML_NATIVE=OFF"``) with repacking.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from ..errors import LLMError, ModelError
from .base import LLM, Completion, Message, Usage
from .grammar import GreedyGrammar

_LOAD_LOCK = threading.Lock()


def amx_compiled() -> bool:
    """True if the installed llama.cpp was built with its AMX kernel."""
    import llama_cpp

    return b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info()


@contextmanager
def _without_extra_buffers() -> Iterator[None]:
    """Models loaded inside get no extra weight buffer types (no AMX, no repacking).

    ``Llama`` takes its model parameters from ``llama_model_default_params`` with no
    argument for this field, so the defaults are wrapped for the duration of the load.
    """
    from llama_cpp import llama_cpp as low

    defaults = low.llama_model_default_params

    def params() -> Any:
        out = defaults()
        out.use_extra_bufts = False
        return out

    with _LOAD_LOCK:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = defaults


class _TokenCounter:
    """A logits processor that changes nothing and counts: the prompt's tokens (the input
    at the first step) and the steps taken (one a token written, the end included)."""

    def __init__(self) -> None:
        self.prompt = 0
        self.steps = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.steps == 0:
            self.prompt = len(input_ids)
        self.steps += 1
        return scores


class LlamaCppLLM(LLM):
    """Chat completions from a local GGUF through llama.cpp."""

    def __init__(
        self,
        path: str | Path,
        *,
        n_ctx: int = 4096,
        threads: int = 1,
        seed: int = 0,
        model_id: str | None = None,
        extra_buffers: bool | None = None,
        greedy_grammar: bool = True,
    ) -> None:
        """``extra_buffers``: let llama.cpp repack weights into its extra buffer types;
        ``None`` (the default) allows it unless the build has the AMX kernel (above).
        ``greedy_grammar``: at temperature 0, hold a completion to its JSON schema by
        asking the grammar about the chosen token only (:mod:`.grammar`; the same text,
        faster); ``False`` runs llama-cpp-python's grammar over the whole vocabulary."""
        super().__init__()
        from llama_cpp import Llama

        self.path = Path(path)
        self.model_id = model_id or self.path.stem
        self.n_ctx = n_ctx
        self._lock = threading.Lock()
        if extra_buffers is None:
            extra_buffers = not amx_compiled()
        self.extra_buffers = extra_buffers
        self.greedy_grammar = greedy_grammar
        try:
            with nullcontext() if extra_buffers else _without_extra_buffers():
                self._llm = Llama(
                    model_path=str(self.path),
                    n_ctx=n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    seed=seed,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"cannot load GGUF {self.path}: {exc}") from exc

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's vocabulary."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _complete(
        self, messages: Sequence[Message], *, max_tokens: int, schema: Mapping[str, Any] | None,
        temperature: float,
    ) -> Completion:
        return self._run(messages, max_tokens=max_tokens, schema=schema,
                         temperature=temperature, on_text=None)

    def _stream(
        self, messages: Sequence[Message], *, max_tokens: int, schema: Mapping[str, Any] | None,
        temperature: float, on_text: Callable[[str], None],
    ) -> Completion:
        return self._run(messages, max_tokens=max_tokens, schema=schema,
                         temperature=temperature, on_text=on_text)

    def _run(
        self, messages: Sequence[Message], *, max_tokens: int, schema: Mapping[str, Any] | None,
        temperature: float, on_text: Callable[[str], None] | None,
    ) -> Completion:
        """One completion; with ``on_text``, streamed to it token by token."""
        if max_tokens <= 0 or max_tokens >= self.n_ctx:
            raise LLMError(f"max_tokens must be in 1..{self.n_ctx - 1}")
        from llama_cpp import LogitsProcessorList

        greedy = schema is not None and temperature == 0.0 and self.greedy_grammar
        fmt = ({"type": "json_object", "schema": dict(schema)}
               if schema is not None and not greedy else None)
        t0 = time.perf_counter()
        with self._lock:
            grammar = GreedyGrammar(self._llm, schema) if greedy and schema is not None else None
            counter = _TokenCounter()
            try:
                out: Any = self._llm.create_chat_completion(
                    messages=[dict(m) for m in messages],  # type: ignore[misc]
                    max_tokens=max_tokens,
                    temperature=temperature,
                    response_format=fmt,  # type: ignore[arg-type]
                    logits_processor=LogitsProcessorList([*([grammar] if grammar else []),
                                                          counter]),
                    stream=on_text is not None,
                )
                if on_text is not None:
                    pieces, finish = [], None
                    for chunk in out:
                        piece = chunk["choices"][0]["delta"].get("content") or ""
                        finish = chunk["choices"][0].get("finish_reason") or finish
                        pieces.append(piece)
                        on_text(piece)
                    text = "".join(pieces)
                    # a streamed completion reports no usage: the counter saw it (a
                    # completion that stopped took one step more, for its end token)
                    usage = {"prompt_tokens": counter.prompt,
                             "completion_tokens": counter.steps - (finish == "stop")}
                else:
                    text = out["choices"][0]["message"]["content"] or ""
                    usage = out.get("usage") or {}
            except ValueError as exc:  # e.g. the prompt does not fit n_ctx
                raise LLMError(f"{self.model_id}: {exc}") from exc
            finally:
                if grammar is not None:
                    grammar.close()
        return Completion(
            text=text,
            usage=Usage(int(usage.get("prompt_tokens", 0)),
                        int(usage.get("completion_tokens", 0)), 1),
            seconds=time.perf_counter() - t0,
        )

    def close(self) -> None:
        """Free the model."""
        with self._lock:
            self._llm.close()
