"""``ask`` latency, LLM tokens and answer quality with each local GGUF.

    python3 -m bench ask --lang zh --questions 20 [--llms smollm2-135m qwen2.5-coder-0.5b]
                         [--person NAME] [--mc | --open]
    python3 -m bench ask --dataset generated --questions 24 --llms qwen2.5-coder-1.5b

Uses the memory built by ``python3 -m bench quality`` under bench/out/. Each question is
asked through ``ask_stream``. Reports per model and pipeline: ask latency p50/p95 and the
time to the first piece of answer text (the model's first words; without a model, the
whole answer), LLM calls, prompt and completion tokens per question, citation precision
(share of cited records that are gold evidence) and recall (share of gold evidence records
cited), the share of answers citing at least one gold record, the share of answers in the
model's own words (mode ``llm``) and, for the others, why the support check did not keep
the model's (``Answer.rejected``), and the answer checklist score: for the generated
household the share of checklist items (or an alias) stated in the answer (normalised
matching), for LifeBench open questions (``--open``) the deterministic score of
bench/checklist.py against the question's ``score_points``, beside the same score of the
gold evidence records joined (the ceiling of answering from them). For LifeBench multiple
choice (``--mc``): the accuracy of ``Answer.choice`` (``ask(..., choices=)``: the LLM's
letter is constrained by a JSON-schema enum; extractive mode picks the option closest in
meaning to one of the five best records) and of the model's own letters, kept or not,
beside the chance rate and the always-the-most-frequent-letter rate of the same questions.
Every answer is written to bench/results/ask-*-questions.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from memfuse_lite import Answer, MemFuse
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    PERSON,
    check_person,
    lifebench_name,
    lifebench_observations,
    lifebench_questions,
)
from .checklist import checklist_score
from .common import RESULTS, percentiles, write_result
from .gen.text import contains_item
from .generate import SMALL, load
from .quality import LABELS, OUT, build


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench ask", description=__doc__)
    ap.add_argument("--lang", choices=("en", "zh"), default="zh")
    ap.add_argument("--dataset", choices=("lifebench", "generated"), default="lifebench")
    ap.add_argument("--person", default=PERSON,
                    help="the LifeBench person (a folder of the shared data's lifebench/LANG); "
                         "results are named lifebench-LANG-NAME")
    ap.add_argument("--pipelines", nargs="+", default=["fused", "agentic"])
    ap.add_argument("--mc", action="store_true",
                    help="LifeBench multiple-choice questions only (reports accuracy)")
    ap.add_argument("--open", action="store_true",
                    help="LifeBench open questions only (those with a scoring checklist)")
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--llms", nargs="*", default=["smollm2-135m", "qwen2.5-coder-0.5b"])
    ap.add_argument("--evidence-tokens", type=int, default=None,
                    help="the answer prompt's evidence budget in the LLM's tokens (default: "
                         "MemFuseConfig.answer_evidence_tokens)")
    args = ap.parse_args(argv)
    if args.dataset == "generated":
        path, name = OUT / "generated-s7", "generated"
        baseline_checklist = None
        build(path, load(SMALL, "observations.jsonl")).close()
        pool = load(SMALL, "questions.jsonl")
        questions = [pool[i] for i in range(0, len(pool), max(1, len(pool) // args.questions))
                     ][: args.questions]  # spread over the categories
    else:
        check_person(ap, args.lang, args.person)
        name = lifebench_name(args.lang, args.person)
        path = OUT / name
        build(path, lifebench_observations(args.lang, person=args.person)).close()
        questions = [q for q in lifebench_questions(args.lang, person=args.person)
                     if q["evidence"] and (not args.mc or q["options"])
                     and (not args.open or q["score_points"])][: args.questions]
        name += "-mc" if args.mc else "-open" if args.open else ""
        records = {(o["source"], str(o["external_id"])): o["text"]
                   for o in lifebench_observations(args.lang, person=args.person)}
        baseline_checklist = evidence_checklist(questions, records)
    if args.evidence_tokens is not None:
        name += f"-evidence-{args.evidence_tokens}"
    rows: list[dict[str, Any]] = []
    per_question: list[dict[str, Any]] = []
    baseline = {**mc_baselines(questions), "checklist_evidence_ceiling": baseline_checklist}
    for llm, pipeline in itertools.product([None, *args.llms], args.pipelines):
        base = MemFuse(path)
        config = replace(base.config, answer_llm=llm)
        if args.evidence_tokens is not None:
            config = replace(config, answer_evidence_tokens=args.evidence_tokens)
        base.close()
        mem = MemFuse(path, config=config)
        label = pipeline if llm or pipeline != "agentic" else LABELS["agentic"]
        scores = Scores()

        async def run(mem: MemFuse = mem, pipeline: str = pipeline, label: str = label,
                      llm: str | None = llm, scores: Scores = scores) -> None:
            for q in questions:
                choices = q.get("choices") or None
                t0 = time.perf_counter()
                stream = mem.ask_stream((q["question"] if choices else q["text"])[:2000],
                                        viewer=q["viewer"], pipeline=pipeline,
                                        now=parse_ts(q["now"]) if q["now"] else None,
                                        choices=choices)
                first = None
                async for _ in stream:
                    first = first or (time.perf_counter() - t0) * 1000.0
                scores.first_text.append(first or 0.0)
                per_question.append(scores.add(q, stream.answer, llm or "none (extractive)",
                                               label))

        asyncio.run(run())
        mem.close()
        row = {"llm": llm or "none (extractive)", "pipeline": label, **scores.summary(),
               **baseline, "by_type": scores.by_type(questions)}
        rows.append(row)
        print(f"{row['llm']:<20} {label:<8} p50 {row['latency_ms']['p50']} ms "
              f"p95 {row['latency_ms']['p95']} ms (first text p50 "
              f"{row['first_text_ms']['p50']} ms)  {row['llm_calls_per_q']} calls, "
              f"{row['prompt_tokens_per_q']}+{row['completion_tokens_per_q']} tokens/q, "
              f"citation P/R {row['citation_precision']}/{row['citation_recall']}, "
              f"checklist {row['answer_checklist']}, LLM answers kept "
              f"{row['llm_answers_kept']}, multiple choice {row['mc_accuracy']} "
              f"(chance {row['mc_chance']}, most frequent letter {row['mc_majority']}; the "
              f"model's own letters {row['model_letter_accuracy']}), checklist ceiling of "
              f"the gold records {row['checklist_evidence_ceiling']}; not kept: "
              f"{row['not_kept']}",
              flush=True)
    write_result(f"ask-{name}", {
        "command": "python3 -m bench ask " + " ".join(argv or []),
        "dataset": name, "questions": len(questions), "rows": rows})
    out = RESULTS / f"ask-{name}-questions.jsonl"
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in per_question))
    print(f"wrote {out}")


def evidence_checklist(questions: list[dict[str, Any]],
                       records: dict[tuple[str, str], str]) -> float | None:
    """The mean checklist score of the gold evidence records joined, as if they were the
    answer: what answering from the evidence alone could reach (open LifeBench questions)."""
    scores = [checklist_score(" ".join(records.get((s, i), "") for s, i in q["evidence"]),
                              q["score_points"], q["question"], q["answer"])
              for q in questions if q.get("score_points")]
    return round(sum(scores) / len(scores), 3) if scores else None


def mc_baselines(questions: list[dict[str, Any]]) -> dict[str, float | None]:
    """Chance and always-the-most-frequent-letter accuracy of the multiple-choice questions
    (the letter that is most often right among these very questions)."""
    mc = [q for q in questions if q.get("choices")]
    if not mc:
        return {"mc_chance": None, "mc_majority": None}
    letters = Counter(q["answer"] for q in mc)
    return {"mc_chance": round(sum(1 / len(q["choices"]) for q in mc) / len(mc), 3),
            "mc_majority": round(letters.most_common(1)[0][1] / len(mc), 3)}


@dataclass
class Scores:
    """Per-row accumulators: latency, tokens, citations against gold, checklist, choices."""

    latencies: list[float] = field(default_factory=list)
    first_text: list[float] = field(default_factory=list)
    """Milliseconds from the question to the first piece of the answer's text
    (``ask_stream``: the model's first words; without a model, the whole answer)."""
    prompt: int = 0
    completion: int = 0
    calls: int = 0
    cited: int = 0
    cited_gold: int = 0
    gold: int = 0
    gold_cited: int = 0
    any_gold: int = 0
    checklist: list[float] = field(default_factory=list)
    choices: list[float] = field(default_factory=list)
    model_letters: list[float] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    not_kept: Counter[str] = field(default_factory=Counter)
    records: list[dict[str, Any]] = field(default_factory=list)

    def add(self, q: dict[str, Any], answer: Answer, llm: str, pipeline: str) -> dict[str, Any]:
        """Score one answer; returns its per-question record."""
        self.latencies.append(answer.latency_ms)
        self.modes.append(answer.mode)
        if answer.rejected is not None:
            self.not_kept[answer.rejected.reason] += 1
        self.prompt += answer.usage.prompt_tokens
        self.completion += answer.usage.completion_tokens
        self.calls += answer.usage.calls
        gold = {tuple(e) for e in q["evidence"]}
        cited = {(p.source, p.external_id) for c in answer.citations for p in c.provenance}
        self.cited += len(cited)
        self.cited_gold += len(cited & gold)
        self.gold += len(gold)
        self.gold_cited += len(gold & cited)
        self.any_gold += bool(cited & gold)
        record: dict[str, Any] = {"id": q.get("id"), "llm": llm, "pipeline": pipeline,
                                  "category": q.get("category"), "answer": answer.text,
                                  "known": answer.known, "mode": answer.mode,
                                  "cited": sorted(map(list, cited)),
                                  "gold": sorted(map(list, gold)),
                                  "latency_ms": round(answer.latency_ms, 1)}
        if answer.rejected is not None:
            record.update(model_answer=answer.rejected.text, not_kept=answer.rejected.reason)
        if q.get("choices"):
            right = float(answer.choice == q["answer"])
            self.choices.append(right)
            record.update(choice=answer.choice, expected=q["answer"], correct=bool(right))
            own = answer.rejected.choice if answer.rejected is not None else \
                answer.choice if answer.mode == "llm" else None
            if answer.mode != "extractive":
                self.model_letters.append(float(own == q["answer"]))
                record["model_choice"] = own
        if q.get("checklist"):
            share = sum(contains_item(answer.text, item) for item in q["checklist"]) / \
                len(q["checklist"])
            self.checklist.append(share)
            record["checklist"] = round(share, 3)
        elif q.get("score_points"):
            share = checklist_score(answer.text, q["score_points"], q["question"], q["answer"])
            self.checklist.append(share)
            record["checklist"] = round(share, 3)
        self.records.append(record)
        return record

    def by_type(self, questions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The row's figures per question type (category): questions, citation precision
        and recall, answer checklist, multiple-choice accuracy beside the rate of always
        answering the letter most often right among all these questions (``questions``)."""
        letters = Counter(q["answer"] for q in questions if q.get("choices"))
        majority = letters.most_common(1)[0][0] if letters else None
        out: dict[str, dict[str, Any]] = {}
        for kind in sorted({str(r["category"]) for r in self.records}):
            rows = [r for r in self.records if str(r["category"]) == kind]
            cited = sum(len(r["cited"]) for r in rows)
            gold = sum(len(r["gold"]) for r in rows)
            hit = sum(len({tuple(c) for c in r["cited"]} & {tuple(g) for g in r["gold"]})
                      for r in rows)
            mc = [r for r in rows if "correct" in r]
            checklist = [r["checklist"] for r in rows if "checklist" in r]
            out[kind] = {
                "questions": len(rows),
                "citation_precision": round(hit / cited, 3) if cited else None,
                "citation_recall": round(hit / gold, 3) if gold else None,
                "answer_checklist": round(sum(checklist) / len(checklist), 3)
                if checklist else None,
                "mc_accuracy": round(sum(r["correct"] for r in mc) / len(mc), 3) if mc else None,
                "mc_majority": round(sum(r["expected"] == majority for r in mc) / len(mc), 3)
                if mc else None}
        return out

    def summary(self) -> dict[str, Any]:
        """The row's figures."""
        n = max(1, len(self.latencies))
        return {"latency_ms": percentiles(self.latencies),
                "first_text_ms": percentiles(self.first_text),
                "llm_calls_per_q": round(self.calls / n, 2),
                "prompt_tokens_per_q": round(self.prompt / n, 1),
                "completion_tokens_per_q": round(self.completion / n, 1),
                "cites_gold_evidence": round(self.any_gold / n, 3),
                "citation_precision": round(self.cited_gold / self.cited, 3)
                if self.cited else None,
                "citation_recall": round(self.gold_cited / self.gold, 3) if self.gold else None,
                "answer_checklist": round(sum(self.checklist) / len(self.checklist), 3)
                if self.checklist else None,
                "mc_accuracy": round(sum(self.choices) / len(self.choices), 3)
                if self.choices else None,
                "model_letter_accuracy": round(sum(self.model_letters) / len(self.model_letters),
                                               3) if self.model_letters else None,
                "not_kept": dict(self.not_kept.most_common()),
                "llm_answers_kept": round(self.modes.count("llm") / n, 3)
                if "extractive" not in self.modes else None}
