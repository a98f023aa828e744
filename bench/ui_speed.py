"""The memory inspector's first page on a large memory: what the page asks for when it
opens (the HTML, the stats, the first timeline page) and when a memory is opened or a
search is made, timed over HTTP against a real server.

    python3 -m bench ui --db DIR --viewer USER [--repeats 15]

``DIR``: any memory (``bench engine --keep DIR`` keeps a generated 100k one). The server is
the one ``memfuse ui`` runs, in a thread of this process; each request is timed by the
client from send to the last byte. Baseline from the same run: the script file (no data,
the server's floor). Goal: the first page (HTML + stats + first timeline page) p50 ≤ 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.ui.app import make_server

from .common import write_result

GOAL_MS = 300.0


def _timed(url: str, token: str) -> tuple[float, Any]:
    request = urllib.request.Request(url, headers={"X-Memfuse-Token": token})
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        raw = response.read()
    ms = (time.perf_counter() - t0) * 1000.0
    try:
        return ms, json.loads(raw)
    except ValueError:
        return ms, None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python3 -m bench ui", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--viewer", required=True)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--query", default="dinner with friends")
    args = ap.parse_args(argv)

    mem = MemFuse(args.db)
    server, sock, url = make_server(mem, args.viewer)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])),
                              daemon=True)
    thread.start()
    base, _, token = url.partition("/?token=")
    try:
        _timed(f"{base}/api/search?q=warm+up", token)  # loads the models once
        first_cold, _ = _timed(f"{base}/api/timeline", token)
        times: dict[str, list[float]] = {k: [] for k in (
            "script (baseline)", "html", "stats", "timeline page", "first page",
            "next timeline page", "open memory", "search fused")}
        for _ in range(args.repeats):
            script, _ = _timed(f"{base}/static/app.js", token)
            html, _ = _timed(url, token)
            stats, _ = _timed(f"{base}/api/stats", token)
            page_ms, page = _timed(f"{base}/api/timeline", token)
            next_ms, _ = _timed(f"{base}/api/timeline?before={page['next']}", token)
            fused = next((c["fused_id"] for c in page["cards"] if c["fused_id"]), None)
            open_ms = _timed(f"{base}/api/fused/{fused}", token)[0] if fused else 0.0
            search_ms, _ = _timed(f"{base}/api/search?q={args.query.replace(' ', '+')}",
                                  token)
            for key, value in (("script (baseline)", script), ("html", html),
                               ("stats", stats), ("timeline page", page_ms),
                               ("first page", html + stats + page_ms),
                               ("next timeline page", next_ms), ("open memory", open_ms),
                               ("search fused", search_ms)):
                times[key].append(value)
        events = mem.stats()["events"]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        mem.close()
    rows = {k: {"p50_ms": round(statistics.median(v), 2),
                "p95_ms": round(sorted(v)[int(0.95 * (len(v) - 1))], 2)}
            for k, v in times.items()}
    print(f"memory inspector over HTTP, {events:,} events, {args.repeats} repeats")
    for key, row in rows.items():
        print(f"  {key:<22} p50 {row['p50_ms']:8.2f} ms   p95 {row['p95_ms']:8.2f} ms")
    first = rows["first page"]["p50_ms"]
    print(f"  first page p50 {first:.1f} ms (cold timeline page {first_cold:.1f} ms)   "
          f"goal <= {GOAL_MS:.0f} ms: {'met' if first <= GOAL_MS else 'NOT met'}")
    write_result(f"ui-{events}", {"db": str(args.db), "viewer": args.viewer,
                                  "events": events, "repeats": args.repeats,
                                  "cold_timeline_ms": round(first_cold, 2),
                                  "requests": rows, "goal_first_page_ms": GOAL_MS,
                                  "first_page_met": first <= GOAL_MS})


if __name__ == "__main__":
    main()
