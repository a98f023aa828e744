"""A few rounds of the crash harness (``python3 -m bench reliability`` runs 100+)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.crash import run_crashes


@pytest.mark.slow
def test_sigkill_during_ingest_and_forget_loses_and_resurrects_nothing(tmp_path: Path) -> None:
    report = run_crashes(tmp_path, kills=4, seed=3, max_delay=1.0)
    assert report.kills >= 1 and report.acknowledged > 0
    assert report.ok(), report.problems
    assert report.same_as_clean_build is True
