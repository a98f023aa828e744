"""The boosted trees of ``bench rank-trees`` (a probe beside the shipped logistic stage)."""

from __future__ import annotations

import numpy as np

from bench.fusion_fit import auc
from bench.rank_trees import BoostedTrees


def test_boosted_trees_learn_what_one_weight_per_feature_cannot() -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(4000, 3))
    y = ((X[:, 0] > 0) != (X[:, 1] > 0)).astype(float)  # either sign, not both
    trees = BoostedTrees(rounds=60, depth=2, rate=0.3).fit(X[:3000], y[:3000], np.ones(3000))
    held = auc(trees.score(X[3000:]), y[3000:])
    one_weight_each = max(auc(X[3000:, j], y[3000:]) for j in range(3))
    assert held > 0.95 and one_weight_each < 0.6
