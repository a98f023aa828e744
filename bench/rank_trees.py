"""Would gradient-boosted trees rank the ``fused`` pipeline's candidates better than the
shipped logistic model? A probe, not a fit that ships.

    python3 -m bench rank-trees [--rounds 150] [--depth 3] [--rate 0.05]

The candidates and features are the ones ``bench rank-fit`` collects (same memories, same
questions). For each fold (one dataset group left out, and the held-back household of
seed 11 against a fit on all three groups) the logistic model (``rank-fit``'s fit, L2
0.01) and boosted trees on the same rows and weights are scored on the left-out
questions' candidates: AUC, a gold candidate first, and the share of a question's gold
candidates within its first five — beside retrieval's own order (no stage). The trees
are depth-limited regression trees on logistic loss over each feature's quantile bins
(numpy only; bench-side, never shipped).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import numpy as np

from memfuse_lite.retrieve.rank import FEATURES

from .common import write_result
from .fusion_fit import auc
from .rank_fit import GROUPS, Question, collect, datasets, fit_model

Tree = tuple[Any, ...]
"""("leaf", value) or ("split", feature, bin, left, right)."""


@dataclass
class BoostedTrees:
    """Gradient boosting on logistic loss, ``rounds`` trees of ``depth``."""

    rounds: int = 150
    depth: int = 3
    rate: float = 0.05
    bins: int = 32
    min_leaf: int = 50
    l2: float = 1.0

    def fit(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> BoostedTrees:
        """Fit on rows ``X`` with labels ``y`` and row weights ``w``."""
        w = w / w.mean()
        quantiles = np.linspace(0.0, 1.0, self.bins + 1)[1:-1]
        self.edges = [np.unique(np.quantile(X[:, j], quantiles)) for j in range(X.shape[1])]
        B = self._binned(X)
        p0 = float(np.clip(np.average(y, weights=w), 1e-4, 1 - 1e-4))
        self.base = float(np.log(p0 / (1 - p0)))
        F = np.full(len(y), self.base)
        self.trees: list[Tree] = []
        for _ in range(self.rounds):
            p = 1.0 / (1.0 + np.exp(-F))
            tree = self._grow(B, (p - y) * w, p * (1 - p) * w, np.arange(len(y)), 0)
            self.trees.append(tree)
            F += self.rate * self._apply(tree, B)
        return self

    def score(self, X: np.ndarray) -> np.ndarray:
        """Log-odds of each row."""
        B = self._binned(X)
        F = np.full(len(X), self.base)
        for tree in self.trees:
            F += self.rate * self._apply(tree, B)
        return F

    def _binned(self, X: np.ndarray) -> np.ndarray:
        return np.stack([np.searchsorted(e, X[:, j], side="right")
                         for j, e in enumerate(self.edges)], axis=1)

    def _grow(self, B: np.ndarray, g: np.ndarray, h: np.ndarray, rows: np.ndarray,
              level: int) -> Tree:
        G, H = g[rows].sum(), h[rows].sum()
        leaf: Tree = ("leaf", -G / (H + self.l2))
        if level == self.depth or len(rows) < 2 * self.min_leaf:
            return leaf
        best, where = 0.0, None
        parent = G * G / (H + self.l2)
        for j, e in enumerate(self.edges):
            n = len(e) + 1
            if n < 2:
                continue
            gl = np.cumsum(np.bincount(B[rows, j], weights=g[rows], minlength=n))[:-1]
            hl = np.cumsum(np.bincount(B[rows, j], weights=h[rows], minlength=n))[:-1]
            cl = np.cumsum(np.bincount(B[rows, j], minlength=n))[:-1]
            gain = gl ** 2 / (hl + self.l2) + (G - gl) ** 2 / (H - hl + self.l2) - parent
            gain[(cl < self.min_leaf) | (len(rows) - cl < self.min_leaf)] = -1.0
            b = int(np.argmax(gain))
            if gain[b] > best:
                best, where = float(gain[b]), (j, b)
        if where is None:
            return leaf
        j, b = where
        left = B[rows, j] <= b
        return ("split", j, b, self._grow(B, g, h, rows[left], level + 1),
                self._grow(B, g, h, rows[~left], level + 1))

    def _apply(self, tree: Tree, B: np.ndarray) -> np.ndarray:
        out = np.zeros(len(B))
        stack = [(tree, np.arange(len(B)))]
        while stack:
            node, rows = stack.pop()
            if node[0] == "leaf":
                out[rows] = node[1]
                continue
            _, j, b, left, right = node
            goes_left = B[rows, j] <= b
            stack += [(left, rows[goes_left]), (right, rows[~goes_left])]
        return out


def _weights(rows: list[Question]) -> np.ndarray:
    """Each group weighs the same (as ``rank-fit`` fits)."""
    per = {g: sum(len(q.ids) for q in rows if q.group == g) for g in {q.group for q in rows}}
    return np.concatenate([np.full(len(q.ids), 1.0 / per[q.group]) for q in rows])


def figures(score: Any, tested: list[Question]) -> dict[str, float]:
    """AUC, gold first and gold share within the first five over ``tested``'s candidates
    (ties keep retrieval's order)."""
    first = five = 0.0
    scores, labels = [], []
    asked = [q for q in tested if q.y.sum() > 0]
    for q in asked:
        s = score(q.X)
        order = np.lexsort((np.arange(len(s)), -s))
        first += float(q.y[order[0]])
        five += float(q.y[order[:5]].sum() / q.y.sum())
        scores.append(s)
        labels.append(q.y)
    n = len(asked) or 1
    return {"auc": round(auc(np.concatenate(scores), np.concatenate(labels)), 4),
            "first": round(first / n, 4), "gold in first 5": round(five / n, 4),
            "questions": len(asked)}


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench rank-trees", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=150)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--rate", type=float, default=0.05)
    args = ap.parse_args(argv)
    fitted = [q for d in datasets() for q in collect(d) if len(q.ids)]
    held = [q for d in datasets(held_back=True) for q in collect(d) if len(q.ids)]
    retrieval = FEATURES.index("fused_rr")
    folds = [(g, [q for q in fitted if q.group != g], [q for q in fitted if q.group == g])
             for g in GROUPS] + [("held-back household", fitted, held)]
    out = []
    for name, train, tested in folds:
        logistic = fit_model(train, 1e-2, {})
        trees = BoostedTrees(args.rounds, args.depth, args.rate).fit(
            np.vstack([q.X for q in train]), np.concatenate([q.y for q in train]),
            _weights(train))
        row = {"test": name,
               "no stage": figures(lambda X: X[:, retrieval], tested),
               "logistic": figures(lambda X, m=logistic: X @ m.weights, tested),
               "trees": figures(trees.score, tested)}
        out.append(row)
        print(f"{name:<20} " + "  ".join(
            f"{k}: AUC {v['auc']:.3f} first {v['first']:.3f} in 5 {v['gold in first 5']:.3f}"
            for k, v in row.items() if k != "test"), flush=True)
    write_result("rank-trees", {"command": "python3 -m bench rank-trees "
                                + " ".join(argv or []), "trees": vars(args), "folds": out})
