"""The scale benchmark grows one memory through its sizes and measures each step (the
figures themselves are not asserted: they depend on the machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_scale_measures_every_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.common
    from bench.scale import main

    monkeypatch.setattr(bench.common, "RESULTS", tmp_path / "results")
    (tmp_path / "results").mkdir()
    main(["--sizes", "150,300", "--queries", "12", "--keep", str(tmp_path / "work")])
    result = json.loads((tmp_path / "results" / "scale-hashing.json").read_text())
    steps = result["steps"]
    assert [s["size"] for s in steps] == [150, 300] and result["complete"]
    assert [s["added"] for s in steps] == [150, 150]
    assert steps[-1]["stats"]["observations"] == 300
    for step in steps:
        assert set(step["search"]) == {"bm25", "dense", "hybrid", "fused", "fused-no-ranker",
                                       "agentic"}
        assert 0.0 <= step["ann"]["hnsw_recall"] <= step["ann"]["hnsw_recall_ties_counted"] <= 1
    assert all(len(exps) == 1 for exps in result["growth"].values())
    with pytest.raises(SystemExit):
        main(["--sizes", "300,150"])


def test_a_workload_is_generated_once_for_the_same_corpus_size_and_queries(
        tmp_path: Path) -> None:
    from bench.engine import prepare_workload

    path = tmp_path / "workload.jsonl"
    first = prepare_workload(path, "generated", 200, 5)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 200 and len(first) == 5
    path.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")  # marks the file
    assert prepare_workload(path, "generated", 200, 5) == first
    assert len(path.read_text(encoding="utf-8").splitlines()) == 10, "read again, not rewritten"
    # another query count (or size, or corpus) writes the workload anew
    assert len(prepare_workload(path, "generated", 200, 6)) == 6
    assert len(path.read_text(encoding="utf-8").splitlines()) == 200
