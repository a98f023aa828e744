"""What a dense search costs, to choose between a filtered graph walk and exact scoring
of the events that pass a filter, and how widely to search before filtering."""

from __future__ import annotations

WALK_NODE_US = 1.0
"""The cost of one graph node a filtered HNSW walk visits (the distances to its
neighbours; 384-d, M 16). A walk that wants ``ef`` passing points visits about
``ef / share`` nodes, where ``share`` is the share of points passing. This and the two
costs below are in one unit (microseconds where they were measured, ``bench engine
--searches-only``); only their ratios decide."""
STORED_ROW_US = 2.7
"""The cost of reading one event's vector from the store by id (SQLite, warm cache, ids
spread over the memory; consecutive ids cost less than half)."""
INDEX_ROW_US = 18.0
"""The cost of reading one vector back out of hnswlib (``get_items`` converts every
float to a Python object): the exact scoring's cost with no store attached."""


def exact_pays(events: int, points: int, total: int, ef: int, row_us: float) -> bool:
    """Whether scoring the ``events`` passing a filter exactly costs less than a filtered
    walk at ``ef`` over ``total`` points of which ``points`` pass. At 100k household
    events (68k points) the crossover is near 1,300 events from the store: a time filter
    passing 0.9% of the points took about four times as long to walk at ef 64 as to
    score."""
    return events * row_us <= ef * total / max(points, 1) * WALK_NODE_US


EXACT_BLOCK = 4096
"""Exact scoring reads this many vectors (from the store, or out of hnswlib) at a time: a
fallback over a large share of a big memory would otherwise copy every vector it scores
at once (125k of them held 490 MB at 300k events, kept by the allocator after they were
freed)."""

OVERSAMPLE = 3
OVERSAMPLE_WIDEST = 1024
"""Filter after an unfiltered search for up to this many neighbours, when that many are
expected to hold ``OVERSAMPLE`` times the k wanted (at 100k events with 16% passing, a
filter callback at every visited graph node costs about four times as much as 512
unfiltered neighbours)."""
