"""Typed, frozen configuration with the paper's defaults, validated on construction."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = [
    "Durability",
    "IndexConfig",
    "IngestConfig",
    "MemFuseConfig",
    "RetrievalConfig",
    "default_model_dir",
]

Durability = Literal["normal", "full"]
PIPELINES = ("dense", "bm25", "hybrid")


def default_model_dir() -> Path:
    """Where prepared models live: $MEMFUSE_MODEL_DIR, else the user's cache directory."""
    env = os.environ.get("MEMFUSE_MODEL_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memfuse_lite" / "models"


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """The ingestion queue: batches are cut at ``batch_size`` or after ``batch_latency_s``."""

    batch_size: int = 64
    batch_latency_s: float = 0.05
    queue_size: int = 4096

    def __post_init__(self) -> None:
        _positive("batch_size", self.batch_size)
        _positive("queue_size", self.queue_size)
        if self.batch_latency_s < 0:
            raise ValueError("batch_latency_s must be >= 0")


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """HNSW parameters and how often the dense index is written to disk."""

    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 96
    save_every_s: float = 5.0

    def __post_init__(self) -> None:
        _positive("hnsw_m", self.hnsw_m)
        _positive("hnsw_ef_construction", self.hnsw_ef_construction)
        _positive("hnsw_ef_search", self.hnsw_ef_search)


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Search defaults (paper values): RRF constant 60, seed top-30, final top-20."""

    rrf_k: int = 60
    seed_k: int = 30
    final_k: int = 20
    default_pipeline: str = "hybrid"

    def __post_init__(self) -> None:
        _positive("rrf_k", self.rrf_k)
        _positive("seed_k", self.seed_k)
        _positive("final_k", self.final_k)
        if self.default_pipeline not in PIPELINES:
            raise ValueError(f"default_pipeline must be one of {PIPELINES}")


@dataclass(frozen=True, slots=True)
class MemFuseConfig:
    """Everything a memory needs to know, with defaults that work offline.

    ``durability``: ``"normal"`` (WAL, synchronous=NORMAL) never loses an acknowledged
    observation when the process dies, but a power loss may take the last few
    transactions; ``"full"`` (synchronous=FULL) fsyncs every commit and survives
    power loss too, at the cost of one fsync per acknowledgement.
    """

    embedder: str = "e5-small-int8"
    model_dir: Path = field(default_factory=default_model_dir)
    threads: int = 1
    durability: Durability = "normal"
    ingest: IngestConfig = field(default_factory=IngestConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)

    def __post_init__(self) -> None:
        _positive("threads", self.threads)
        if self.durability not in ("normal", "full"):
            raise ValueError("durability must be 'normal' or 'full'")
        object.__setattr__(self, "model_dir", Path(self.model_dir).expanduser())
