"""How many distinct records the old duplicate key dropped, per dataset.

The old key merged any two observations of one (source, user, time, text), whatever their
external ids, counterparts or visibility; records are now merged only when they are one
record (:meth:`memfuse_lite.store.sqlite.Store.insert_observations`). Every observation
of each dataset goes through a real store twice over (once per key) without embedding:
the counts are the records each key took for a duplicate of one already stored.

    python3 -m bench identity            # LifeBench EN and ZH, LoCoMo, household, fixtures
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memfuse_lite import Observation
from memfuse_lite.importers import ImportContext, read
from memfuse_lite.records import Rejected
from memfuse_lite.store import Store
from memfuse_lite.timeutil import to_iso

from .adapters import lifebench_observations, locomo_conversations, locomo_observations
from .common import write_result

ROOT = Path(__file__).resolve().parents[1]
HOUSEHOLD = ROOT / "bench" / "data" / "household-s7" / "observations.jsonl"
FIXTURES = ROOT / "tests" / "fixtures" / "import"
FIXTURE_KINDS = {"calendar.ics": "ics", "calls.xml": "android-sms",
                 "sms.xml": "android-sms", "chat_android.txt": "whatsapp",
                 "chat_iphone.txt": "whatsapp", "contacts.vcf": "vcf",
                 "mail.mbox": "mail", "message.eml": "mail"}


def _household() -> Iterator[dict[str, Any]]:
    import json

    with HOUSEHOLD.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _fixtures() -> Iterator[Observation]:
    ctx = ImportContext(user="ana", device="phone")
    for name, kind in FIXTURE_KINDS.items():
        for item in read(kind, FIXTURES / name, ctx):
            if not isinstance(item, Rejected):
                yield item


Records = Iterable[Observation | dict[str, Any]]


def datasets() -> dict[str, Iterator[Records]]:
    """Name → its memories (each one's observations: JSON objects or Observations), read
    lazily: LoCoMo is ten conversations, each a memory of its own, as ``bench quality``
    ingests them."""
    return {
        "lifebench-en": iter([lifebench_observations("en")]),
        "lifebench-zh": iter([lifebench_observations("zh")]),
        "locomo": (locomo_observations(conv) for conv in locomo_conversations()),
        "household-s7": iter([_household()]),
        "importer-fixtures": iter([_fixtures()]),
    }


def count(memories: Iterable[Records]) -> dict[str, Any]:
    """Observations, and how many each key took for duplicates (with a few examples of
    what the old key dropped that the new one keeps), summed over the memories."""
    total: dict[str, Any] = {"observations": 0, "dropped_old_key": 0, "dropped_now": 0,
                             "kept_now": 0, "examples": []}
    for records in memories:
        one = _count_one(records)
        for key, value in one.items():
            total[key] += value
    total["examples"] = total["examples"][:5]
    return total


def _count_one(records: Records) -> dict[str, Any]:
    observations = [r if isinstance(r, Observation) else Observation.from_json(r)
                    for r in records]
    old_keys: set[tuple[str, ...]] = set()
    old_dropped: list[Observation] = []
    for o in observations:
        natural = ("id", o.user, o.source, o.external_id)
        content = ("content", o.source, o.user, to_iso(o.ts), o.text)
        if natural in old_keys or content in old_keys:
            old_dropped.append(o)
        old_keys.update((natural, content))
    with tempfile.TemporaryDirectory(prefix="identity-") as tmp:
        store = Store(Path(tmp) / "db")
        results = store.insert_observations(observations)
        store.close()
    new_dropped = [o for o, r in zip(observations, results, strict=True)
                   if r.status == "duplicate"]
    kept_now = {id(o) for o in old_dropped} - {id(o) for o in new_dropped}
    examples = [{"source": o.source, "user": o.user, "ts": to_iso(o.ts), "text": o.text[:80],
                 "external_id": o.external_id}
                for o in old_dropped if id(o) in kept_now][:5]
    return {"observations": len(observations), "dropped_old_key": len(old_dropped),
            "dropped_now": len(new_dropped), "kept_now": len(kept_now), "examples": examples}


def main(argv: list[str] | None = None) -> None:
    """Count per dataset, print a table and write bench/results/identity.json."""
    ap = argparse.ArgumentParser(prog="python3 -m bench identity", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="*", help="default: all")
    args = ap.parse_args(argv)
    rows: dict[str, Any] = {}
    print(f"{'dataset':<20} {'observations':>12} {'old key dropped':>16} "
          f"{'dropped now':>12} {'kept now':>9}")
    for name, memories in datasets().items():
        if args.datasets and name not in args.datasets:
            continue
        row = rows[name] = count(memories)
        print(f"{name:<20} {row['observations']:>12,} {row['dropped_old_key']:>16,} "
              f"{row['dropped_now']:>12,} {row['kept_now']:>9,}")
        for ex in row["examples"][:2]:
            print(f"    e.g. {ex['source']} {ex['user']} {ex['ts']} #{ex['external_id']}: "
                  f"{ex['text']!r}")
    if not args.datasets:  # a partial run leaves the whole table as it was
        write_result("identity", {"command": "python3 -m bench identity", "datasets": rows})


if __name__ == "__main__":
    main()
