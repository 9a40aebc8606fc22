"""The ORM's connection pool (psycopg_pool, which Django makes from `OPTIONS["pool"]`) when
the database comes back: tried again every half second at most, not after a backoff that
doubled while the database was away, and emptied of the connections from before.

psycopg_pool waits 1 s after a failed connection, then 2, 4, 8 ... up to its give-up time:
after a 20 s outage the pool's next try came up to 11 s after the database answered, and
meanwhile requests waited the pool's whole timeout. It offers no setting for the backoff,
so its one class for it is replaced here, once, at start-up (`install`).
"""

from __future__ import annotations

from typing import Any

import psycopg_pool.pool
from django.db import connections
from psycopg_pool.base import AttemptWithBackoff

# The longest wait between two tries: the first request after the database answers waits
# no longer than this for a connection.
MAX_DELAY_SECONDS = 0.5


class ShortBackoff(AttemptWithBackoff):
    INITIAL_DELAY = 0.1

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, MAX_DELAY_SECONDS)


def install() -> None:
    psycopg_pool.pool.AttemptWithBackoff = ShortBackoff  # type: ignore[misc]


def drain() -> None:
    """Close the pool's idle connections and open new ones: when the database went away,
    every one of them is from before, and each would first fail its check (psycopg_pool
    waits longer after each such failure in a row)."""
    wrapper: Any = connections["default"]  # PostgreSQL's, which has a pool
    if wrapper.vendor != "postgresql":
        return
    pool = wrapper.pool
    if pool is not None and not pool.closed:
        pool.drain()
