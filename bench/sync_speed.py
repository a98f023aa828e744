"""Sync through a folder: bringing a fresh device up to date, and an incremental sync,
beside a plain export and ingest of the same records.

    python3 -m bench sync [--size 10000] [--extra 200]

A generated household (seed 11) of ``--size`` observations is ingested into device A
(the hashing embedder: this measures sync and ingest, not the model). Then, timed:
- A's first sync (its segments written) and the bytes in the folder;
- a fresh device B's first sync (every segment read, checked and ingested);
- the baseline: A's ``export`` to a JSONL file and a fresh device C ingesting its household
  records (sync sends only those);
- ``--extra`` new observations on A, A's sync and B's sync, per household observation,
  beside C ingesting the same observations directly;
- sealed: A's sync to a second folder with a household key (every segment sealed) and a
  fresh device D holding the key syncing from it, beside the unsealed first syncs.
Ratios are printed beside the baselines of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse, Observation, SyncKey

from .common import HashingEmbedder, write_result
from .gen import GenConfig, generate

BATCH = 256


async def _ingest(mem: MemFuse, items: list[Observation]) -> None:
    for start in range(0, len(items), BATCH):
        await mem.ingest_many(items[start : start + BATCH])
    await mem.flush()


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python3 -m bench sync", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--extra", type=int, default=200)
    args = ap.parse_args(argv)
    gen = generate(GenConfig(seed=11, size=args.size + args.extra, questions=10))
    items = [Observation.from_json(o) for o in gen.observations]
    first, extra = items[: args.size], items[args.size : args.size + args.extra]
    out: dict[str, Any] = {"size": len(first), "extra": len(extra)}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "shared"
        a, b, c, d = (MemFuse(root / n, embedder=HashingEmbedder()) for n in "abcd")
        try:
            asyncio.run(_ingest(a, first))
            t = time.perf_counter()
            sent = asyncio.run(a.sync(folder, device="a"))
            out["first_send_s"] = time.perf_counter() - t
            out["folder_bytes"] = _folder_bytes(folder)
            t = time.perf_counter()
            got = asyncio.run(b.sync(folder, device="b"))
            out["fresh_device_sync_s"] = time.perf_counter() - t
            t = time.perf_counter()
            log = io.StringIO()
            a.export(log)
            out["export_s"] = time.perf_counter() - t
            out["export_bytes"] = len(log.getvalue().encode("utf-8"))
            t = time.perf_counter()
            # the same records as sync sends: the household's
            exported = [o for o in (Observation.from_json(json.loads(line))
                                    for line in log.getvalue().splitlines())
                        if o.visibility == "household"]
            asyncio.run(_ingest(c, exported))
            out["fresh_device_ingest_s"] = time.perf_counter() - t
            asyncio.run(_ingest(a, extra))
            t = time.perf_counter()
            asyncio.run(a.sync(folder))
            out["incremental_send_s"] = time.perf_counter() - t
            t = time.perf_counter()
            inc = asyncio.run(b.sync(folder))
            out["incremental_receive_s"] = time.perf_counter() - t
            t = time.perf_counter()
            asyncio.run(_ingest(c, [o for o in extra if o.visibility == "household"]))
            out["incremental_ingest_s"] = time.perf_counter() - t
            out["sent"], out["received"] = sent.sent, got.received
            out["incremental_received"] = inc.received
            final = io.StringIO()
            a.export(final)
            out["household_records"] = final.getvalue().count('"visibility": "household"')
            out["b_holds_a_household"] = b.stats()["observations"] == out["household_records"]
            key, sealed_folder = SyncKey.new(), root / "sealed"
            t = time.perf_counter()
            asyncio.run(a.sync(sealed_folder, keys=[key]))
            out["sealed_first_send_s"] = time.perf_counter() - t
            out["sealed_folder_bytes"] = _folder_bytes(sealed_folder)
            t = time.perf_counter()
            asyncio.run(d.sync(sealed_folder, device="d", keys=[key]))
            out["sealed_fresh_device_sync_s"] = time.perf_counter() - t
            out["d_holds_a_household"] = d.stats()["observations"] == out["household_records"]
        finally:
            for mem in (a, b, c, d):
                mem.close()
    n, x = max(1, out["sent"]), max(1, out["incremental_received"])
    fresh_sync = out["first_send_s"] + out["fresh_device_sync_s"]
    fresh_plain = out["export_s"] + out["fresh_device_ingest_s"]
    inc_sync = (out["incremental_send_s"] + out["incremental_receive_s"]) / x * 1000
    inc_plain = out["incremental_ingest_s"] / x * 1000
    print(f"{out['size']:,} observations, {out['sent']:,} of the household sent; folder {out['folder_bytes'] / 1e6:.1f} MB against "
          f"an export of {out['export_bytes'] / 1e6:.1f} MB")
    print(f"  fresh device: sync {fresh_sync:.1f} s (send {out['first_send_s']:.1f} s, "
          f"receive {out['fresh_device_sync_s']:.1f} s) vs export + ingest {fresh_plain:.1f} s"
          f" = {fresh_sync / fresh_plain:.2f}x; {n / out['fresh_device_sync_s']:.0f} obs/s")
    print(f"  incremental, per observation: sync {inc_sync:.2f} ms vs ingest {inc_plain:.2f} "
          f"ms = {inc_sync / inc_plain:.2f}x; B holds A's {out['household_records']:,} household "
          f"records: {out['b_holds_a_household']}")
    sealed = out["sealed_first_send_s"] + out["sealed_fresh_device_sync_s"]
    print(f"  sealed with a household key: fresh device {sealed:.1f} s = "
          f"{sealed / fresh_sync:.2f}x the unsealed sync; folder "
          f"{out['sealed_folder_bytes'] / 1e6:.1f} MB; D holds them: "
          f"{out['d_holds_a_household']}")
    write_result(f"sync-{out['size']}", {"command": "python3 -m bench sync "
                                         f"--size {args.size} --extra {args.extra}",
                                         **{k: round(v, 3) if isinstance(v, float) else v
                                            for k, v in out.items()},
                                         "fresh_ratio": round(fresh_sync / fresh_plain, 3),
                                         "incremental_ratio": round(inc_sync / inc_plain, 3),
                                         "sealed_ratio": round(sealed / fresh_sync, 3)})


if __name__ == "__main__":
    main()
