"""A small time-bounded cache for the two lookups every request makes before it knows its tenant.

Webhook routes (sender → tenant, installation, secret) and bearer tokens (hash → tenant) are read
through SECURITY DEFINER functions; caching them for a few seconds keeps a delivery to one
database transaction. Entries expire after `ttl_s` (so a rotated secret or a revoked token takes
effect on every replica within that time) and the process that changed them clears them at once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """Least-recently-used entries beyond `max_entries` are dropped; values may be None."""

    def __init__(self, ttl_s: float, max_entries: int = 4096) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> tuple[bool, V | None]:
        """(True, value) for a live entry, else (False, None)."""
        found = self._entries.get(key)
        if found is None:
            return False, None
        expires, value = found
        if time.monotonic() >= expires:
            del self._entries[key]
            return False, None
        self._entries.move_to_end(key)
        return True, value

    def put(self, key: K, value: V) -> None:
        if self.ttl_s <= 0:
            return
        self._entries[key] = (time.monotonic() + self.ttl_s, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def discard(self, key: K) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()
