"""Fit the ``fused`` pipeline's ranking stage on questions with evidence and report it
cross-validated; writes memfuse_lite/retrieve/rank_model.json.

    python3 -m bench rank-fit [--write] [--l2 0.01]

Questions with evidence: LoCoMo's 10 conversations, the shared LifeBench person (EN and
ZH) and the generated household (seed 7), over the memories of bench/out (built as
``bench quality`` builds them). For every question the ``fused`` pipeline runs with the
stage off and hands over its first ``rank_depth`` candidates with their features
(``FusedRetriever.retrieve(on_features=)``); a candidate is labelled evidence when one of
its source records is gold. A logistic model is fitted by Newton's method with an L2
penalty on every feature but the candidate's place and score from retrieval (what the
stage corrects is shrunk towards retrieval's own order), every dataset weighing the same (LoCoMo's 10 conversations are one dataset,
the person's two languages one).

Cross-validation never tests on questions of what the model was fitted on:
leave-one-dataset-out (LoCoMo, the person, the household), and halves of the person's
year (the questions asked before and after the median ``now``, each tested with a model
fitted on the other half, LoCoMo and the household). A household generated with another
seed (11, ``bench generate --seed 11 --out bench/out/household-s11``; built on first use)
is never fitted on and is reported with the final model. Every test figure comes from
the library itself: the pipeline runs with the fold's model file
(``RetrievalConfig(rank_model=)``) and without the stage, in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.retrieve.fused import FusedRetriever
from memfuse_lite.retrieve.rank import FEATURES, RankModel, rank_settings
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    lifebench_observations,
    lifebench_questions,
    locomo_conversations,
    locomo_observations,
    locomo_questions,
)
from .common import write_result
from .fusion_fit import auc, fit
from .generate import SMALL, load
from .generate import main as generate
from .quality import OUT, build

MODEL_FILE = Path(__file__).resolve().parents[1] / "memfuse_lite" / "retrieve" / "rank_model.json"
HELD_BACK = OUT / "household-s11"
"""The held-back household's generated files (outside git, made on first use)."""
KS = (1, 5, 10, 20)
UNPENALISED = ("fused_rr", "fused_share")
"""The candidate's place and score from retrieval go unpenalised: the L2 penalty shrinks
the other features' corrections towards retrieval's own order."""
GROUPS = ("locomo", "person", "household")


@dataclass
class Question:
    """One question's candidates: ids, features and labels, with what the figures need."""

    dataset: str
    group: str
    spec: dict[str, Any]
    ids: list[int] = field(default_factory=list)
    X: np.ndarray = field(default_factory=lambda: np.zeros((0, len(FEATURES))))
    y: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class Dataset:
    """A memory's path, how to build it, and its questions."""

    name: str
    group: str
    path: Path
    observations: Callable[[], Iterable[dict[str, Any]]]
    questions: Callable[[], Iterable[dict[str, Any]]]


def datasets(held_back: bool = False) -> Iterator[Dataset]:
    """The fitting datasets (or the held-back household alone)."""
    if held_back:
        if not (HELD_BACK / "questions.jsonl").exists():
            generate(["--seed", "11", "--size", "2000", "--questions", "150",
                      "--out", str(HELD_BACK)])
        yield Dataset("generated-s11", "held back", OUT / "generated-s11",
                      lambda: load(HELD_BACK, "observations.jsonl"),
                      lambda: load(HELD_BACK, "questions.jsonl"))
        return
    for i, conv in enumerate(locomo_conversations()):
        yield Dataset(f"locomo-{i}", "locomo", OUT / f"locomo-{i}",
                      lambda c=conv: locomo_observations(c),
                      lambda c=conv, i=i: locomo_questions(c, i))
    for lang in ("en", "zh"):
        yield Dataset(f"lifebench-{lang}", "person", OUT / f"lifebench-{lang}",
                      lambda lang=lang: lifebench_observations(lang),
                      lambda lang=lang: lifebench_questions(lang))
    yield Dataset("generated", "household", OUT / "generated-s7",
                  lambda: load(SMALL, "observations.jsonl"),
                  lambda: load(SMALL, "questions.jsonl"))


DEPTH: list[int] = []
"""``--depth``: the ranking stage's ``rank_depth`` for this run (empty: the default)."""


def _config(**retrieval: Any) -> MemFuseConfig:
    """The default config with these retrieval settings (and ``--depth``)."""
    default = MemFuseConfig()
    depth = {"rank_depth": DEPTH[0]} if DEPTH else {}
    return replace(default, retrieval=replace(default.retrieval, **depth, **retrieval))


def _off() -> MemFuseConfig:
    return _config(use_ranker=False)


def collect(data: Dataset) -> list[Question]:
    """Every question of ``data`` with its candidates' features and labels."""
    mem = build(data.path, data.observations(), _off())
    retriever = FusedRetriever(mem.engine)
    out = []
    for spec in tqdm(list(data.questions()), desc=f"features {data.name}", unit="q"):
        gold = {tuple(e) for e in spec["evidence"]}
        if not gold:
            continue
        q = Question(data.name, data.group, spec)

        def keep(ids: list[int], X: np.ndarray, q: Question = q) -> None:
            q.ids, q.X = ids, X

        retriever.retrieve(spec["text"][:4000], viewer=spec["viewer"], k=20,
                           now=parse_ts(spec["now"]) if spec.get("now") else None,
                           on_features=keep)
        events = mem.engine.store.get_events(q.ids)
        q.y = np.array([float(any((p.source, p.external_id) in gold
                                  for p in events[i].provenance)) for i in q.ids])
        out.append(q)
    mem.close()
    return out


def fit_model(train: list[Question], l2: float, about: dict[str, Any]) -> RankModel:
    """Weights fitted on ``train``'s candidates, each group weighing the same."""
    rows = [q for q in train if len(q.ids)]
    X = np.vstack([q.X for q in rows])
    y = np.concatenate([q.y for q in rows])
    per_group = {g: sum(len(q.ids) for q in rows if q.group == g) for g in GROUPS}
    w = np.concatenate([np.full(len(q.ids), 1.0 / per_group[q.group]) for q in rows])
    free = tuple(FEATURES.index(name) for name in UNPENALISED)
    return RankModel(fit(X, y, l2=l2, weights=w, free=free), about)


def measure(data: Dataset, questions: list[dict[str, Any]], config: MemFuseConfig
            ) -> list[dict[str, float]]:
    """Per question through ``search`` on the fused pipeline: evidence recall@k (k in
    :data:`KS`; @1 is "a gold record first") and all-evidence-hit@20."""
    mem = MemFuse(data.path, config=config)
    out = []
    for spec in questions:
        gold = {tuple(e) for e in spec["evidence"]}
        hits = mem.search(spec["text"][:4000], viewer=spec["viewer"], k=max(KS),
                          now=parse_ts(spec["now"]) if spec.get("now") else None,
                          pipeline="fused").hits
        found = [{(p.source, p.external_id) for p in h.provenance} & gold for h in hits]
        row = {f"R@{k}": len(set().union(*found[:k])) / len(gold) if found else 0.0
               for k in KS}
        row["first"] = float(bool(found and found[0]))
        row["all@20"] = float(len(set().union(*found)) == len(gold)) if found else 0.0
        row["adversarial"] = float(spec.get("category") == "adversarial")
        out.append(row)
    mem.close()
    return out


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    """Means of the per-question figures (and recall@5 of adversarial questions)."""
    keys = [f"R@{k}" for k in KS] + ["first", "all@20"]
    out = {k: round(statistics.fmean(r[k] for r in rows), 4) if rows else 0.0 for k in keys}
    adversarial = [r["R@5"] for r in rows if r["adversarial"]]
    if adversarial:
        out["adversarial R@5"] = round(statistics.fmean(adversarial), 4)
    out["questions"] = len(rows)
    return out


def test(model: RankModel, path: Path, tested: list[tuple[Dataset, list[dict[str, Any]]]]
         ) -> dict[str, Any]:
    """The fold's figures with the model (written to ``path``) and without the stage."""
    path.write_text(model.to_json())
    with_model = _config(use_ranker=True, rank_model=str(path))
    ranked: list[dict[str, float]] = []
    plain: list[dict[str, float]] = []
    for data, questions in tested:
        ranked += measure(data, questions, with_model)
        plain += measure(data, questions, _off())
    return {"ranked": summary(ranked), "no ranker": summary(plain)}


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench rank-fit", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="ship the model fitted on everything")
    ap.add_argument("--l2", type=float, default=1e-2)
    ap.add_argument("--depth", type=int, help="the stage's rank_depth for this run (default: "
                    "the config's; results named rank-fit-depthN)")
    args = ap.parse_args(argv)
    if args.depth is not None:
        DEPTH.append(args.depth)
    sets = list(datasets())
    questions: dict[str, list[Question]] = {d.name: collect(d) for d in sets}
    everything = [q for qs in questions.values() for q in qs]
    person_nows = sorted(q.spec["now"] for q in everything if q.group == "person")
    cut = person_nows[len(person_nows) // 2]

    def half_of(q: Question) -> str:
        return "first half" if q.spec["now"] < cut else "second half"

    by_name = {d.name: d for d in sets}
    folds: list[dict[str, Any]] = []
    for group in GROUPS:
        folds.append({"test": group, "train": [g for g in GROUPS if g != group], **_fold(
            [q for q in everything if q.group != group],
            [q for q in everything if q.group == group], by_name, args.l2,
            f"rank-model-without-{group}.json")})
    for half in ("first half", "second half"):
        folds.append({"test": f"person, {half}",
                      "train": ["locomo", "household", "person, other half"], **_fold(
                          [q for q in everything if q.group != "person" or half_of(q) != half],
                          [q for q in everything if q.group == "person" and half_of(q) == half],
                          by_name, args.l2, f"rank-model-without-{half[:5]}.json")})
    for f in folds:
        print(f"test {f['test']:<22} AUC {f['auc']:.3f}  " + _show(f["ranked"]) + "   no ranker: "
              + _show(f["no ranker"]), flush=True)
    about = {"fitted_on": ["locomo", "lifebench (shared person, en+zh)", "generated (seed 7)"],
             "command": "python3 -m bench rank-fit --write", "l2": args.l2,
             "settings": rank_settings(_config().retrieval), "cross_validation": folds}
    final = fit_model(everything, args.l2, {k: v for k, v in about.items()
                                            if k != "cross_validation"})
    held = [(d, [q for q in d.questions() if q["evidence"]]) for d in datasets(held_back=True)]
    for d, _ in held:
        build(d.path, d.observations(), _off()).close()
    held_figures = test(final, OUT / "rank-model-all.json", held)
    print("held-back household (seed 11): " + _show(held_figures["ranked"]) + "   no ranker: "
          + _show(held_figures["no ranker"]))
    about["held_back_household"] = held_figures
    model = replace(final, about=about)
    weights = {name: round(float(w), 4) for name, w in zip(FEATURES, model.weights, strict=True)}
    print(json.dumps(weights))
    if args.write:
        MODEL_FILE.write_text(model.to_json())
        print(f"wrote {MODEL_FILE}")
    write_result("rank-fit" + (f"-depth{args.depth}" if args.depth else ""), {
        "command": "python3 -m bench rank-fit " + " ".join(argv or []),
        "rank_depth": _config().retrieval.rank_depth, "features": list(FEATURES),
        "weights": weights, "folds": folds, "held_back_household": held_figures})


def _fold(train: list[Question], tested: list[Question], sets: dict[str, Dataset], l2: float,
          name: str) -> dict[str, Any]:
    """Fit on ``train``; the candidates' AUC and the pipeline's figures on ``tested``."""
    model = fit_model(train, l2, {"fold": name})
    X = np.vstack([q.X for q in tested])
    y = np.concatenate([q.y for q in tested])
    specs: dict[str, list[dict[str, Any]]] = {}
    for q in tested:
        specs.setdefault(q.dataset, []).append(q.spec)
    return {"auc": round(auc(model.probabilities(X), y), 4),
            **test(model, OUT / name, [(sets[n], qs) for n, qs in specs.items()])}


def _show(row: dict[str, Any]) -> str:
    return " ".join(f"{k} {v:.3f}" for k, v in row.items() if k != "questions")
