"""The default cache, opened by its first use (or the warm-up) instead of at start-up.

Opening it imports SQLAlchemy and creates its table: the largest part of this server's start, which
answering ``initialize`` does not need. Only the default cache (a SQLite file in the user data directory,
which this server chooses) is opened late; a ``--cache-url`` the operator gave is opened at start, so a
wrong or unreachable one stops the server with the reason. Should the default one fail to open later, the
call that needed it says why (the same words as at start: "cannot be opened … start with --no-cache").
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cache import PredictionCache

__all__ = ["LazyCache"]


class LazyCache:
    """A :class:`~.cache.PredictionCache` that opens on first use; every attribute is the opened cache's."""

    def __init__(self, url: str, *, ttl_days: float) -> None:
        self._url = url
        self._ttl_days = ttl_days
        self._cache: PredictionCache | None = None
        self._lock = threading.Lock()

    def opened(self) -> PredictionCache:
        if self._cache is None:
            with self._lock:
                if self._cache is None:
                    from .cache import PredictionCache

                    self._cache = PredictionCache.open(self._url, ttl_days=self._ttl_days)
        return self._cache

    def __getattr__(self, name: str) -> Any:
        return getattr(self.opened(), name)
