"""``ask`` latency and LLM tokens with each local GGUF, on a built LifeBench memory.

    python3 -m bench ask --lang zh --questions 20 [--llms smollm2-135m qwen2.5-coder-0.5b]

Uses bench/out/lifebench-LANG (built by ``python3 -m bench quality``). Reports per model
and pipeline: ask latency p50/p95, LLM calls, prompt and completion tokens per question,
and the share of answers that cite at least one gold evidence record.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from dataclasses import replace
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.timeutil import parse_ts

from .adapters import lifebench_observations, lifebench_questions
from .common import percentiles, write_result
from .quality import OUT, build


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench ask", description=__doc__)
    ap.add_argument("--lang", choices=("en", "zh"), default="zh")
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--llms", nargs="*", default=["smollm2-135m", "qwen2.5-coder-0.5b"])
    args = ap.parse_args(argv)
    path = OUT / f"lifebench-{args.lang}"
    build(path, lifebench_observations(args.lang)).close()
    questions = [q for q in lifebench_questions(args.lang) if q["evidence"]][: args.questions]
    rows: list[dict[str, Any]] = []
    for llm, pipeline in itertools.product([None, *args.llms], ("fused", "agentic")):
        base = MemFuse(path)
        config = replace(base.config, answer_llm=llm)
        base.close()
        mem = MemFuse(path, config=config)
        latencies: list[float] = []
        prompt = completion = calls = grounded = 0

        async def run(mem: MemFuse = mem, pipeline: str = pipeline,
                      latencies: list[float] = latencies) -> None:
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

        asyncio.run(run())
        mem.close()
        n = len(questions)
        row = {"llm": llm or "none (extractive)", "pipeline": pipeline,
               "latency_ms": percentiles(latencies), "llm_calls_per_q": round(calls / n, 2),
               "prompt_tokens_per_q": round(prompt / n, 1),
               "completion_tokens_per_q": round(completion / n, 1),
               "cites_gold_evidence": round(grounded / n, 3)}
        rows.append(row)
        print(f"{row['llm']:<20} {pipeline:<8} p50 {row['latency_ms']['p50']} ms "
              f"p95 {row['latency_ms']['p95']} ms  {row['llm_calls_per_q']} calls, "
              f"{row['prompt_tokens_per_q']}+{row['completion_tokens_per_q']} tokens/q, "
              f"cites gold {row['cites_gold_evidence']}", flush=True)
    write_result(f"ask-lifebench-{args.lang}", {
        "command": "python3 -m bench ask " + " ".join(argv or []),
        "dataset": f"lifebench-{args.lang}", "questions": len(questions), "rows": rows})
