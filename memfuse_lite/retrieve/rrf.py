"""Reciprocal-rank fusion."""

from __future__ import annotations

from collections.abc import Sequence


def rrf(rankings: Sequence[Sequence[tuple[int, float] | tuple[int, float, int]]], k: int = 60,
        shared_ranks: bool = False) -> list[tuple[int, float]]:
    """Fuse ranked (id, score) lists: score(id) = sum 1 / (k + rank), rank from 1.

    With ``shared_ranks``, an entry may carry its own rank as a third element (members
    of one retrieved fused memory share its rank)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for position, entry in enumerate(ranking, start=1):
            item = entry[0]
            rank = entry[2] if shared_ranks and len(entry) > 2 else position
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
