"""Several processes on one memory, for ``bench reliability``: an ingesting owner, a second
ingest handing its records over through the inbox, searches reading beside both, and
the owner killed part-way.

Each round: ``memfuse ingest`` of the first half of the generated household owns the
memory; a second ``memfuse ingest`` of the other half starts beside it (a reader: its
records wait in the inbox for the owner), and ``memfuse search`` runs meanwhile; the
owner is SIGKILLed after a random delay, the second ingest takes the memory over and
finishes, and the first half is ingested again (idempotent). Then every observation of
both halves must be stored once, with its events made once, the inbox empty, and no
command may have failed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import apsw

CLI = [sys.executable, "-m", "memfuse_lite.cli"]


@dataclass
class MultiReport:
    """What the rounds found."""

    rounds: int
    observations: int
    lost: int
    duplicated: int
    failed_commands: int
    searches: int
    inbox_left: int
    takeovers: int


def _halves(rows: list[dict[str, object]], work: Path) -> tuple[Path, Path]:
    first, second = work / "first.jsonl", work / "second.jsonl"
    half = len(rows) // 2
    for path, part in ((first, rows[:half]), (second, rows[half:])):
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in part) + "\n",
                        encoding="utf-8")
    return first, second


def run_multiprocess(work: Path, rows: list[dict[str, object]], rounds: int, common: list[str],
                     seed: int = 0) -> MultiReport:
    """``rounds`` rounds over fresh memories of ``rows`` (observation JSON objects)."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    first, second = _halves(rows, work)
    wanted = {(str(r["user"]), str(r["source"]), str(r["external_id"])) for r in rows}
    failed = searches = lost = duplicated = inbox_left = takeovers = 0
    for n in range(rounds):
        db = work / f"m{n}"
        owner = subprocess.Popen([*CLI, "ingest", "--db", str(db), "--quiet", *common,
                                  str(first)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        while not (db / "memfuse.lock").exists() and owner.poll() is None:
            time.sleep(0.05)
        time.sleep(0.5)
        reader = subprocess.Popen([*CLI, "ingest", "--db", str(db), "--quiet", *common,
                                   str(second)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        killed = False
        deadline = time.monotonic() + rng.uniform(1.0, 6.0)
        while reader.poll() is None:
            found = subprocess.run([*CLI, "search", "--db", str(db), "--viewer", "ana",
                                    "--pipeline", "bm25", "--json", *common, "dinner"],
                                   capture_output=True, text=True, timeout=600)
            searches += 1
            failed += found.returncode != 0
            if not killed and time.monotonic() > deadline and owner.poll() is None:
                os.kill(owner.pid, signal.SIGKILL)
                killed = True
        owner.wait()
        _, err = reader.communicate()
        failed += reader.returncode != 0
        if reader.returncode != 0:
            print(f"  the second ingest failed: {err.strip()[-500:]}", flush=True)
        takeovers += killed
        again = subprocess.run([*CLI, "ingest", "--db", str(db), "--quiet", *common,
                                str(first)], capture_output=True, text=True, timeout=1800)
        failed += again.returncode != 0
        conn = apsw.Connection(str(db / "memfuse.db"), flags=apsw.SQLITE_OPEN_READONLY)
        stored = [(str(u), str(s), str(e)) for u, s, e in
                  conn.execute("SELECT user, source, external_id FROM observations")]
        lost += len(wanted - set(stored))
        duplicated += len(stored) - len(set(stored))
        duplicated += int(conn.execute(
            "SELECT count(*) FROM (SELECT s.observation_id FROM event_sources s"
            " GROUP BY s.observation_id HAVING count(*) > 1)").fetchone()[0])
        inbox_left += int(conn.execute("SELECT count(*) FROM inbox").fetchone()[0])
        conn.close()
        print(f"  round {n + 1}: owner {'killed' if killed else 'finished'}, "
              f"{len(stored)} observations, lost {lost}, duplicated {duplicated}, "
              f"failed commands {failed}", flush=True)
    return MultiReport(rounds=rounds, observations=len(rows), lost=lost, duplicated=duplicated,
                       failed_commands=failed, searches=searches, inbox_left=inbox_left,
                       takeovers=takeovers)
