"""Helpers for statements over many ids: SQLite limits the parameters of one statement."""

from __future__ import annotations

from collections.abc import Iterator, Sequence


def chunks(items: Sequence[int], size: int = 400) -> Iterator[Sequence[int]]:
    """``items`` in slices of at most ``size``."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def marks(chunk: Sequence[int]) -> str:
    """``?,?,…`` for an ``IN (…)`` of ``chunk``."""
    return ",".join("?" * len(chunk))
