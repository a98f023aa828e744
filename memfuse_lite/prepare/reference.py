"""A plain numpy forward pass of a BERT/XLM-R encoder: the independent reference an
exported ONNX model is checked against (no torch, no onnxruntime involved)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def encode_reference(
    sd: Mapping[str, np.ndarray],
    ids: Sequence[int],
    *,
    layers: int,
    heads: int,
    eps: float,
    position_offset: int = 2,
) -> np.ndarray:
    """Token hidden states (T, H) of one sequence, float64 throughout."""
    p = {k: np.asarray(v, dtype=np.float64) for k, v in sd.items()}
    t = len(ids)
    x = (
        p["embeddings.word_embeddings.weight"][list(ids)]
        + p["embeddings.position_embeddings.weight"][position_offset : position_offset + t]
        + p["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"], eps)
    hidden = x.shape[1]
    hd = hidden // heads
    for layer in range(layers):
        pre = f"encoder.layer.{layer}."

        def lin(name: str, inp: np.ndarray, pre: str = pre) -> np.ndarray:
            return inp @ p[pre + name + ".weight"].T + p[pre + name + ".bias"]

        q = lin("attention.self.query", x).reshape(t, heads, hd).transpose(1, 0, 2)
        k = lin("attention.self.key", x).reshape(t, heads, hd).transpose(1, 0, 2)
        v = lin("attention.self.value", x).reshape(t, heads, hd).transpose(1, 0, 2)
        att = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(t, hidden)
        x = _layer_norm(
            x + lin("attention.output.dense", ctx),
            p[pre + "attention.output.LayerNorm.weight"],
            p[pre + "attention.output.LayerNorm.bias"],
            eps,
        )
        mid = _gelu(lin("intermediate.dense", x))
        x = _layer_norm(
            x + lin("output.dense", mid),
            p[pre + "output.LayerNorm.weight"],
            p[pre + "output.LayerNorm.bias"],
            eps,
        )
    return x


def mean_pooled(hidden: np.ndarray) -> np.ndarray:
    """Mean over tokens, L2-normalised, float32."""
    v = hidden.mean(0)
    return (v / np.linalg.norm(v)).astype(np.float32)
