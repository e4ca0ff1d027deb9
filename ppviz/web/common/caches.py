"""Per-worker caches: cachetools LRUs behind a lock, as gunicorn's gthread workers share them between threads."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable

import cachetools


def memoized(maxsize: int, function: Callable):
    """``function`` keeping its last ``maxsize`` answers (keyed by its arguments) in a locked LRU; its
    ``cache_clear()`` empties it. A call that hits enters no module of ``ppviz.web``: the wrapper is cachetools'."""
    return cachetools.cached(cachetools.LRUCache(maxsize), lock=threading.Lock())(function)


class Cache:
    """A sized least-recently-used cache whose every access holds its lock.

    ``maxsize`` counts entries, or whatever ``getsizeof`` measures (bytes); a value bigger than the
    whole cache is not kept.
    """

    def __init__(self, maxsize: int, getsizeof: Callable[[object], int] | None = None):
        self._cache = cachetools.LRUCache(maxsize, getsizeof=getsizeof)
        self._lock = threading.Lock()

    def get(self, key: Hashable):
        with self._lock:
            return self._cache.get(key)

    def put(self, key: Hashable, value: object) -> None:
        with self._lock, contextlib.suppress(ValueError):  # cachetools: "value too large"
            self._cache[key] = value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._cache

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    @property
    def held(self) -> int:
        """What the entries add up to (bytes, or entries without ``getsizeof``)."""
        with self._lock:
            return int(self._cache.currsize)

    @property
    def maxsize(self) -> int:
        return int(self._cache.maxsize)
