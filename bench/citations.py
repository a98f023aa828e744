"""Where a multiple-choice answer's cited record could come from, and how far each choice
of it is from the evidence retrieval holds.

    python3 -m bench citations [--langs en zh] [--k 5] [--llm qwen2.5-coder-0.5b | --llm none]
                               [--person NAME]

For every LifeBench multiple-choice question with evidence (the memories of bench/out, built
as ``bench quality`` does), ``ask(..., choices=)`` answers extractively on the fused
pipeline, and its context is kept. Reported per language, as the share of chosen records
that are gold evidence:

- **cited**: the records the answer cites (its citation precision, as ``bench ask``);
- **search's first**: the context's first record;
- **LLM's pick**: the record the LLM names as the one answering the question, from the
  first ``k`` (one schema-constrained call: the record's number; a reranker that can be
  run here);
- **gold within the first n**: the share of questions whose first ``n`` records hold a gold
  one, the ceiling of any choice among them (n = 1, 3, 5, 10, 20).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.config import MemFuseConfig
from memfuse_lite.errors import LLMError
from memfuse_lite.llm import LLM, LlamaCppLLM
from memfuse_lite.prepare.registry import resolve_llm_file
from memfuse_lite.records import Hit
from memfuse_lite.retrieve.agentic import evidence_line
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    PERSON,
    check_person,
    lifebench_name,
    lifebench_observations,
    lifebench_questions,
)
from .ask_speed import Scores
from .common import write_result
from .quality import OUT, build

WITHIN = (1, 3, 5, 10, 20)
"""The context depths whose gold share bounds any choice among their records."""
PICK_SYSTEM = ("Pick the one record that answers the person's question. Reply in JSON.")


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench citations", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--langs", nargs="+", choices=("en", "zh"), default=["en", "zh"])
    ap.add_argument("--person", default=PERSON,
                    help="the LifeBench person (results are named citations-lifebench-NAME)")
    ap.add_argument("--k", type=int, default=5, help="records the LLM picks from")
    ap.add_argument("--llm", default="qwen2.5-coder-0.5b",
                    help="the LLM asked to pick the record ('none': skip)")
    ap.add_argument("--no-ranker", action="store_true",
                    help="the fused pipeline without its ranking stage (the baseline; results "
                         "named …-no-ranker)")
    args = ap.parse_args(argv)
    config = MemFuseConfig()
    if args.no_ranker:
        config = replace(config, retrieval=replace(config.retrieval, use_ranker=False))
    llm = None if args.llm == "none" else LlamaCppLLM(
        resolve_llm_file(args.llm, config.model_dir), n_ctx=2048, threads=config.threads)
    rows = []
    for lang in args.langs:
        check_person(ap, lang, args.person)
        name = lifebench_name(lang, args.person)
        build(OUT / name, lifebench_observations(lang, person=args.person)).close()
        row = {"dataset": name, "llm": args.llm, "k": args.k,
               "ranker": not args.no_ranker,
               **measure(MemFuse(OUT / name, config=config), lang, args.person, llm, args.k)}
        rows.append(row)
        print(f"{name}: {row['questions']} questions, cited {row['cited']}, search's first "
              f"{row['first']}, LLM's pick {row['llm_pick']}, gold within the first "
              + ", ".join(f"{n}: {row['within'][str(n)]}" for n in WITHIN), flush=True)
    if llm is not None:
        llm.close()
    write_result("citations-lifebench" + ("" if args.person == PERSON else f"-{args.person}")
                 + ("-no-ranker" if args.no_ranker else ""), {
        "command": "python3 -m bench citations " + " ".join(argv or []), "rows": rows})


def measure(mem: MemFuse, lang: str, person: str, llm: LLM | None, k: int
            ) -> dict[str, Any]:
    """The gold shares of each way of choosing the cited record, over the person's
    multiple-choice questions in ``lang`` (closes ``mem``)."""
    questions = [q for q in lifebench_questions(lang, person=person)
                 if q["evidence"] and q["choices"]]
    scores = Scores()  # the citation precision, counted as ``bench ask`` counts it
    first: list[float] = []
    picks: list[float] = []
    within = dict.fromkeys(WITHIN, 0)

    async def run() -> None:
        for q in questions:
            gold = {tuple(e) for e in q["evidence"]}
            answer = await mem.ask(q["question"][:2000], viewer=q["viewer"], pipeline="fused",
                                   now=parse_ts(q["now"]) if q["now"] else None,
                                   choices=q["choices"])
            scores.add(q, answer, "none (extractive)", "fused")
            hits = answer.evidence
            if hits:
                first.append(gold_share(hits[0], gold))
            for n in WITHIN:
                within[n] += any(gold_share(h, gold) > 0 for h in hits[:n])
            if llm is not None and hits:
                picks.append(gold_share(llm_pick(llm, q["question"], hits[:k]), gold))

    asyncio.run(run())
    mem.close()
    n = max(1, len(questions))
    return {"questions": len(questions),
            "cited": scores.summary()["citation_precision"],
            "first": _mean(first), "llm_pick": _mean(picks) if llm is not None else None,
            "within": {str(d): round(v / n, 3) for d, v in within.items()}}


def gold_share(hit: Hit, gold: set[tuple[str, str]]) -> float:
    """The share of ``hit``'s source records that are gold evidence."""
    records = {(p.source, p.external_id) for p in hit.provenance}
    return len(records & gold) / len(records) if records else 0.0


def llm_pick(llm: LLM, question: str, hits: Sequence[Hit]) -> Hit:
    """The record ``llm`` names as answering ``question``, from ``hits`` (the first one
    when its reply cannot be read), each read as the answer prompt numbers it."""
    number_of = {h.event_id: str(n) for n, h in enumerate(hits, 1)}
    lines = "\n".join(evidence_line(h, number_of.get) for h in hits)
    schema = {"type": "object", "properties": {"record": {"enum": list(range(1, len(hits) + 1))}},
              "required": ["record"]}
    messages = [{"role": "system", "content": PICK_SYSTEM},
                {"role": "user", "content": f"Question: {question}\n\nRecords:\n{lines}"}]
    try:
        value, _ = llm.complete_json(messages, schema, max_tokens=12, operation="pick")
    except LLMError:
        return hits[0]
    number = value.get("record")
    return hits[number - 1] if isinstance(number, int) and 1 <= number <= len(hits) else hits[0]


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None
