"""The CLI end to end, its JSON contract, and that every command is documented."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memfuse_lite.cli import build_parser, main

README = Path(__file__).parents[1] / "README.md"


@pytest.fixture
def argv_common(model_dir: Path) -> list[str]:
    return ["--model-dir", str(model_dir)]


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)
                              for r in rows) + "\n")
    return path


def test_ingest_search_show_stats(tmp_path: Path, argv_common: list[str], e5_dir: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    data = write_jsonl(tmp_path / "obs.jsonl", [
        {"source": "calendar", "external_id": "k1", "user": "ana", "device": "laptop",
         "ts": "2025-03-03T08:00:00", "text": "Dentist – Dr. Lin, Wed 15:00"},
        {"source": "chat", "external_id": "c1", "user": "ana", "device": "phone",
         "ts": "2025-03-04T12:10:00", "text": "My dentist moved to Thursday 4pm",
         "meta": {"thread": "family"}},
        {"source": "sms", "external_id": "s1", "user": "ben", "ts": "2025-03-04T18:30:00",
         "text": "牙医改到周四下午四点", "visibility": "private"},
        {"source": "chat", "external_id": "c1", "user": "ana", "device": "phone",
         "ts": "2025-03-04T12:10:00", "text": "My dentist moved to Thursday 4pm"},
        {"source": "sms", "user": "ana", "ts": "not a time", "text": "bad"},
        "{not json",
        {"source": "sms", "user": "ana", "ts": "2025-03-04T18:30:00", "text": ""},
    ])
    assert main(["ingest", "--db", db, "--json", *argv_common, str(data)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["ingested"], summary["duplicate"], summary["rejected"]) == (3, 1, 3)
    assert any("obs.jsonl:5" in r and "ts" in r for r in summary["reasons"])
    assert any("obs.jsonl:7" in r and "text" in r for r in summary["reasons"])

    assert main(["search", "--db", db, "--viewer", "ana", "--json", *argv_common,
                 "dentist Thursday"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert set(line) == {"id", "hits", "latency_ms"}
    hit = line["hits"][0]
    assert set(hit) == {"event_id", "score", "text", "fused_id", "provenance"}
    assert set(hit["provenance"][0]) == {"observation_id", "source", "external_id", "user",
                                         "device", "ts"}
    assert all(h["provenance"][0]["user"] == "ana" for h in line["hits"])

    queries = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "q1", "text": "牙医", "viewer": "ben", "now": "2025-03-05T00:00:00"},
        {"id": "q2", "text": "牙医", "viewer": "ana", "now": None},
    ])
    assert main(["search", "--db", db, "--queries", str(queries), "--pipeline", "bm25",
                 "--json", *argv_common]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["id"] for x in lines] == ["q1", "q2"]
    assert lines[0]["hits"] and not lines[1]["hits"]

    assert main(["show", "--db", db, *argv_common, str(hit["event_id"])]) == 0
    out = capsys.readouterr().out
    assert "←" in out and hit["provenance"][0]["external_id"] in out
    assert main(["show", "--db", db, "--viewer", "ana", *argv_common,
                 str(lines[0]["hits"][0]["event_id"])]) == 2
    assert "no event" in capsys.readouterr().err

    assert main(["stats", "--db", db, "--json", *argv_common]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["observations"] == 3 and stats["events"] == 3


def test_demo_runs(argv_common: list[str], e5_dir: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", *argv_common]) == 0
    out = capsys.readouterr().out
    assert "ingested 13 observations" in out
    assert "← chat #demo-1" in out
    ana_gift = out.split("[ana] What gift")[1].split("[ben]")[0]
    assert "jade" not in ana_gift, "a private note leaked into another user's results"


def test_models_list(argv_common: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "list", *argv_common]) == 0
    out = capsys.readouterr().out
    assert re.search(r"e5-small-int8\s+embedder\s+prepared", out)


def test_every_command_is_documented_in_the_readme() -> None:
    text = README.read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in sub.choices:  # type: ignore[union-attr]
        assert f"memfuse {name}" in text, f"`memfuse {name}` is not in the README"
