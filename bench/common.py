"""Shared benchmark helpers: timing statistics, RSS, result files, machine facts."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memfuse_lite.embed.base import Embedder, EmbedderInfo

RESULTS = Path(__file__).resolve().parent / "results"


def percentiles(values_ms: list[float]) -> dict[str, float]:
    """p50/p95/p99 and mean of latencies in milliseconds."""
    arr = np.asarray(values_ms, dtype=np.float64)
    if arr.size == 0:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0}
    return {
        "p50": round(float(np.percentile(arr, 50)), 2),
        "p95": round(float(np.percentile(arr, 95)), 2),
        "p99": round(float(np.percentile(arr, 99)), 2),
        "mean": round(float(arr.mean()), 2),
    }


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def current_rss_mb() -> float:
    """Current resident set size in MB (Linux)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / 1e6, 1)
    except OSError:
        return 0.0


def machine() -> dict[str, Any]:
    """What produced the figures."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent).stdout.strip()
        # code changed since that commit: the figures are not that commit's
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "memfuse_lite",
             "bench", ":!bench/results", ":!bench/plots", ":!bench/RESULTS.md",
             ":!bench/HISTORY.md"], capture_output=True, text=True,
            cwd=Path(__file__).parents[1]).stdout.strip()
        if commit and changed:
            commit += "+changes"
    except OSError:
        commit = ""
    return {"cpu": cpu, "cores": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d"), "commit": commit, "packages": packages(),
            "embedder": prepared_embedder()}


RUNTIME_PACKAGES = ("apsw", "hnswlib", "llama_cpp_python", "numpy", "onnxruntime", "rjieba",
                    "rustworkx", "tantivy", "tokenizers")
"""The packages whose versions the figures may depend on (index scoring, tokenization,
inference): a fresh install that resolves newer ones can move a figure slightly."""


def packages() -> dict[str, str | None]:
    """The installed version of each of :data:`RUNTIME_PACKAGES` (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in RUNTIME_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def prepared_embedder() -> str | None:
    """The content hash of the default embedder as prepared here (the exported int8 ONNX
    can differ between exports with other tool versions), or None when not prepared."""
    from memfuse_lite.config import default_model_dir

    try:
        meta = json.loads((default_model_dir() / "e5-small-int8" / "memfuse_model.json")
                          .read_text())
    except (OSError, ValueError):
        return None
    return str(meta.get("content_hash") or "") or None


def write_result(name: str, data: dict[str, Any]) -> Path:
    """Save one benchmark's figures as bench/results/NAME.json."""
    RESULTS.mkdir(exist_ok=True)
    profile = os.environ.get("MEMFUSE_BENCH_PROFILE")  # set by bench low-end
    if profile:
        name += f"-{profile}"
        wrapper = os.environ.get("MEMFUSE_BENCH_WRAPPER", "")
        command = str(data.get("command", ""))
        data = {**data, "profile": profile, "wrapper": wrapper,
                "command": command.replace("python3 -m bench", wrapper, 1)}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2, ensure_ascii=False)
                    + "\n")
    print(f"wrote {path}")
    return path


class HashingEmbedder(Embedder):
    """A hashing bag-of-words vectoriser (no model): measures the engine without the
    embedder's cost. Its vectors carry no meaning beyond shared words."""

    def __init__(self, dims: int = 384) -> None:
        self.info = EmbedderInfo(model_id="hashing-bow", dims=dims, pooling="none",
                                 content_hash="hashing-bow-v1")

    def embed_batch(self, texts: Sequence[str], role: str) -> np.ndarray:  # type: ignore[override]
        out = np.zeros((len(texts), self.info.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.encode("utf-8")) % self.info.dims] += 1.0
            out[row, 0] += 1e-3
        return out


class TimedEmbedder(Embedder):
    """Wraps an embedder and adds up the time spent embedding queries, so a search's
    latency can be reported with and without its query embedding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.info = inner.info
        self.query_seconds = 0.0

    def embed_batch(self, texts: Sequence[str], role: str) -> np.ndarray:  # type: ignore[override]
        if role != "query":
            return self.inner.embed_batch(texts, role)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        try:
            return self.inner.embed_batch(texts, role)  # type: ignore[arg-type]
        finally:
            self.query_seconds += time.perf_counter() - t0

    def load(self) -> None:
        self.inner.load()

    def close(self) -> None:
        self.inner.close()


class RssSampler:
    """The highest resident set seen while it runs (a thread reading /proc every 0.2 s)."""

    def __init__(self) -> None:
        self.peak = current_rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, current_rss_mb())

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, current_rss_mb())


def stage_overhead(stages: dict[str, float]) -> float:
    """Fusion + index + commit as a share of an ingest run's summed stage seconds."""
    return (stages["fuse"] + stages["index"] + stages["commit"]) / (sum(stages.values()) or 1.0)


def outside_embedding(ingest: dict[str, Any]) -> float:
    """The share of an ingest run's wall time not covered by its embed stage: what
    extraction, fusion, indexing and committing add beyond the embedder's own work once the
    pipeline overlaps them with embedding (the summed stage times ignore that overlap)."""
    seconds = float(ingest["seconds"])
    return max(0.0, seconds - float(ingest["stage_seconds"]["embed"])) / (seconds or 1.0)
