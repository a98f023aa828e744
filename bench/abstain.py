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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.answer import wording
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    lifebench_name,
    lifebench_observations,
    lifebench_questions,
    locomo_conversations,
    locomo_observations,
    locomo_questions,
)
from .common import write_result
from .generate import SMALL, load
from .quality import OUT, build

RULES = {"half, or four (ships)": wording.ENOUGH_KEY_WORDS, "half": 10**9}
"""Each rule's :data:`~memfuse_lite.answer.wording.ENOUGH_KEY_WORDS`."""


def memories(limit: int) -> list[tuple[str, Path, Iterable[dict[str, Any]], list[dict[str, Any]],
                                      list[dict[str, Any]]]]:
    """(name, folder, observations, own questions, foreign questions) of each memory."""
    def own(questions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return [q for q in questions if q["evidence"]][:limit]

    household = own(load(SMALL, "questions.jsonl"))
    person = {lang: own(lifebench_questions(lang)) for lang in ("en", "zh")}
    half = (limit + 1) // 2
    out = [("household", OUT / "generated-s7", load(SMALL, "observations.jsonl"), household,
            person["en"][:half] + person["zh"][: limit - half]),
           (lifebench_name("en"), OUT / lifebench_name("en"), lifebench_observations("en"),
            person["en"], household)]
    convs = locomo_conversations()
    for i, conv in enumerate(convs):
        following = convs[(i + 1) % len(convs)]
        out.append((f"locomo-{i}", OUT / f"locomo-{i}", locomo_observations(conv),
                    own(locomo_questions(conv, i)),
                    own(locomo_questions(following, (i + 1) % len(convs)))))
    return out


def asked(mem: MemFuse, own: list[dict[str, Any]], foreign: list[dict[str, Any]]
          ) -> Counter[str]:
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
        for name, path, observations, own, foreign in memories(args.questions):
            build(path, observations).close()
            for rule, enough in RULES.items():
                wording.ENOUGH_KEY_WORDS = enough
                mem = MemFuse(path)
                try:
                    tally = asked(mem, own, foreign)
                finally:
                    mem.close()
                row = {"memory": name, "rule": rule,
                       "foreign": tally["foreign asked"],
                       "foreign_answered": round(tally["foreign answered"]
                                                 / max(1, tally["foreign asked"]), 3),
                       "own": tally["own asked"],
                       "own_answered": round(tally["own answered"]
                                             / max(1, tally["own asked"]), 3),
                       "own_answered_with_gold": round(tally["own answered with gold"]
                                                       / max(1, tally["own asked"]), 3)}
                rows.append(row)
                print(f"{name:<18} {rule:<22} foreign answered {row['foreign_answered']:<6} "
                      f"(of {row['foreign']}, goal 0)  own answered {row['own_answered']:<6} "
                      f"with gold {row['own_answered_with_gold']:<6} (of {row['own']})",
                      flush=True)
    finally:
        wording.ENOUGH_KEY_WORDS = shipped
    write_result("abstain", {"command": "python3 -m bench abstain " + " ".join(argv or []),
                             "rows": rows})
