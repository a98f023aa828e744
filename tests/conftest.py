"""Shared fixtures: the real prepared models, and memories in tmp_path."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.config import IngestConfig, default_model_dir
from memfuse_lite.embed import Embedder, EmbedderInfo, OnnxEmbedder
from memfuse_lite.prepare.registry import is_prepared, model_path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """Where `memfuse models prepare` put the models (the test command prepares them)."""
    return default_model_dir()


@pytest.fixture(scope="session")
def e5_dir(model_dir: Path) -> Path:
    if not is_prepared("e5-small-int8", model_dir):
        pytest.fail(f"e5-small-int8 is not prepared in {model_dir}: run `memfuse models prepare`")
    return model_path("e5-small-int8", model_dir)


@pytest.fixture(scope="session")
def embedder(e5_dir: Path) -> OnnxEmbedder:
    """The real int8 multilingual e5 embedder, shared by the whole session."""
    return OnnxEmbedder(e5_dir)


@pytest.fixture
def config(model_dir: Path) -> MemFuseConfig:
    # times without an offset are read in UTC, whatever this machine's zone
    return MemFuseConfig(model_dir=model_dir, tz="UTC",
                         ingest=IngestConfig(batch_size=16, batch_latency_s=0.01))


@pytest.fixture
def open_memory(tmp_path: Path, config: MemFuseConfig, embedder: OnnxEmbedder):
    """A factory: open (or reopen) the memory in tmp_path with the real embedder."""
    opened: list[MemFuse] = []

    def _open(path: Path | None = None, **kwargs: object) -> MemFuse:
        mem = MemFuse(path or tmp_path / "mem", config=kwargs.pop("config", config),  # type: ignore[arg-type]
                      embedder=kwargs.pop("embedder", embedder),  # type: ignore[arg-type]
                      **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield _open
    for mem in opened:
        mem.close()


class FakeEmbedder(Embedder):
    """A deterministic bag-of-words hashing embedder, for tests about something other than
    embedding quality. Texts containing ``poison`` raise, to exercise dead-lettering."""

    def __init__(self, dims: int = 64, model_id: str = "fake-hash") -> None:
        self.info = EmbedderInfo(model_id=model_id, dims=dims, pooling="mean",
                                 content_hash=hashlib.sha256(model_id.encode()).hexdigest())

    def embed_batch(self, texts: Sequence[str], role: str) -> np.ndarray:  # type: ignore[override]
        out = np.zeros((len(texts), self.info.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            if "poison" in text:
                raise ValueError("poisoned text")
            for word in text.lower().split():
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[row, h % self.info.dims] += 1.0
            out[row, 0] += 1e-3
        return out


def obs(text: str, *, user: str = "ana", source: str = "chat", ts: str = "2025-03-04T12:00",
        ext: str | None = None, **kw: object) -> Observation:
    """A short observation constructor for tests."""
    return Observation(source=source, user=user, ts=ts, text=text,
                       external_id=ext or hashlib.sha1(f"{user}{source}{ts}{text}".encode())
                       .hexdigest()[:12], **kw)  # type: ignore[arg-type]
