"""When ``ask`` says "I don't know": questions about another memory, against the memory's own.

    python3 -m bench abstain [--questions 150]

Each memory ``python3 -m bench quality`` builds under bench/out/ (built here when missing)
is asked, extractively on the fused pipeline, its own questions with evidence and the
questions of another memory, about other people, of which it holds nothing: the household
those of the LifeBench person (half in each language), the LifeBench person's English memory the
household's, each LoCoMo conversation the next one's. Foreign questions are asked by the
memory's usual viewer (the one asking most of its own questions) at the latest time its
own are asked. Reported per memory: the share of foreign questions answered (goal 0),
and of its own the share answered and the share answered citing a gold record. Beside the
rule that ships (records must hold half of a question's key words, or four:
:func:`memfuse_lite.answer.wording.about_question`), the same questions under half alone.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.answer import wording
from memfuse_lite.timeutil import parse_ts

from .adapters import PERSON
from .ask_every import Run, runs_of
from .common import write_result
from .quality import build

RULES = {"half, or four (ships)": wording.ENOUGH_KEY_WORDS, "half": 10**9}
"""Each rule's :data:`~memfuse_lite.answer.wording.ENOUGH_KEY_WORDS`."""

Question = dict[str, Any]


def memories(limit: int) -> list[tuple[str, Run, list[Question], list[Question]]]:
    """(name, memory, own questions, foreign questions) of each memory asked."""
    def own(run: Run) -> list[Question]:
        return [q for q in run[2]() if q["evidence"]][:limit]

    (household,), (en,), (zh,) = (runs_of(d, PERSON) for d in
                                  ("generated", "lifebench-en", "lifebench-zh"))
    locomo = runs_of("locomo", PERSON)
    asked_of = [own(run) for run in (household, en, *locomo)]
    half = (limit + 1) // 2
    return [("household", household, asked_of[0], asked_of[1][:half] + own(zh)[: limit - half]),
            (en[0].name, en, asked_of[1], asked_of[0]),
            *((run[0].name, run, asked_of[2 + i], asked_of[2 + (i + 1) % len(locomo)])
              for i, run in enumerate(locomo))]


def asked(mem: MemFuse, own: list[Question], foreign: list[Question]) -> Counter[str]:
    """Ask the questions: counts of own and foreign asked, answered, answered with gold."""
    viewer = Counter(q["viewer"] for q in own).most_common(1)[0][0]
    times = [q["now"] for q in own if q.get("now")]
    latest = parse_ts(max(times)) if times else None
    tally: Counter[str] = Counter()

    async def run() -> None:
        for kind, questions in (("own", own), ("foreign", foreign)):
            for q in questions:
                mine = kind == "own"
                now = (parse_ts(q["now"]) if q.get("now") else None) if mine else latest
                answer = await mem.ask(q["text"][:2000], viewer=q["viewer"] if mine else viewer,
                                       now=now, pipeline="fused")
                gold = {(s, str(i)) for s, i in q["evidence"]}
                cited = {(p.source, p.external_id) for c in answer.citations
                         for p in c.provenance}
                tally[f"{kind} asked"] += 1
                tally[f"{kind} answered"] += answer.known
                tally[f"{kind} answered with gold"] += answer.known and bool(cited & gold)

    asyncio.run(run())
    return tally


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench abstain", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=150,
                    help="most own and foreign questions per memory")
    args = ap.parse_args(argv)
    shipped = wording.ENOUGH_KEY_WORDS
    rows = []
    try:
        for name, (path, observations, _), own, foreign in memories(args.questions):
            build(path, observations()).close()
            for rule, enough in RULES.items():
                wording.ENOUGH_KEY_WORDS = enough
                mem = MemFuse(path)
                try:
                    tally = asked(mem, own, foreign)
                finally:
                    mem.close()

                def share(key: str, of: str, tally: Counter[str] = tally) -> float:
                    return round(tally[key] / max(1, tally[of]), 3)

                row = {"memory": name, "rule": rule,
                       "foreign": tally["foreign asked"],
                       "foreign_answered": share("foreign answered", "foreign asked"),
                       "own": tally["own asked"],
                       "own_answered": share("own answered", "own asked"),
                       "own_answered_with_gold": share("own answered with gold", "own asked")}
                rows.append(row)
                print(f"{name:<18} {rule:<22} foreign answered {row['foreign_answered']:<6} "
                      f"(of {row['foreign']}, goal 0)  own answered {row['own_answered']:<6} "
                      f"with gold {row['own_answered_with_gold']:<6} (of {row['own']})",
                      flush=True)
    finally:
        wording.ENOUGH_KEY_WORDS = shipped
    write_result("abstain", {"command": "python3 -m bench abstain " + " ".join(argv or []),
                             "rows": rows})
