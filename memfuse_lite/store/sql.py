"""Helpers for statements over many ids: SQLite limits the parameters of one statement."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T", int, str)


def chunks(items: Sequence[T], size: int = 400) -> Iterator[Sequence[T]]:
    """``items`` in slices of at most ``size``."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def marks(chunk: Sequence[int] | Sequence[str]) -> str:
    """``?,?,…`` for an ``IN (…)`` of ``chunk``."""
    return ",".join("?" * len(chunk))
