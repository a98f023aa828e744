"""Graph expansion from seed events over the causal fusion graph.

Causal edges are followed up to ``causal_hops`` in both directions, semantic edges up
to ``semantic_hops`` (0 by default; similarity >= ``semantic_min_cos``), fused-memory
membership (siblings), the likely episode mates fusion kept in other memories
(``related``, with ``use_related_links``) and the report edges (supersedes,
conflicts_with, same_as) one hop; every hop multiplies the score by ``hop_decay``;
``relevance`` then scales what semantic and causal edges reach (and memory members and
related events, with ``member_relevance``). Nothing the viewer may not see is entered,
so expansion never crosses into another user's private records.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import RetrievalConfig
from ..fusion.graph import FusionGraph

ONE_HOP = ("supersedes", "conflicts_with", "same_as")


def expand(
    seeds: dict[int, float],
    graph: FusionGraph,
    cfg: RetrievalConfig,
    visible: Callable[[list[int]], set[int]],
    in_range: Callable[[list[int]], set[int]] | None = None,
    relevance: Callable[[list[int]], dict[int, float]] | None = None,
) -> dict[int, tuple[float, str]]:
    """Scores of seeds and of what they reach, with how each was reached; ``relevance``
    (0..1 per event, its closeness to the question) scales what expansion reaches."""
    found: dict[int, tuple[float, str]] = {i: (s, "seed") for i, s in seeds.items()}
    frontier = dict(seeds)
    for hop in range(1, max(cfg.causal_hops, cfg.semantic_hops, 1) + 1):
        reached: dict[int, tuple[float, str]] = {}
        memory_of = graph.fused_of_many(frontier) if hop == 1 else {}
        members: dict[int, list[int]] = {}  # seeds of one memory share its member list
        for eid, score in frontier.items():
            decayed = score * cfg.hop_decay
            for edge in graph.edges_of(eid):
                other = edge.dst if edge.src == eid else edge.src
                if edge.kind == "causal" and hop <= cfg.causal_hops:
                    kind = "causal"
                elif edge.kind == "semantic" and hop <= cfg.semantic_hops and (
                        edge.weight >= cfg.semantic_min_cos):
                    kind = "semantic"
                elif edge.kind in ONE_HOP and hop == 1:
                    kind = edge.kind
                elif edge.kind == "related" and hop == 1 and cfg.use_related_links:
                    kind = "related"
                else:
                    continue
                if reached.get(other, (0.0, ""))[0] < decayed:
                    reached[other] = (decayed, kind)
            if hop == 1:
                fid = memory_of.get(eid)
                if fid is not None:
                    if fid not in members:
                        members[fid] = graph.members(fid)
                    for sibling in members[fid]:  # at a tie membership wins: it is
                        # not scaled by relevance below (unless member_relevance)
                        if sibling != eid and reached.get(sibling, (0.0, ""))[0] <= decayed:
                            reached[sibling] = (decayed, "member_of")
        new = [i for i in reached if i not in found or found[i][0] < reached[i][0]]
        if not new:
            break
        allowed = visible(new)
        if relevance is not None:
            # a memory's members (and likely mates) enter as they are unless configured
            # otherwise: a call log or a photo shares no word with the question, its
            # episode is why it counts
            scaled = [i for i in new if cfg.member_relevance
                      or reached[i][1] not in ("member_of", "related")]
            factor = relevance(scaled) if scaled else {}
            reached = {i: (s * factor[i], how) if i in factor else (s, how)
                       for i, (s, how) in reached.items()}
            new = [i for i in new if i not in found or found[i][0] < reached[i][0]]
        if in_range is not None:
            semantic = [i for i in new if reached[i][1] == "semantic"]
            allowed -= set(semantic) - in_range(semantic)
        frontier = {}
        for i in new:
            if i in allowed:
                found[i] = reached[i]
                if reached[i][1] == "causal":
                    frontier[i] = reached[i][0]
    return found
