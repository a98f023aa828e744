"""``ask`` latency, LLM tokens and answer quality with each local GGUF.

    python3 -m bench ask --lang zh --questions 20 [--llms smollm2-135m qwen2.5-coder-0.5b]
    python3 -m bench ask --dataset generated --questions 24 --llms qwen2.5-coder-0.5b

Uses the memory built by ``python3 -m bench quality`` under bench/out/. Reports per
model and pipeline: ask latency p50/p95, LLM calls, prompt and completion tokens per
question, the share of answers citing at least one gold evidence record, and, for the
generated household, the answer checklist score (share of checklist items, or one of
their aliases, stated in the answer; normalised matching).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
from dataclasses import replace
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.timeutil import parse_ts

from .adapters import lifebench_observations, lifebench_questions
from .common import percentiles, write_result
from .gen.text import contains_item
from .generate import SMALL, load
from .quality import OUT, build


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench ask", description=__doc__)
    ap.add_argument("--lang", choices=("en", "zh"), default="zh")
    ap.add_argument("--dataset", choices=("lifebench", "generated"), default="lifebench")
    ap.add_argument("--pipelines", nargs="+", default=["fused", "agentic"])
    ap.add_argument("--mc", action="store_true",
                    help="LifeBench multiple-choice questions only (reports accuracy)")
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--llms", nargs="*", default=["smollm2-135m", "qwen2.5-coder-0.5b"])
    args = ap.parse_args(argv)
    if args.dataset == "generated":
        path, name = OUT / "generated-s7", "generated"
        build(path, load(SMALL, "observations.jsonl")).close()
        pool = load(SMALL, "questions.jsonl")
        questions = [pool[i] for i in range(0, len(pool), max(1, len(pool) // args.questions))
                     ][: args.questions]  # spread over the categories
    else:
        path, name = OUT / f"lifebench-{args.lang}", f"lifebench-{args.lang}"
        build(path, lifebench_observations(args.lang)).close()
        questions = [q for q in lifebench_questions(args.lang) if q["evidence"]
                     and (not args.mc or q["options"])][: args.questions]
        name += "-mc" if args.mc else ""
    rows: list[dict[str, Any]] = []
    for llm, pipeline in itertools.product([None, *args.llms], args.pipelines):
        base = MemFuse(path)
        config = replace(base.config, answer_llm=llm)
        base.close()
        mem = MemFuse(path, config=config)
        latencies: list[float] = []
        prompt = completion = calls = grounded = 0
        checklist: list[float] = []
        choices: list[float] = []

        async def run(mem: MemFuse = mem, pipeline: str = pipeline,
                      latencies: list[float] = latencies,
                      checklist: list[float] = checklist,
                      choices: list[float] = choices) -> None:
            nonlocal prompt, completion, calls, grounded
            for q in questions:
                answer = await mem.ask(q["text"][:2000], viewer=q["viewer"],
                                       now=parse_ts(q["now"]) if q["now"] else None,
                                       pipeline=pipeline)
                latencies.append(answer.latency_ms)
                prompt += answer.usage.prompt_tokens
                completion += answer.usage.completion_tokens
                calls += answer.usage.calls
                gold = {tuple(e) for e in q["evidence"]}
                if any((p.source, p.external_id) in gold
                       for c in answer.citations for p in c.provenance):
                    grounded += 1
                if q.get("options"):
                    picked = re.search(r"\b([A-H])\b", answer.text)
                    choices.append(float(bool(picked) and picked.group(1) == q["answer"]))
                if q.get("checklist"):
                    checklist.append(sum(contains_item(answer.text, item)
                                         for item in q["checklist"]) / len(q["checklist"]))

        asyncio.run(run())
        mem.close()
        n = len(questions)
        row = {"llm": llm or "none (extractive)", "pipeline": pipeline,
               "latency_ms": percentiles(latencies), "llm_calls_per_q": round(calls / n, 2),
               "prompt_tokens_per_q": round(prompt / n, 1),
               "completion_tokens_per_q": round(completion / n, 1),
               "cites_gold_evidence": round(grounded / n, 3),
               "answer_checklist": round(sum(checklist) / len(checklist), 3)
               if checklist else None,
               "mc_accuracy": round(sum(choices) / len(choices), 3) if choices else None}
        rows.append(row)
        print(f"{row['llm']:<20} {pipeline:<8} p50 {row['latency_ms']['p50']} ms "
              f"p95 {row['latency_ms']['p95']} ms  {row['llm_calls_per_q']} calls, "
              f"{row['prompt_tokens_per_q']}+{row['completion_tokens_per_q']} tokens/q, "
              f"cites gold {row['cites_gold_evidence']}, checklist {row['answer_checklist']}, "
              f"multiple choice {row['mc_accuracy']}",
              flush=True)
    write_result(f"ask-{name}", {
        "command": "python3 -m bench ask " + " ".join(argv or []),
        "dataset": name, "questions": len(questions), "rows": rows})
