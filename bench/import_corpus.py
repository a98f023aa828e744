"""Import every export file of a folder a user points at, and say per file what came of it.

    python3 -m bench import --corpus DIR [--tz ZONE] [--map ts=…,text=…]
    python3 -m bench import --generated [--mbox-mb 1024] [--chat-messages 100000] [--sms 100000]
                            [--telegram 100000] [--ics 50000]

(``--generated``: large generated exports read streamed and whole, records/s and peak RSS:
bench/import_scale.py.)

Each file is read by the importers whose suffixes fit it (the one that reads the most
records wins: a ``.json`` may be Telegram, Keep or Timeline), nothing is ingested, and the
table gives per file the importer, records read, records rejected and the most frequent
reasons; the totals go to bench/results/import-corpus.json. Photos are counted per
folder of pictures.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memfuse_lite.clock import zone_of
from memfuse_lite.importers import IMPORTERS, ImportContext, read
from memfuse_lite.importers.table import parse_mapping
from memfuse_lite.records import Observation

from .common import write_result

PHOTO_SUFFIXES = (".jpg", ".jpeg", ".heic", ".heif", ".tif", ".tiff", ".png")


def candidates(path: Path) -> list[str]:
    """The importers that may read ``path``, by its suffix."""
    suffix = path.suffix.lower()
    return [kind for kind, imp in IMPORTERS.items() if suffix in imp.suffixes]


def best_read(path: Path, ctx: ImportContext, kinds: list[str]) -> tuple[str, list[Any]]:
    """The reading with the most observations (the first kind when none reads any)."""
    best: tuple[int, str, list[Any]] | None = None
    for kind in kinds:
        items = read(kind, path, ctx)
        found = sum(isinstance(i, Observation) for i in items)
        if best is None or found > best[0]:
            best = (found, kind, items)
    assert best is not None
    return best[1], best[2]


def survey(corpus: Path, ctx: ImportContext) -> list[dict[str, Any]]:
    """One row per file (and per folder of photos)."""
    rows: list[dict[str, Any]] = []
    photo_dirs: set[Path] = set()
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        if path.suffix.lower() in PHOTO_SUFFIXES:
            photo_dirs.add(path.parent)
            continue
        kinds = candidates(path)
        if not kinds:
            rows.append({"file": str(path.relative_to(corpus)), "kind": None, "read": 0,
                         "rejected": 0, "seconds": 0.0, "reasons": ["no importer reads it"]})
            continue
        t0 = time.perf_counter()
        kind, items = best_read(path, ctx, kinds)
        rows.append(_row(corpus, path, kind, items, time.perf_counter() - t0))
    for folder in sorted(photo_dirs):
        t0 = time.perf_counter()
        items = read("photos", folder, ctx)
        rows.append(_row(corpus, folder, "photos", items, time.perf_counter() - t0))
    return rows


def _row(corpus: Path, path: Path, kind: str, items: list[Any], seconds: float
         ) -> dict[str, Any]:
    rejected = [i for i in items if not isinstance(i, Observation)]
    reasons = Counter(r.reason.split(":")[0][:80] for r in rejected)
    return {"file": str(path.relative_to(corpus)) or ".", "kind": kind,
            "read": len(items) - len(rejected), "rejected": len(rejected),
            "seconds": round(seconds, 3),
            "reasons": [f"{n}× {why}" for why, n in reasons.most_common(3)]}


def main(argv: list[str] | None = None) -> None:
    """Survey a folder of exports; print a table and write the result."""
    ap = argparse.ArgumentParser(prog="python3 -m bench import", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, help="a folder of export files")
    ap.add_argument("--tz", default="UTC", help="zone of times given without one")
    ap.add_argument("--map", help="column mapping for CSV files (as memfuse import csv)")
    ap.add_argument("--generated", action="store_true",
                    help="instead: generated large exports, records/s and peak RSS")
    ap.add_argument("--mbox-mb", type=float, default=1024.0)
    ap.add_argument("--chat-messages", type=int, default=100_000)
    ap.add_argument("--sms", type=int, default=100_000)
    ap.add_argument("--telegram", type=int, default=100_000)
    ap.add_argument("--ics", type=int, default=50_000)
    args = ap.parse_args(argv)
    if args.generated:
        from .import_scale import run

        run(args.mbox_mb, args.chat_messages, args.sms, args.telegram, args.ics)
        return
    if args.corpus is None or not args.corpus.is_dir():
        ap.error(f"{args.corpus} is not a folder")
    ctx = ImportContext(user="me", device="export", tz=zone_of(args.tz),
                        options=parse_mapping(args.map) if args.map else {})
    rows = survey(args.corpus, ctx)
    width = max([len(r["file"]) for r in rows] + [4])
    print(f"{'file':<{width}} {'kind':<12} {'read':>7} {'rejected':>8}  reasons")
    for r in rows:
        print(f"{r['file']:<{width}} {r['kind'] or '-':<12} {r['read']:>7} {r['rejected']:>8}  "
              f"{'; '.join(r['reasons'])}")
    total = {"files": len(rows), "read": sum(r["read"] for r in rows),
             "rejected": sum(r["rejected"] for r in rows),
             "unread_files": sum(1 for r in rows if not r["read"])}
    print(f"{total['files']} files: {total['read']} records read, {total['rejected']} "
          f"rejected; {total['unread_files']} files gave nothing")
    write_result("import-corpus", {"command": "python3 -m bench import --corpus "
                                   f"{args.corpus.name}", "total": total, "rows": rows})


if __name__ == "__main__":
    main()
