"""A thread-safe LRU bounded by the bytes of what it holds: the per-process, per-corpus
in-memory indexes (dense matrices, term indexes) live in one each."""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class ByteBoundedLRU(Generic[V]):
    """Once the entries' sizes add up to more than `max_bytes`, the least recently used go
    first; the newest entry always stays, however large."""

    def __init__(self, max_bytes: int, size: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self._size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > 1 and sum(map(self._size, self._items.values())) > self.max_bytes:
                self._items.popitem(last=False)

    def pop(self, key: Hashable) -> None:
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
