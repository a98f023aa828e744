"""Generate a household's observations and reviewed questions as JSONL.

    python3 -m bench generate --seed 7 --size 2000 --questions 150 --out bench/data/household-s7

Writes observations.jsonl (the CLI's ingest format), questions.jsonl (the CLI's query
format plus category, answer, checklist and gold evidence), scenes.jsonl (the ground
truth: each scene's observations, roles and causal links; never ingested),
rejected.jsonl (questions the reviewer refused, with the reason) and manifest.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from .gen.household import GenConfig, config_json, generate

DATA = Path(__file__).resolve().parent / "data"
SMALL = DATA / "household-s7"


def write(out: Path, cfg: GenConfig, command: str) -> dict[str, Any]:
    """Generate and write the set; returns the manifest."""
    gen = generate(cfg)
    out.mkdir(parents=True, exist_ok=True)
    files = {"observations.jsonl": gen.observations, "questions.jsonl": gen.questions,
             "scenes.jsonl": gen.scenes, "rejected.jsonl": gen.rejected}
    digests = {}
    for name, rows in files.items():
        data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
        (out / name).write_text(data, encoding="utf-8")
        digests[name] = hashlib.sha256(data.encode("utf-8")).hexdigest()
    manifest = {
        "command": command, "config": config_json(cfg),
        "observations": len(gen.observations), "questions": len(gen.questions),
        "scenes": len(gen.scenes), "rejected": len(gen.rejected),
        "categories": dict(sorted(Counter(q["category"] for q in gen.questions).items())),
        "sha256": digests,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def load(path: Path, name: str) -> list[dict[str, Any]]:
    """One JSONL file of a generated set."""
    with open(path / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench generate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--size", type=int, default=2000, help="observations (50 … 1,000,000+)")
    ap.add_argument("--users", type=int, default=3, help="household members (2-4)")
    ap.add_argument("--questions", type=int, default=150)
    ap.add_argument("--zh-rate", type=float, default=0.3)
    ap.add_argument("--distractor-rate", type=float, default=0.35)
    ap.add_argument("--conflict-rate", type=float, default=0.6)
    ap.add_argument("--chatter-rate", type=float, default=0.25)
    ap.add_argument("--out", type=Path, default=SMALL)
    args = ap.parse_args(argv)
    cfg = GenConfig(seed=args.seed, size=args.size, users=args.users, questions=args.questions,
                    zh_rate=args.zh_rate, distractor_rate=args.distractor_rate,
                    conflict_rate=args.conflict_rate, chatter_rate=args.chatter_rate)
    command = "python3 -m bench generate " + " ".join(argv or [])
    manifest = write(args.out, cfg, command.strip())
    print(f"{manifest['observations']} observations, {manifest['questions']} questions "
          f"({manifest['rejected']} rejected), {manifest['scenes']} scenes → {args.out}")
    for category, n in manifest["categories"].items():
        print(f"  {category}: {n}")
