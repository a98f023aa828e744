"""Every question of every dataset through ``ask``: exceptions and empty answers (goal 0).

    python3 -m bench ask-every [--datasets generated lifebench-en lifebench-zh locomo]
                               [--llm qwen2.5-coder-0.5b --sample 20] [--person NAME]

Uses the memories ``python3 -m bench quality`` builds under bench/out/ (built here when
missing). Each question is asked on the fused pipeline without an LLM; a multiple-choice
question (LifeBench) once with its options and once without. With ``--llm``, the first
``--sample`` questions of each dataset are asked again with that model answering, on the
fused and the agentic pipeline. Counted per dataset and mode: asks, exceptions (with the
first tracebacks printed), answers with no text, multiple-choice answers with no letter.
"""

from __future__ import annotations

import argparse
import asyncio
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    PERSON,
    check_person,
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

DATASETS = ("generated", "lifebench-en", "lifebench-zh", "locomo")
SHOWN = 3
"""Tracebacks printed per dataset and mode."""

Run = tuple[Path, Callable[[], Iterable[dict[str, Any]]], Callable[[], Iterable[dict[str, Any]]]]


def runs_of(dataset: str, person: str) -> list[Run]:
    """(memory folder, observations, questions) of each memory a dataset has."""
    if dataset == "generated":
        return [(OUT / "generated-s7", lambda: load(SMALL, "observations.jsonl"),
                 lambda: load(SMALL, "questions.jsonl"))]
    if dataset.startswith("lifebench"):
        lang = dataset.split("-")[1]
        return [(OUT / lifebench_name(lang, person),
                 lambda: lifebench_observations(lang, person=person),
                 lambda: lifebench_questions(lang, person=person))]
    return [(OUT / f"locomo-{i}", lambda c=c: locomo_observations(c),
             lambda c=c, i=i: locomo_questions(c, i))
            for i, c in enumerate(locomo_conversations())]


def ask_each(mem: MemFuse, questions: list[dict[str, Any]], pipelines: tuple[str, ...],
             tally: Counter[str], shown: list[str]) -> None:
    """Ask each question on each pipeline, with and without its options; count into
    ``tally`` and keep the first tracebacks in ``shown``."""
    async def run() -> None:
        for q in questions:
            now = parse_ts(q["now"]) if q.get("now") else None
            choices = q.get("choices") or None
            for pipeline in pipelines:
                for options in ([choices, None] if choices else [None]):
                    tally["asks"] += 1
                    try:
                        answer = await mem.ask(q.get("question") or q["text"],
                                               viewer=q["viewer"], now=now,
                                               pipeline=pipeline, choices=options)
                    except Exception:  # noqa: BLE001 - what is counted
                        tally["exceptions"] += 1
                        if len(shown) < SHOWN:
                            shown.append(f"{q['id']} ({pipeline}, options: {bool(options)})\n"
                                         + traceback.format_exc())
                        continue
                    tally["no text"] += not answer.text.strip()
                    tally["no letter"] += bool(options) and answer.choice not in options
                    tally[f"mode {answer.mode}"] += 1

    asyncio.run(run())


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench ask-every", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    ap.add_argument("--person", default=PERSON, help="the LifeBench person")
    ap.add_argument("--llm", help="also ask the first --sample questions with this model")
    ap.add_argument("--sample", type=int, default=20)
    args = ap.parse_args(argv)
    for dataset in args.datasets:
        if dataset.startswith("lifebench"):
            check_person(ap, dataset.split("-")[1], args.person)
    rows = []
    for dataset in args.datasets:
        modes = [("extractive", None, ("fused",))]
        if args.llm:
            modes.append((args.llm, args.llm, ("fused", "agentic")))
        for label, llm, pipelines in modes:
            tally: Counter[str] = Counter()
            shown: list[str] = []
            left = args.sample
            for path, observations, questions in runs_of(dataset, args.person):
                build(path, observations()).close()
                asked = list(questions())
                if llm is not None:
                    asked, left = asked[:left], max(0, left - len(asked))
                    if not asked:
                        break
                base = MemFuse(path)
                config = replace(base.config, answer_llm=llm, plan_llm=llm)
                base.close()
                mem = MemFuse(path, config=config)
                try:
                    ask_each(mem, asked, pipelines, tally, shown)
                finally:
                    mem.close()
            rows.append({"dataset": dataset, "mode": label, **dict(tally)})
            print(f"{dataset:<14} {label:<20} asks {tally['asks']:>5}  exceptions "
                  f"{tally['exceptions']}  no text {tally['no text']}  no letter "
                  f"{tally['no letter']}  (goal 0)  modes "
                  + ", ".join(f"{k[5:]} {v}" for k, v in sorted(tally.items())
                              if k.startswith("mode ")), flush=True)
            for text in shown:
                print(text)
    write_result("ask-every", {"command": "python3 -m bench ask-every " + " ".join(argv or []),
                               "rows": rows})
