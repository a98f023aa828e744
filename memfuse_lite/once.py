"""Reading stored rows once within a scope (one search, one fused batch), where the same
ids are asked for again and again; and a bounded memo of the most recently read rows that
outlives the scope (fusion's candidates of one batch are largely the next batch's)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """Values (never None) by key, at most ``capacity`` of them: the least recently used
    go first. Not locked: a caller shared between threads holds its own lock."""

    def __init__(self, capacity: int | None = None) -> None:
        """``capacity`` None: unbounded (one scope's reads)."""
        if capacity is not None and capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        """The value of ``key``, now the most recently used; None if not held."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
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
                 memo: Recent[int, V] | None = None) -> None:
        self._load = load
        self._keep = keep
        self._seen: Recent[int, V] = memo if memo is not None else Recent()

    def get(self, ids: Iterable[int]) -> dict[int, V]:
        """The values of ``ids`` that exist, in the order asked."""
        ids = list(dict.fromkeys(ids))
        held: dict[int, V] = {}
        missing: list[int] = []
        for i in ids:
            value = self._seen.get(i)
            if value is None:
                missing.append(i)
            else:
                held[i] = value
        if not missing:
            return held
        found = self._load(missing)
        for i, v in found.items():
            if self._keep is None or self._keep(i):
                self._seen.put(i, v)
        return {i: held[i] if i in held else found[i] for i in ids if i in held or i in found}
