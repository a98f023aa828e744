"""Reciprocal-rank fusion."""

from __future__ import annotations

from collections.abc import Sequence


def rrf(rankings: Sequence[Sequence[tuple[int, float]]], k: int = 60) -> list[tuple[int, float]]:
    """Fuse ranked (id, score) lists: score(id) = sum 1 / (k + rank), rank from 1."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
