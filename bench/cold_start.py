"""A memory's first search in a fresh process: what an assistant that opens the memory
and asks once waits for.

    python3 -m bench cold --db DIR [--viewer USER] [--trials 5]

``DIR``: any memory (``bench engine --keep DIR`` keeps a generated 100k one). Each trial is
a new process that imports the library, opens the memory and searches once, then once
more (warm); the library is imported before the clock starts. Modes:
- ``bm25``: the first BM25 search;
- ``fused``: the first fused search at once (the baseline: everything loads on demand);
- ``fused-warm``: ``warm_up()`` at open, then the first fused search at once (a one-shot
  command: the loads overlap the search);
- ``server``: ``warm_up()`` at open and the first fused search once it is done (a server
  between its start and its first question: the stall the question feels).
Times: open, first search (query embedding included), warm search; the first
search is also given from open (open + search). Goals (``fused``/``fused-warm``: open +
first fused search ≤ 1.0 s p50; ``bm25``: open + first search ≤ 0.3 s p50; ``server``:
first fused search within 2× the warm one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .common import write_result

MODES = ("bm25", "fused", "fused-warm", "server")
QUERIES = ("dinner with the Wangs last week", "what did Ben buy at the market")


def child(db: Path, viewer: str, mode: str) -> dict[str, float]:
    """One trial in this (fresh) process."""
    from memfuse_lite import MemFuse

    t1 = time.perf_counter()
    mem = MemFuse(db)
    pipeline = "bm25" if mode == "bm25" else "fused"
    warm_s = 0.0
    if mode in ("fused-warm", "server"):
        thread = mem.warm_up()
        if mode == "server":
            thread.join()
            warm_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    mem.search(QUERIES[0], viewer=viewer, pipeline=pipeline)
    t3 = time.perf_counter()
    mem.search(QUERIES[1], viewer=viewer, pipeline=pipeline)
    t4 = time.perf_counter()
    mem.close()
    return {"open_s": (t2 - t1) if mode != "server" else 0.0,
            "warm_up_s": warm_s, "first_s": t3 - t2, "warm_ms": (t4 - t3) * 1000.0,
            "open_to_answer_s": t3 - t1 if mode != "server" else t3 - t2}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python3 -m bench cold", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--viewer", default="ana")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.db, args.viewer, args.child)))
        return
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for trial in range(args.trials):
        for mode in MODES:  # interleaved: a slower minute hits every mode alike
            done = subprocess.run([sys.executable, "-m", "bench", "cold", "--db", str(args.db),
                                   "--viewer", args.viewer, "--child", mode],
                                  capture_output=True, text=True, check=True)
            runs[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"trial {trial + 1}/{args.trials} done", file=sys.stderr)
    rows: dict[str, dict[str, float]] = {
        m: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]}
        for m, rs in runs.items()}
    with __import__("memfuse_lite").MemFuse(args.db) as mem:
        events = mem.stats()["events"]
    print(f"first search in a fresh process, {events:,} events, p50 of {args.trials} trials")
    print(f"  {'mode':<11} {'open':>7} {'warm-up':>8} {'first':>7} "
          f"{'open→answer':>12} {'warm':>8}")
    for mode, r in rows.items():
        print(f"  {mode:<11} {r['open_s']:6.2f}s {r['warm_up_s']:7.2f}s "
              f"{r['first_s']:6.2f}s {r['open_to_answer_s']:11.2f}s {r['warm_ms']:6.1f}ms")
    goals: dict[str, Any] = {
        "bm25 open + first search <= 0.3 s": rows["bm25"]["open_to_answer_s"] <= 0.3,
        "fused open + first search <= 1.0 s (fused-warm)":
            rows["fused-warm"]["open_to_answer_s"] <= 1.0,
        "server: first fused search <= 2x the warm one":
            rows["server"]["first_s"] * 1000.0 <= 2 * rows["server"]["warm_ms"],
    }
    for goal, met in goals.items():
        print(f"  {goal}: {'met' if met else 'NOT met'}")
    write_result(f"cold-{events}", {"db": str(args.db), "viewer": args.viewer,
                                    "events": events, "trials": args.trials, "modes": rows,
                                    "runs": runs, "goals": goals})


if __name__ == "__main__":
    main()
