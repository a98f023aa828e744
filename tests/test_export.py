"""The BGE-M3 path (optimum export → dynamic int8 → load → embed), on a tiny random
XLM-RoBERTa of the same architecture built here (BGE-M3's weights are not available)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memfuse_lite.embed import OnnxEmbedder
from memfuse_lite.memory import MemFuse
from memfuse_lite.prepare.bge_m3 import export_bge_m3
from memfuse_lite.prepare.tokenizer_build import build_unigram_tokenizer, save_tokenizer

torch = pytest.importorskip("torch", reason="the export extra is not installed")
transformers = pytest.importorskip("transformers")

WORDS = ["dentist", "thursday", "dinner", "grandma", "flight", "delayed", "parcel", "牙医",
         "周四", "晚饭", "奶奶", "航班"]


def tiny_xlmr(directory: Path) -> Path:
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "\u2581"] + [f"\u2581{w}" for w in WORDS] + list(
        "abcdefghijklmnopqrstuvwxyz")
    scores = [0.0] * 4 + [-2.0] * (len(pieces) - 4)
    tok = build_unigram_tokenizer(pieces, scores, unk_id=3)
    torch.manual_seed(0)
    cfg = transformers.XLMRobertaConfig(
        vocab_size=len(pieces), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66, pad_token_id=1, bos_token_id=0,
        eos_token_id=2)
    model = transformers.XLMRobertaModel(cfg, add_pooling_layer=False).eval()
    model.save_pretrained(directory)
    save_tokenizer(tok, directory)
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="<pad>", cls_token="<s>", sep_token="</s>").save_pretrained(directory)
    return directory


def torch_cls(hf_dir: Path, texts: list[str], tokenizer) -> np.ndarray:
    model = transformers.XLMRobertaModel.from_pretrained(hf_dir).eval()
    out = []
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tokenizer.encode(text).ids])
            v = model(input_ids=ids).last_hidden_state[0, 0].numpy()
            out.append(v / np.linalg.norm(v))
    return np.stack(out)


def test_hf_checkout_exports_quantizes_loads_and_embeds(tmp_path: Path) -> None:
    hf = tiny_xlmr(tmp_path / "hf")
    dest = export_bge_m3(hf, tmp_path / "models" / "bge-m3-int8", name="bge-m3-tiny",
                         max_length=64)
    emb = OnnxEmbedder(dest)
    assert emb.info.dims == 32 and emb.info.pooling == "cls"
    texts = ["dentist thursday", "grandma dinner", "牙医 周四", "flight delayed"]
    got = emb.embed(texts)
    assert got.shape == (4, 32)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    ref = torch_cls(hf, texts, emb.tokenizer)
    assert float((got * ref).sum(1).min()) > 0.95, "int8 CLS drifted from the torch model"

    # and a memory opens on it like on any other embedder
    mem = MemFuse(tmp_path / "mem", embedder=emb)
    assert mem.stats()["dims"] == 32
    mem.close()


def test_already_exported_onnx_directory_is_quantized(tmp_path: Path) -> None:
    from memfuse_lite.prepare.export import export_onnx

    hf = tiny_xlmr(tmp_path / "hf")
    onnx_dir = tmp_path / "onnx"
    export_onnx(hf, onnx_dir)
    (onnx_dir / "tokenizer.json").write_bytes((hf / "tokenizer.json").read_bytes())
    (onnx_dir / "config.json").write_bytes((hf / "config.json").read_bytes())
    dest = export_bge_m3(onnx_dir, tmp_path / "out")
    emb = OnnxEmbedder(dest)
    assert emb.embed(["dentist"]).shape == (1, 32)
    ops = _op_types(dest / "model.onnx")
    assert "DynamicQuantizeLinear" in ops or "MatMulInteger" in ops


def test_token_table_leaves_the_graph_and_vectors_stay_the_same(tmp_path: Path) -> None:
    import onnxruntime as ort

    from memfuse_lite.checksums import sha256_file
    from memfuse_lite.prepare.export import export_onnx, quantize_int8

    hf = tiny_xlmr(tmp_path / "hf")
    onnx_dir = tmp_path / "onnx"
    export_onnx(hf, onnx_dir)
    (onnx_dir / "tokenizer.json").write_bytes((hf / "tokenizer.json").read_bytes())
    dest = export_bge_m3(onnx_dir, tmp_path / "out")
    card = json.loads((dest / "memfuse_model.json").read_text())
    emb = OnnxEmbedder(dest)
    vocab = emb.tokenizer.get_vocab_size()
    assert card["word_table"]["shape"] == [vocab, 32]
    assert (dest / "word_table.bin").stat().st_size == vocab * 32 * np.dtype(
        card["word_table"]["dtype"]).itemsize
    assert "word_table.bin" in card["files"]

    # the same numbers as the model quantized without the split, whose identity it keeps
    whole = quantize_int8(onnx_dir / "model.onnx", tmp_path / "whole.onnx")
    assert emb.info.content_hash == sha256_file(whole)
    session = ort.InferenceSession(str(whole), providers=["CPUExecutionProvider"])
    for text in ("dentist thursday", "牙医 周四 晚饭"):
        ids = np.array([emb.tokenizer.encode(text).ids])
        hidden = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
        cls = hidden[0, 0] / np.linalg.norm(hidden[0, 0])
        assert np.allclose(emb.embed([text])[0], cls, atol=1e-6)


def test_a_damaged_token_table_is_refused(tmp_path: Path) -> None:
    from memfuse_lite.embed.word_table import WordTable
    from memfuse_lite.errors import ModelError

    rows = np.arange(12, dtype=np.uint8).reshape(4, 3)
    rows.tofile(tmp_path / "t.bin")
    table = WordTable(tmp_path / "t.bin", "|u1", (4, 3))
    assert np.array_equal(table.lookup(np.array([[3, 0], [3, 3]])), rows[[[3, 0], [3, 3]]])
    with pytest.raises(ModelError, match="outside"):
        table.lookup(np.array([4]))
    table.close()
    with pytest.raises(ModelError, match="should hold"):
        WordTable(tmp_path / "t.bin", "|u1", (5, 3))


def _op_types(path: Path) -> set[str]:
    import onnx

    return {n.op_type for n in onnx.load(str(path)).graph.node}
