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
    assert main(["ingest", "--db", db, "--json", *argv_common, str(data)]) == 1  # 3 rejected
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

    assert main(["ask", "--db", db, "--viewer", "ana", "--json", *argv_common,
                 "When is my dentist appointment?"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["mode"] == "extractive" and answer["known"]
    assert answer["citations"][0]["provenance"][0]["user"] == "ana"


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


@pytest.mark.parametrize("command", [
    ["search", "--viewer", "ana", "dentist"], ["ask", "--viewer", "ana", "when?"],
    ["show", "1"], ["stats"], ["forget", "--source", "sms"], ["export"], ["reembed"]])
def test_read_commands_refuse_a_missing_memory(tmp_path: Path, argv_common: list[str],
                                               command: list[str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-memory"
    assert main([command[0], "--db", str(missing), *argv_common, *command[1:]]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "no memory" in err
    assert not missing.exists(), "a read command must not create a memory"


def test_forget_export_merge_and_reembed_commands(tmp_path: Path, argv_common: list[str],
                                                  e5_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"source": src, "external_id": f"{src}-{i}", "user": user, "device": "phone",
             "ts": f"2025-03-0{1 + i}T10:00:00", "text": text}
            for i, (src, user, text) in enumerate([
                ("sms", "ana", "Dentist moved to Thursday 4pm"),
                ("chat", "ben", "Picking up Mia after the dentist"),
                ("calendar", "ana", "Dentist – Dr. Lin, Wed 15:00"),
                ("sms", "ben", "Flight to Beijing delayed two hours")])]
    db, other = str(tmp_path / "db"), str(tmp_path / "other")
    assert main(["ingest", "--db", db, "--quiet", *argv_common,
                 str(write_jsonl(tmp_path / "a.jsonl", rows))]) == 0
    log = tmp_path / "export.jsonl"
    assert main(["export", "--db", db, "--out", str(log), *argv_common]) == 0
    exported = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(r["external_id"] for r in exported) == sorted(r["external_id"] for r in rows)

    assert main(["merge", "--db", other, "--json", "--quiet", *argv_common, str(log),
                 str(log)]) == 0
    merged = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (merged["ingested"], merged["duplicate"]) == (4, 4)
    assert merged["fusion"]["events"] == 4

    assert main(["forget", "--db", db, "--source", "sms", "--json", *argv_common]) == 0
    forgot = json.loads(capsys.readouterr().out)
    assert forgot["observations"] == 2 and forgot["events"] == 2
    assert main(["search", "--db", db, "--viewer", "ana", "--pipeline", "bm25", "--json",
                 *argv_common, "Beijing"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"] == []

    assert main(["reembed", "--db", db, *argv_common]) == 0
    assert "re-embedded 2 events" in capsys.readouterr().out
    assert main(["search", "--db", db, "--viewer", "ana", "--pipeline", "dense", "--json",
                 *argv_common, "dentist appointment"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert {h["provenance"][0]["external_id"] for h in hits} == {"chat-1", "calendar-2"}


def test_bench_help_lists_every_command() -> None:
    import subprocess
    import sys

    from bench.__main__ import COMMANDS

    out = subprocess.run([sys.executable, "-m", "bench", "--help"], capture_output=True,
                         text=True, cwd=Path(__file__).parents[1], timeout=120)
    assert out.returncode == 0, out.stderr
    for name, (_, help_text) in COMMANDS.items():
        assert re.search(rf"^\s+{name}\s+{re.escape(help_text[:30])}", out.stdout, re.M), name
