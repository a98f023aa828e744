"""Embedders: the interface and the ONNX Runtime backend."""

from .base import Embedder, EmbedderInfo, Role
from .onnx import OnnxEmbedder

__all__ = ["Embedder", "EmbedderInfo", "OnnxEmbedder", "Role"]
