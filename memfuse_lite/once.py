"""Reading stored rows once within a scope (one search, one fused batch), where the same
ids are asked for again and again."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

V = TypeVar("V")


class ReadOnce(Generic[V]):
    """Values by id from ``load`` (ids → the values that exist), each id loaded at most
    once; ``keep`` says which loaded ids may be remembered (the rest are read afresh)."""

    def __init__(self, load: Callable[[list[int]], dict[int, V]],
                 keep: Callable[[int], bool] | None = None) -> None:
        self._load = load
        self._keep = keep
        self._seen: dict[int, V] = {}

    def get(self, ids: Iterable[int]) -> dict[int, V]:
        """The values of ``ids`` that exist, in the order asked."""
        ids = list(dict.fromkeys(ids))
        missing = [i for i in ids if i not in self._seen]
        found = self._load(missing) if missing else {}
        self._seen.update((i, v) for i, v in found.items()
                          if self._keep is None or self._keep(i))
        return {i: self._seen[i] if i in self._seen else found[i]
                for i in ids if i in self._seen or i in found}
