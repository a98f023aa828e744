"""What every derived index shares: a sidecar file recording what it has absorbed.

A derived index is never trusted: its sidecar records the SQLite watermark (the last
event id absorbed), the embedding model and a checksum; whatever disagrees with the
store is rebuilt from it.
"""

from __future__ import annotations

import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.sqlite import IndexRow

log = logging.getLogger("memfuse_lite.index")


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The sidecar's content, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_sidecar(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temp file + fsync + rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass(frozen=True, slots=True)
class IndexFilter:
    """Constraints applied inside an index query (never by post-filtering a short list)."""

    start: float | None = None
    end: float | None = None
    observed_before: float | None = None
    """Only what was recorded by then (a question asked at ``now`` sees memory as of now)."""
    users: frozenset[str] | None = None
    sources: frozenset[str] | None = None


class DerivedIndex(ABC):
    """An index built from the store's events; ``watermark`` is the last event id absorbed."""

    name: str
    watermark: int
    rebuilt_reason: str | None = None

    @abstractmethod
    def add(self, rows: Sequence[IndexRow]) -> None:
        """Absorb events (re-adding an id replaces it)."""

    @abstractmethod
    def reset(self) -> None:
        """Drop everything (before a rebuild)."""

    @abstractmethod
    def persist(self) -> None:
        """Make what was absorbed durable and record the watermark."""

    @abstractmethod
    def close(self) -> None:
        """Persist and release files."""

    def __len__(self) -> int:
        return 0
