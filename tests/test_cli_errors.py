"""Every command, given a bad argument or file, prints one ``memfuse: error:`` line and exits
2; a closed pipe ends it quietly; the API raises MemFuseError subclasses for wrong types."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from memfuse_lite import InvalidConfig, InvalidQuery, MemFuseConfig, Observation
from memfuse_lite.cli import main
from memfuse_lite.config import IngestConfig
from memfuse_lite.embed import OnnxEmbedder


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder, model_dir: Path
       ) -> Path:
    """A small memory, with the embedder the commands open it with."""
    import asyncio

    from memfuse_lite import MemFuse

    path = tmp_path_factory.mktemp("cli") / "db"

    async def fill() -> None:
        async with MemFuse(path, embedder=embedder, config=MemFuseConfig(model_dir=model_dir)
                           ) as mem:
            await mem.ingest_many([
                Observation(source="sms", user="ana", ts=f"2025-03-0{1 + i % 9}T10:0{i % 10}",
                            text=f"note {i}: the dentist moved to Thursday", external_id=f"n{i}",
                            visibility="private" if i == 0 else "household")
                for i in range(60)])
            await mem.flush()

    asyncio.run(fill())
    return path


BAD = [
    (["search", "--viewer", "ana", "--pipeline", "bm25", "--now", "garbage", "dentist"],
     "--now: not an ISO-8601"),
    (["search", "--pipeline", "bm25", "dentist"], "--viewer"),
    (["ask", "--viewer", "ana", "--now", "2025-13-45", "when?"], "--now"),
    (["forget", "--before", "garbage"], "before: not an ISO-8601"),
    (["show", "bogus:1"], "unknown kind 'bogus'"),
    (["show", "obs:abc"], "is not an id"),
    (["show", "--viewer", "ben", "obs:1"], "no events of observation 1"),
    (["show", "999999"], "no event 999999"),
    (["search", "--viewer", "ana", "--pipeline", "bm25", "--queries", "MISSING"],
     "missing.jsonl: No such file"),
]


@pytest.mark.parametrize(("argv", "says"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_arguments_print_one_error_line(db: Path, argv: list[str], says: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.replace("MISSING", str(db.parent / "missing.jsonl")) for a in argv]
    assert main([argv[0], "--db", str(db), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memfuse: error: ") and err.count("\n") == 1, err
    assert says in err, err


def test_a_missing_input_file_is_one_error_line(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", "--db", str(tmp_path / "db"), "--quiet",
                 str(tmp_path / "missing.jsonl")]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("memfuse: error: nothing could be read") and err.count("\n") == 1
    assert "missing.jsonl: No such file" in out  # the summary names it


def test_what_a_viewer_may_not_see_looks_missing(db: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Observation 1 is ana's private note: for ben it is as absent as observation 9999."""
    assert main(["show", "--db", str(db), "--viewer", "ben", "obs:1"]) == 2
    hidden = capsys.readouterr().err
    assert main(["show", "--db", str(db), "--viewer", "ben", "obs:9999"]) == 2
    missing = capsys.readouterr().err
    assert hidden.replace("1", "N") == missing.replace("9999", "N") != ""
    assert main(["show", "--db", str(db), "--viewer", "ana", "--json", "obs:1"]) == 0
    assert json.loads(capsys.readouterr().out)["text"].startswith("note 0")
    assert main(["show", "--db", str(db), "--viewer", "ben", "--json", "obs:2"]) == 0


def test_a_closed_pipe_ends_quietly(db: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "memfuse_lite", "export", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100)
    proc.stdout.close()  # what `| head -c 100` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_the_api_raises_memfuse_errors_for_wrong_types(db: Path) -> None:
    from memfuse_lite import MemFuse

    with MemFuse(db) as mem:
        with pytest.raises(InvalidQuery, match="now"):
            mem.search("dentist", viewer="ana", pipeline="bm25", now="garbage")
        with pytest.raises(InvalidQuery, match="now"):
            mem.search("dentist", viewer="ana", pipeline="bm25", now=12)  # type: ignore[arg-type]
        as_text = mem.search("dentist", viewer="ana", pipeline="bm25", now="2025-03-02T00:00")
        as_time = mem.search("dentist", viewer="ana", pipeline="bm25",
                             now=datetime(2025, 3, 2))
        assert [h.event_id for h in as_text.hits] == [h.event_id for h in as_time.hits]
        with pytest.raises(InvalidQuery, match="before"):
            mem.forget(before="garbage")
    with pytest.raises(InvalidConfig):
        MemFuseConfig(ingest=IngestConfig(batch_size=0))
    with pytest.raises(ValueError):  # still a ValueError for callers that caught one
        MemFuseConfig(durability="sometimes")  # type: ignore[arg-type]


COMMANDS = [["ingest", "X.jsonl"], ["import", "ics", "X.ics", "--user", "ana"],
            ["search", "--viewer", "ana", "q"], ["ask", "--viewer", "ana", "q"], ["show", "1"],
            ["stats"], ["forget", "--source", "sms"], ["export"], ["merge", "X.jsonl"],
            ["reembed"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=[a[0] for a in COMMANDS])
def test_every_command_refuses_an_unknown_zone_in_one_line(
        db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.replace("X", str(db.parent / "input")) for a in argv]
    assert main([argv[0], "--db", str(db), "--tz", "Mars/Olympus", *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memfuse: error: ") and err.count("\n") == 1, err
    assert "Mars/Olympus" in err
