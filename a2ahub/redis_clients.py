"""Redis clients: the one blocking client each process shares, and async clients for the
hub's event loops.

redis-py gives every connection a 5 s socket timeout by default and enforces it on each write
with `asyncio.wait_for`: a task and two more loop turns for every command, which under load
means waiting on every other stream's work twice. These clients have no socket timeout; a
caller that could wait on Redis for long bounds the wait itself (`REDIS_WAIT_SECONDS` with
`asyncio.timeout`, which costs no task), and pub/sub reads pass their own timeout.
"""

from __future__ import annotations

from functools import cache

import redis
import redis.asyncio as aioredis
from django.conf import settings
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

REDIS_WAIT_SECONDS = 5.0


def async_client(url: str, retries: int = 1) -> aioredis.Redis:
    """One retry on a new connection, as `short_client`: after Redis restarts, every pooled
    connection is dead, and the first command sent on each would fail (a publish lost).

    A subscription's client has none (`retries=0`): it must know when its connection dropped.
    redis-py would otherwise reconnect inside a read and carry on, and the messages published
    in between would be missed without a word. Without retries the error reaches the
    subscriber."""
    return aioredis.Redis.from_url(
        url, socket_timeout=None, socket_connect_timeout=5, retry=AsyncRetry(NoBackoff(), retries)
    )


@cache
def short_client(url: str) -> redis.Redis:
    """Short timeouts, for a caller that must not hang on a Redis that is away (a writer after
    its commit, a scrape). One retry on a new connection: after Redis restarts, every pooled
    connection is dead."""
    return redis.Redis.from_url(
        url, socket_timeout=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 1)
    )


@cache
def shared_client() -> redis.Redis:
    """The process's blocking client of `REDIS_URL` (thread-safe: it pools its connections)."""
    return redis.Redis.from_url(settings.REDIS_URL)
