"""The embedder interface: one required method, conveniences built on it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Role = Literal["query", "passage"]


@dataclass(frozen=True, slots=True)
class EmbedderInfo:
    """What built a vector: indexes record it and refuse vectors of another model."""

    model_id: str
    dims: int
    pooling: str
    content_hash: str

    def key(self) -> str:
        """A stable identity string stored with every index."""
        return f"{self.model_id}:{self.dims}:{self.pooling}:{self.content_hash[:16]}"


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors."""

    info: EmbedderInfo

    @abstractmethod
    def embed_batch(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Embed one batch; returns an (n, dims) array (normalised by :meth:`embed`)."""

    def embed(self, texts: Sequence[str], role: Role = "passage", batch_size: int = 32) -> np.ndarray:
        """Embed any number of texts, longest first in batches; rows are L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one")
        out = np.zeros((len(texts), self.info.dims), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self.embed_batch([texts[i] for i in idx], role)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector."""
        return self.embed([text], role="query")[0]

    def load(self) -> None:  # noqa: B027 - optional hook
        """Load the weights now (optional; an embedder may load on first use)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (optional)."""
