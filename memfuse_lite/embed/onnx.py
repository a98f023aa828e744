"""ONNX Runtime embedder: a prepared model directory with ``model.onnx`` + ``tokenizer.json``
(+ ``word_table.bin``, the token-embedding table split out of the graph and read row by
row, see :mod:`memfuse_lite.embed.word_table`).

The directory's ``memfuse_model.json`` says the model id, dims, pooling (``cls`` or
``mean``), query/passage prefixes, max length and the sha256 of every file; a file that
does not match its checksum is refused.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..checksums import verify_files
from ..errors import ModelError, ModelNotPrepared
from .base import Embedder, EmbedderInfo, Role
from .unigram import CompactUnigram
from .word_table import WordTable

CARD = "memfuse_model.json"


class OnnxEmbedder(Embedder):
    """Runs an exported (usually int8) encoder with onnxruntime on the CPU."""

    def __init__(
        self,
        model_dir: Path,
        *,
        threads: int = 1,
        onnx_file: str | None = None,
        max_length: int | None = None,
        verify: bool = True,
        lazy: bool = False,
    ) -> None:
        """Read the model card; load (checksums, tokenizer, ONNX session) now, or on first
        use when ``lazy`` (a memory opened only for BM25 search or stats never pays for
        the ~170 MB of session and tokenizer)."""
        self.model_dir = Path(model_dir)
        card_path = self.model_dir / CARD
        if not card_path.exists():
            raise ModelNotPrepared(
                f"no {CARD} in {self.model_dir}: run `memfuse models prepare` "
                "(or `memfuse models export-bge-m3 --from DIR` for BGE-M3)"
            )
        card: dict[str, Any] = json.loads(card_path.read_text())
        self.card = card
        self.onnx_name = onnx_file or card["onnx"]
        self.threads = threads
        self.verify = verify
        self.pooling = card["pooling"]
        self.query_prefix = card.get("query_prefix", "")
        self.passage_prefix = card.get("passage_prefix", "")
        self.max_length = int(max_length or card.get("max_length", 512))
        self.info = EmbedderInfo(
            model_id=card["id"],
            dims=int(card["dims"]),
            pooling=self.pooling,
            # The model's identity before its word table was split out (same vectors).
            content_hash=card.get("content_hash", card["files"][self.onnx_name])
            if self.onnx_name == card["onnx"] else card["files"][self.onnx_name],
        )
        self.word_table: WordTable | None = None
        self._loaded: tuple[Callable[[Sequence[str]], list[list[int]]], Any] | None = None
        self._hf: Any = None
        self._load_lock = threading.Lock()
        if not lazy:
            self.load()

    def load(self) -> None:
        """Verify the files and load the tokenizer and the ONNX session (once)."""
        with self._load_lock:
            if self._loaded is not None:
                return
            import onnxruntime as ort

            split = self.card.get("word_table") if self.onnx_name == self.card["onnx"] \
                else None
            if self.verify:
                wanted = {self.onnx_name, "tokenizer.json", split["file"] if split else ""}
                verify_files(self.model_dir, {k: v for k, v in self.card["files"].items()
                                              if k in wanted})
            # The XLM-R vocabulary prepare builds is tokenised by a compact equivalent
            # (the ``tokenizers`` trie of it takes ~270 MB); anything else by ``tokenizers``.
            compact = CompactUnigram.load(self.model_dir / "tokenizer.json", self.max_length,
                                          self.card["files"].get("tokenizer.json")
                                          if self.verify else None)
            encoder = compact.encode_batch if compact is not None else \
                _ids_of(self._hf_tokenizer())
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.enable_cpu_mem_arena = False  # the arena keeps the largest batch's memory
            try:
                session = ort.InferenceSession(
                    str(self.model_dir / self.onnx_name), opts,
                    providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise ModelError(f"cannot load {self.model_dir / self.onnx_name}: {exc}") \
                    from exc
            self.input_names = {i.name for i in session.get_inputs()}
            if split is not None:
                self.word_table = WordTable.from_card(self.model_dir, split)
            self._loaded = (encoder, session)

    @property
    def loaded(self) -> bool:
        """Whether the session is in memory."""
        return self._loaded is not None

    @property
    def tokenizer(self) -> Any:
        """The model's ``tokenizers`` tokenizer (for inspection; embedding may use the
        compact equivalent)."""
        return self._hf_tokenizer()

    def _hf_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        if self._hf is None:
            tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            tokenizer.enable_truncation(self.max_length)
            tokenizer.no_padding()
            self._hf = tokenizer
        return self._hf

    @property
    def session(self) -> Any:
        """The ONNX Runtime session (loads the model if needed)."""
        self.load()
        assert self._loaded is not None
        return self._loaded[1]

    def embed_batch(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Tokenise with the role's prefix, then run each text alone: a dynamically
        quantized model scales a batch's activations by the whole batch, so a text run
        beside others would get a vector that depends on its batch mates (cosine ~0.997
        to its own), and the same record ingested in another batch, or by another
        process, would rank differently. Alone, a vector is a function of its text."""
        prefix = self.query_prefix if role == "query" else self.passage_prefix
        self.load()
        assert self._loaded is not None
        encs = self._loaded[0]([prefix + t for t in texts])
        out = np.zeros((len(encs), self.info.dims), dtype=np.float32)
        for row, enc in enumerate(encs):
            out[row] = self._run([enc])[0]
        return out

    def _run(self, encs: Sequence[Sequence[int]]) -> np.ndarray:
        width = max(len(e) for e in encs)
        ids = np.zeros((len(encs), width), dtype=np.int64)
        mask = np.zeros((len(encs), width), dtype=np.int64)
        pad_id = int(self.card.get("pad_id", 0))
        ids.fill(pad_id)
        for row, enc in enumerate(encs):
            ids[row, : len(enc)] = enc
            mask[row, : len(enc)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if self.word_table is not None:
            feed[self.card["word_table"]["input"]] = self.word_table.lookup(ids)
        if "token_type_ids" in self.input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = self.session.run(None, feed)[0]
        except Exception as exc:
            raise ModelError(f"embedding failed: {exc}") from exc
        if self.pooling == "cls":
            return np.asarray(hidden[:, 0, :], dtype=np.float32)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        return (summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)).astype(np.float32)


def _ids_of(tokenizer: Any) -> Callable[[Sequence[str]], list[list[int]]]:
    """``encode_batch`` returning id lists, from a ``tokenizers`` tokenizer."""
    return lambda texts: [e.ids for e in tokenizer.encode_batch(list(texts))]
