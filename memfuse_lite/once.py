"""Reading stored rows once within a scope (one search, one fused batch), where the same
ids are asked for again and again; and a bounded memo of the most recently read rows that
outlives the scope (fusion's candidates of one batch are largely the next batch's)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """Values by id, at most ``capacity`` of them: the least recently used go first."""

    def __init__(self, capacity: int | None = None) -> None:
        """``capacity`` None: unbounded (one scope's reads)."""
        if capacity is not None and capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self._items: OrderedDict[int, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: int) -> bool:
        return key in self._items

    def take(self, key: int) -> V:
        """The value of a held ``key``, now the most recently used."""
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: int, value: V) -> None:
        if self.capacity == 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        if self.capacity is not None and len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


class ReadOnce(Generic[V]):
    """Values by id from ``load`` (ids → the values that exist), each id loaded at most
    once while ``memo`` holds it; ``keep`` says which loaded ids may be remembered (the
    rest are read afresh). Without ``memo``, every kept id is remembered for the reader's
    lifetime."""

    def __init__(self, load: Callable[[list[int]], dict[int, V]],
                 keep: Callable[[int], bool] | None = None,
                 memo: Recent[V] | None = None) -> None:
        self._load = load
        self._keep = keep
        self._seen: Recent[V] = memo if memo is not None else Recent()

    def get(self, ids: Iterable[int]) -> dict[int, V]:
        """The values of ``ids`` that exist, in the order asked."""
        ids = list(dict.fromkeys(ids))
        have = {i: self._seen.take(i) for i in ids if i in self._seen}
        missing = [i for i in ids if i not in have]
        found = self._load(missing) if missing else {}
        for i, v in found.items():
            if self._keep is None or self._keep(i):
                self._seen.put(i, v)
        return {i: have[i] if i in have else found[i] for i in ids if i in have or i in found}
