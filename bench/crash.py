"""The crash harness: SIGKILL an ingesting, forgetting child at random moments and check
the memory after every reopen.

After each kill: every acknowledged observation that was not forgotten is stored exactly
once, nothing forgotten came back, every event is in both indexes and nothing else is,
no fused memory or edge points at a missing event, and the inbox replays. At the end the
memory is canonicalised and compared with one built from the same observations without
crashes: the same fused memories and edges.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.config import IngestConfig

from .common import HashingEmbedder

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class CrashReport:
    """What the harness did and found."""

    kills: int = 0
    runs: int = 0
    acknowledged: int = 0  # acknowledgements seen over all runs (duplicates included)
    forgotten: int = 0
    lost: int = 0
    duplicated: int = 0
    resurrected: int = 0
    index_mismatches: int = 0
    dangling: int = 0
    same_as_clean_build: bool | None = None
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        """No invariant was broken."""
        return not (self.lost or self.duplicated or self.resurrected or self.index_mismatches
                    or self.dangling or self.same_as_clean_build is False)


def _reader(proc: subprocess.Popen[str], lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.strip())


def _kill_once(db: Path, start: int, seed: int, durability: str, delay: float
               ) -> tuple[list[str], list[str], list[str], bool]:
    """Run the child, SIGKILL it ``delay`` s after it is ready; returns (acknowledged,
    forget started, forget returned, finished)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "bench.crash_worker", str(db), str(start),
                             str(seed), durability], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    lines: list[str] = []
    thread = threading.Thread(target=_reader, args=(proc, lines), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while "ready" not in lines and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(delay)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    thread.join(timeout=10)
    acked = [x for ln in lines if ln.startswith("ack ") for x in ln.split()[1:]]
    started = [ln.split()[1] for ln in lines if ln.startswith("forgetting ")]
    forgotten = [ln.split()[1] for ln in lines if ln.startswith("forget ")]
    return acked, started, forgotten, "done" in lines


def _config(durability: str) -> MemFuseConfig:
    return MemFuseConfig(durability=durability,
                         ingest=IngestConfig(batch_size=16, batch_latency_s=0.002))


def check(db: Path, acked: set[str], maybe: set[str], forgotten: set[str], durability: str,
          report: CrashReport) -> int:
    """Reopen (replaying the inbox) and check every invariant; returns the observations.
    ``maybe``: forgets that started (killed meanwhile, the record may be there or not)."""
    mem = MemFuse(db, config=_config(durability), embedder=HashingEmbedder())

    async def replay() -> None:
        await mem.flush()

    asyncio.run(replay())
    with mem.engine.store.reading() as conn:
        counts = dict(conn.execute("SELECT external_id, count(*) FROM observations GROUP BY 1")
                      .fetchall())
        events = {int(r[0]) for r in conn.execute("SELECT id FROM events")}
        dangling = conn.execute(
            "SELECT (SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM events)"
            " OR dst NOT IN (SELECT id FROM events)) + (SELECT count(*) FROM fused_members"
            " WHERE event_id NOT IN (SELECT id FROM events)) + (SELECT count(*) FROM"
            " fused_memories f WHERE NOT EXISTS (SELECT 1 FROM fused_members m"
            " WHERE m.fused_id = f.id)) + (SELECT count(*) FROM events e WHERE NOT EXISTS"
            " (SELECT 1 FROM event_sources s WHERE s.event_id = e.id))").fetchone()[0]
        fused = {int(r[0]) for r in conn.execute("SELECT id FROM fused_memories")}
    lost = [e for e in acked - forgotten - maybe if counts.get(e, 0) == 0]
    report.lost += len(lost)
    report.duplicated += sum(1 for n in counts.values() if n > 1)
    report.resurrected += sum(1 for e in forgotten if counts.get(e, 0))
    dense, sparse = mem.engine.dense.labels(), mem.engine.text.labels()
    if not (dense == events == sparse):
        report.index_mismatches += 1
        report.problems.append(
            f"kill {report.kills}: indexes differ from SQLite: dense-sql "
            f"{sorted(dense - events)[:5]} sql-dense {sorted(events - dense)[:5]} sparse-sql "
            f"{sorted(sparse - events)[:5]} sql-sparse {sorted(events - sparse)[:5]}")
    if not mem.engine.text.fused_ids() <= fused:
        report.index_mismatches += 1
        report.problems.append(f"kill {report.kills}: a fused document outlived its memory")
    report.dangling += int(dangling)
    if lost:
        report.problems.append(f"kill {report.kills}: lost {lost[:5]}")
    total = len(counts)
    mem.close()
    return total


def signature(mem: MemFuse) -> tuple[Any, ...]:
    """Clusters and edges named by source records."""
    with mem.engine.store.reading() as db:
        key = {int(e): (u, s, x) for e, u, s, x in db.execute(
            "SELECT es.event_id, o.user, o.source, o.external_id FROM event_sources es"
            " JOIN observations o ON o.id = es.observation_id")}
        clusters: dict[int, set[Any]] = {}
        for fid, eid in db.execute("SELECT fused_id, event_id FROM fused_members"):
            clusters.setdefault(fid, set()).add(key[eid])
        edges = {(k, key[s], key[d]) for k, s, d in db.execute("SELECT kind, src, dst FROM edges")}
    return frozenset(frozenset(c) for c in clusters.values()), frozenset(edges)


def differences(want: tuple[Any, ...], got: tuple[Any, ...], shown: int = 3) -> list[str]:
    """What two signatures (:func:`signature`) disagree on: the clusters and edges only one
    holds, a few of each."""
    def some(items: frozenset[Any]) -> list[Any]:
        return sorted(sorted(i) if isinstance(i, frozenset) else i for i in items)[:shown]

    out = []
    for name, a, b in (("cluster", want[0], got[0]), ("edge", want[1], got[1])):
        if a != b:
            out.append(f"{len(a - b)} {name}s only in the crashed memory, e.g. {some(a - b)}; "
                       f"{len(b - a)} only in the clean build, e.g. {some(b - a)}")
    return out


def compare_with_clean_build(db: Path, work: Path, durability: str,
                             problems: list[str] | None = None) -> bool:
    """Canonicalise the crashed memory and a clean one from its exported log; equal?
    (What differs is appended to ``problems``.)"""
    crashed = MemFuse(db, config=_config(durability), embedder=HashingEmbedder())
    crashed.canonicalise()
    log = work / "export.jsonl"
    with open(log, "w", encoding="utf-8") as f:
        crashed.export(f)
    want = signature(crashed)
    crashed.close()
    from memfuse_lite.jsonl import read_observations

    clean = MemFuse(work / "clean", config=_config(durability), embedder=HashingEmbedder())

    async def build() -> None:
        await clean.ingest_many([o for o in read_observations(log)])  # type: ignore[misc]
        await clean.flush()

    asyncio.run(build())
    clean.canonicalise()
    got = signature(clean)
    clean.close()
    if problems is not None:
        problems += differences(want, got)
    return got == want


def run_crashes(work: Path, kills: int, seed: int = 0, durability: str = "normal",
                max_delay: float = 1.5, progress: bool = False) -> CrashReport:
    """Kill the child ``kills`` times at random moments; check after each; compare at the end."""
    rng = random.Random(seed)
    db = work / "crashed"
    report = CrashReport()
    acked: set[str] = set()
    maybe: set[str] = set()
    forgotten: set[str] = set()
    start = 0
    from .crash_worker import corpus

    order = [o.external_id for o in corpus()]
    position = {ext: i for i, ext in enumerate(order)}
    attempts = 0
    total_acked = total_forgotten = 0
    while report.kills < kills and attempts < 3 * kills:
        attempts += 1
        new, started, gone, finished = _kill_once(db, start, rng.randrange(1 << 30),
                                                  durability, rng.uniform(0.0, max_delay))
        report.kills += 0 if finished else 1  # a child that finished first was not killed
        acked.update(new)
        maybe.update(started)
        forgotten.update(gone)
        total_acked += len(new)
        total_forgotten += len(gone)
        check(db, acked, maybe, forgotten, durability, report)
        if new:
            start = max(position[e] for e in new) + 1
        if start >= len(order):
            start = 0  # wrapped: re-ingesting gives duplicates (or re-adds forgotten ones)
            forgotten.clear()
            maybe.clear()
            acked.clear()
        if progress:
            print(f"\rrun {attempts}, kills {report.kills}/{kills}: {total_acked} acknowledged, "
                  f"{total_forgotten} forgotten, lost {report.lost}", end="", file=sys.stderr,
                  flush=True)
    if progress:
        print(file=sys.stderr)
    report.acknowledged, report.forgotten = total_acked, total_forgotten
    report.runs = attempts
    report.same_as_clean_build = compare_with_clean_build(db, work, durability,
                                                          report.problems)
    return report
