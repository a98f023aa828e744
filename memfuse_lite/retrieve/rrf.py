"""Reciprocal-rank fusion."""

from __future__ import annotations

from collections.abc import Sequence


def rrf(rankings: Sequence[Sequence[tuple[int, float] | tuple[int, float, int]]], k: int = 60,
        shared_ranks: bool = False, weights: Sequence[float] | None = None
        ) -> list[tuple[int, float]]:
    """Fuse ranked (id, score) lists: score(id) = sum w / (k + rank), rank from 1, w the
    list's weight (1 unless ``weights`` gives one per list).

    With ``shared_ranks``, an entry may carry its own rank as a third element (members
    of one retrieved fused memory share its rank)."""
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[int, float] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[i]
        for position, entry in enumerate(ranking, start=1):
            item = entry[0]
            rank = entry[2] if shared_ranks and len(entry) > 2 else position
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
