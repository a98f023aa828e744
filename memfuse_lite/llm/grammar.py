"""Greedy decoding under a JSON schema, checking the grammar on one token at a time.

llama-cpp-python's grammar sampler runs over every token of the vocabulary (151,936 for
Qwen2.5) before the greedy pick, at each generated token; on a 2-core CPU that made
generation under a schema about three times slower than without one (``python3 -m bench
models``). With greedy decoding only the best token the grammar allows matters, so, as
llama.cpp's own sampler does: ask the grammar about the model's favourite token alone, and
run it over the whole vocabulary only when that token is refused. The chosen token is
then the only one left to pick, so the text is the one the full grammar pass gives.

Greedy decoding can fall into a loop ("2月10日周一 18:00, 2月10日周一 18:00, …") that
runs to the token limit and ends in JSON cut off mid-string: a small model did so in 1–4
of 24 answers (``bench ask``), each costing a whole completion (seconds on a phone-class
CPU). Once the last stretch of the completion has repeated itself :data:`REPEATS` times,
the completion ends there (the text is then incomplete JSON, which the caller reports).
"""

from __future__ import annotations

import ctypes
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

_TOKEN = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
REPEATS = 3
"""Times a stretch of tokens must occur back to back to count as a loop."""
LOOP_TOKENS = 24
"""Fewest tokens a loop spans (its repeats together): a list that names one item three times
('"The clinic", "The clinic", "The clinic"', as a 135M model wrote) is not one yet."""


def looping(tokens: Sequence[int], repeats: int = REPEATS, least: int = LOOP_TOKENS) -> bool:
    """Whether ``tokens`` end with one stretch repeated ``repeats`` times back to back,
    spanning at least ``least`` tokens."""
    n = len(tokens)
    for period in range(max(1, -(-least // repeats)), n // repeats + 1):
        if tokens[n - 1] != tokens[n - 1 - period]:
            continue
        tail = tokens[n - period:]
        if all(tokens[n - (r + 1) * period:n - r * period] == tail for r in range(1, repeats)):
            return True
    return False


class GreedyGrammar:
    """A logits processor for ``Llama.create_chat_completion(logits_processor=...)`` at
    temperature 0: each call leaves one token, the best the schema's grammar allows, and
    advances the grammar by it. Use one per completion; :meth:`close` frees it."""

    def __init__(self, llama: Any, schema: Mapping[str, Any]) -> None:
        from llama_cpp import llama_cpp as low
        from llama_cpp.llama_grammar import LlamaGrammar

        grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        self._low = low
        self._sampler = low.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self._sampler:
            raise ValueError("llama.cpp refused the grammar of this schema")
        self._one = (low.llama_token_data * 1)()
        self._eos = int(llama.token_eos())
        self._prompt: int | None = None  # tokens before the completion
        self.failed = False  # nothing allowed: the grammar stops constraining (never happens
        # with a valid grammar; the caller's JSON parse then fails loudly)

    def __call__(self, input_ids: npt.NDArray[np.intc],
                 scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        if self.failed:
            return scores
        if self._prompt is None:
            self._prompt = len(input_ids)
        if looping(input_ids[self._prompt:].tolist()):  # end the completion here
            out = np.full_like(scores, -np.inf)
            out[self._eos] = 0.0
            return out
        token = int(np.argmax(scores))
        if not self._allows(token, float(scores[token])):
            allowed = self._allowed_logits(scores)
            token = int(np.argmax(allowed))
            if not math.isfinite(float(allowed[token])):
                self.failed = True
                return scores
        self._low.llama_sampler_accept(self._sampler, token)
        out = np.full_like(scores, -np.inf)
        out[token] = scores[token]
        return out

    def _allows(self, token: int, logit: float) -> bool:
        self._one[0] = self._low.llama_token_data(token, logit, 0.0)
        array = self._low.llama_token_data_array(data=self._one, size=1, selected=-1,
                                                 sorted=False)
        self._low.llama_sampler_apply(self._sampler, ctypes.byref(array))
        return math.isfinite(self._one[0].logit)

    def _allowed_logits(self, scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        """``scores`` with every token the grammar refuses at -inf."""
        data = np.zeros(len(scores), dtype=_TOKEN)
        data["id"] = np.arange(len(scores), dtype=np.intc)
        data["logit"] = scores
        array = self._low.llama_token_data_array(
            data=data.ctypes.data_as(ctypes.POINTER(self._low.llama_token_data)),
            size=len(scores), selected=-1, sorted=False)
        self._low.llama_sampler_apply(self._sampler, ctypes.byref(array))
        out = np.full_like(scores, -np.inf)
        out[data["id"][: array.size]] = data["logit"][: array.size]
        return out

    def close(self) -> None:
        """Free the grammar."""
        if self._sampler:
            self._low.llama_sampler_free(self._sampler)
            self._sampler = None
