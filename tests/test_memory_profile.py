"""The memory profile command runs and attributes resident memory to components
(figures are not asserted: they depend on the machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_memory_profile_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    import bench.common
    from bench.memory_profile import main

    monkeypatch.setattr(bench.common, "RESULTS", tmp_path / "results")
    (tmp_path / "results").mkdir()
    main(["--size", "300", "--embedder", "hashing", "--keep", str(tmp_path / "work")])
    out = capsys.readouterr().out
    assert "dense index" in out and "text index" in out and "per 100k events" in out
    (written,) = (tmp_path / "results").glob("memory-300-hashing.json")
    result = json.loads(written.read_text())
    names = [s["component"] for s in result["steps"]]
    assert names[1:3] == ["SQLite store", "dense index (hnswlib graph)"]
    assert result["opened_and_queried_mb"] > 0 and result["steps_sum_mb"] > 0
    assert result["events"] == 300
    assert set(result["after_queries_rss_mb"]) >= {"opened", "bm25", "fused", "agentic"}
    assert result["bm25_cold"]["process_s"] >= result["bm25_cold"]["open_s"] > 0
