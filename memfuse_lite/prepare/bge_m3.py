"""BGE-M3, the production embedder: a user-supplied local checkout or ONNX export.

BGE-M3 is not on any package registry, so ``memfuse models export-bge-m3 --from DIR``
takes either a Hugging Face checkout (``config.json`` + weights + ``tokenizer.json``),
exported with optimum and quantized to dynamic int8, or a directory that already holds
an exported ``model.onnx`` + ``tokenizer.json`` (quantized here unless it already is).
Dense embeddings use the CLS token, 1024-d, no query/passage prefixes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..errors import ModelError
from .export import export_encoder, quantize_int8, split_word_table, write_card

Progress = Callable[[str], None]
QUANTIZED_NAMES = ("model_int8.onnx", "model_quantized.onnx")


def _dims(source: Path) -> int:
    cfg = source / "config.json"
    if cfg.exists():
        return int(json.loads(cfg.read_text())["hidden_size"])
    return 1024


def export_bge_m3(
    source: Path, dest: Path, *, name: str = "bge-m3-int8", max_length: int = 8192,
    progress: Progress = lambda _m: None,
) -> Path:
    """Prepare ``dest`` (int8 ONNX + tokenizer + card) from a local BGE-M3 directory."""
    source = Path(source).expanduser()
    if not source.is_dir():
        raise ModelError(f"{source} is not a directory")
    if not (source / "tokenizer.json").exists():
        raise ModelError(f"{source} has no tokenizer.json")
    card = {"id": name, "dims": _dims(source), "pooling": "cls", "query_prefix": "",
            "passage_prefix": "", "max_length": max_length, "pad_id": 1, "onnx": "model.onnx"}
    if (source / "config.json").exists() and not any(source.glob("*.onnx")):
        return export_encoder(source, dest, model_id=name, pooling="cls", dims=int(card["dims"]),  # type: ignore[call-overload]
                              max_length=max_length, keep_fp32=False, progress=progress)
    onnx_files = sorted(source.glob("*.onnx"))
    if not onnx_files:
        raise ModelError(f"{source} holds neither a Hugging Face model nor an ONNX export")
    staging = Path(tempfile.mkdtemp(prefix=".bge-m3-"))
    try:
        ready = [f for f in onnx_files if f.name in QUANTIZED_NAMES]
        if ready:
            progress(f"using the already quantized {ready[0].name}")
            shutil.copy(ready[0], staging / "model.onnx")
        else:
            progress(f"quantizing {onnx_files[0].name} to int8 (dynamic)")
            quantize_int8(onnx_files[0], staging / "model.onnx")
        shutil.copy(source / "tokenizer.json", staging / "tokenizer.json")
        write_card(staging, {**card, **split_word_table(staging)})
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest
