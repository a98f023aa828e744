"""Export a Hugging Face encoder directory to ONNX with optimum and quantize it to int8.

Needs the ``export`` extra (torch, optimum-onnx, onnx); nothing here runs at query time.
Dynamic int8 quantization (weights int8, activations quantized on the fly) is used rather
than weight-only int8, which dequantizes at run time and is slower on CPU.

The token-embedding table then leaves the graph for a raw file beside it
(:func:`split_word_table`): it is most of a multilingual encoder (e5-small int8: 96 of
118 MB; BGE-M3: 256 MB), and a text needs a few dozen of its 250,000 rows, which the
embedder reads from disk instead of holding the whole table in memory.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..checksums import sha256_file
from ..errors import ModelError

CARD = "memfuse_model.json"
Progress = Callable[[str], None]


def _require_export_tools() -> None:
    try:
        import onnx  # noqa: F401
        import optimum.exporters.onnx  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise ModelError(
            "exporting a model needs the export tools: pip install 'memfuse_lite[export]' "
            f"({exc})"
        ) from exc


def export_onnx(hf_dir: Path, out_dir: Path, *, opset: int = 17) -> Path:
    """optimum export of a feature-extraction model; returns the fp32 ``model.onnx``."""
    _require_export_tools()
    from optimum.exporters.onnx import main_export

    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        main_export(
            str(hf_dir),
            output=str(out_dir),
            task="feature-extraction",
            opset=opset,
            device="cpu",
            do_validation=False,
            no_post_process=True,
            local_files_only=True,
        )
    except Exception as exc:  # optimum raises many unrelated types
        raise ModelError(f"ONNX export of {hf_dir} failed: {exc}") from exc
    path = out_dir / "model.onnx"
    if not path.exists():
        raise ModelError(f"optimum wrote no model.onnx into {out_dir}")
    return path


def quantize_int8(fp32_path: Path, int8_path: Path) -> Path:
    """Dynamic int8 quantization (QInt8 weights, per-tensor) with onnxruntime."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32_path), str(int8_path), weight_type=QuantType.QInt8)
    return int8_path


WORD_TABLE = "word_table.bin"
"""The token-embedding table's rows, raw, in token-id order."""

WORD_ROWS = "word_rows"
"""The graph input that receives the looked-up rows instead of the table lookup."""


def split_word_table(directory: Path, onnx_name: str = "model.onnx") -> dict[str, Any]:
    """Move the token-embedding table out of ``onnx_name`` into :data:`WORD_TABLE`.

    The graph's lookup (a ``Gather`` of ``input_ids`` from an initializer) is removed and
    its consumers read a new input, :data:`WORD_ROWS`, which the embedder fills with the
    same rows (so the vectors are bit-identical). Returns the card fields: the file's
    layout and ``content_hash``, the sha256 of the model before the split (the identity
    memories record, so one made with the unsplit model opens with this one). A graph
    without such a lookup is left as it is."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    path = directory / onnx_name
    fields: dict[str, Any] = {"content_hash": sha256_file(path)}
    model = onnx.load(str(path))
    graph = model.graph
    tables = {t.name: t for t in graph.initializer}
    lookups = [n for n in graph.node if n.op_type == "Gather" and list(n.input[1:]) ==
               ["input_ids"] and n.input[0] in tables and
               all(a.name != "axis" or a.i == 0 for a in n.attribute)]
    if len(lookups) != 1 or any(o.name == lookups[0].output[0] for o in graph.output):
        return fields
    lookup, table = lookups[0], tables[lookups[0].input[0]]
    rows = numpy_helper.to_array(table)
    if rows.ndim != 2:
        return fields
    np.ascontiguousarray(rows).tofile(directory / WORD_TABLE)
    graph.initializer.remove(table)
    graph.node.remove(lookup)
    graph.input.append(helper.make_tensor_value_info(WORD_ROWS, table.data_type,
                                                     ["batch", "sequence", rows.shape[1]]))
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == lookup.output[0]:
                node.input[i] = WORD_ROWS
    onnx.save(model, str(path))
    fields["word_table"] = {"file": WORD_TABLE, "input": WORD_ROWS, "dtype": rows.dtype.str,
                            "shape": list(rows.shape)}
    return fields


def write_card(directory: Path, card: dict[str, Any]) -> Path:
    """Write ``memfuse_model.json`` with the sha256 of every file it names."""
    card = dict(card)
    names = [card["onnx"], "tokenizer.json"] + [
        n for n in ("model_fp32.onnx",) if (directory / n).exists()
    ]
    if "word_table" in card:
        names.append(card["word_table"]["file"])
    card["files"] = {n: sha256_file(directory / n) for n in names}
    card["sizes"] = {n: (directory / n).stat().st_size for n in names}
    path = directory / CARD
    path.write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
    return path


def export_encoder(
    hf_dir: Path,
    dest: Path,
    *,
    model_id: str,
    pooling: str,
    dims: int,
    query_prefix: str = "",
    passage_prefix: str = "",
    max_length: int = 512,
    keep_fp32: bool = True,
    extra: dict[str, Any] | None = None,
    progress: Progress = lambda _msg: None,
) -> Path:
    """HF directory → fp32 ONNX → int8 ONNX + tokenizer.json + card, written to ``dest``."""
    dest = Path(dest)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=dest.parent if dest.parent.exists()
                                    else None))
    try:
        progress(f"exporting {hf_dir} to ONNX (optimum)")
        fp32 = export_onnx(Path(hf_dir), staging / "onnx")
        final = staging / "final"
        final.mkdir()
        # Models over 2 GB (BGE-M3) keep their weights in external data files; only
        # small ones keep an fp32 copy beside the int8 model (used for verification).
        external = (fp32.parent / (fp32.name + "_data")).exists()
        if keep_fp32 and not external:
            shutil.copy(fp32, final / "model_fp32.onnx")
        tok = staging / "onnx" / "tokenizer.json"
        if not tok.exists():
            tok = Path(hf_dir) / "tokenizer.json"
        if not tok.exists():
            raise ModelError(f"{hf_dir} has no tokenizer.json")
        shutil.copy(tok, final / "tokenizer.json")
        progress("quantizing to int8 (dynamic)")
        quantize_int8(fp32, final / "model.onnx")
        split = split_word_table(final)
        pad_id = _pad_id(final / "tokenizer.json")
        write_card(
            final,
            {
                "id": model_id,
                "dims": dims,
                "pooling": pooling,
                "query_prefix": query_prefix,
                "passage_prefix": passage_prefix,
                "max_length": max_length,
                "pad_id": pad_id,
                "onnx": "model.onnx",
                **split,
                **(extra or {}),
            },
        )
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        final.rename(dest)
        return dest
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _pad_id(tokenizer_json: Path) -> int:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    for name in ("<pad>", "[PAD]"):
        pid = tok.token_to_id(name)
        if pid is not None:
            return int(pid)
    return 0
