"""Sends per minute across the hub, for the dashboard's chart.

Nothing is added to the send path: each web process already counts its A2A requests (the
Prometheus counter of `a2ahub.metrics`), and at each of its heartbeats (`a2ahub.processes`)
it adds the sends it answered since the previous beat to the current minute's counter, in
Redis (one INCRBY, kept two days) or, embedded, in memory. A minute's number is therefore
the sends whose beat fell in it: a beat late at most.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import redis
from django.conf import settings

from a2ahub import redis_clients
from a2ahub.metrics import REQUESTS
from protocol.method_table import V01_METHODS, V03_METHODS, V1_METHODS

KEY_PREFIX = "a2ahub:console:sends:"
KEEP_SECONDS = 2 * 86400
MINUTES_KEPT_IN_MEMORY = 24 * 60

# Every wire name, in every version and binding, of the two handlers that take a message.
SEND_HANDLERS = {V1_METHODS["SendMessage"].handler, V1_METHODS["SendStreamingMessage"].handler}
SEND_METHODS = frozenset(
    name
    for table in (V1_METHODS, V03_METHODS, V01_METHODS)
    for name, method in table.items()
    if method.handler in SEND_HANDLERS
)

_lock = threading.Lock()
_counted = 0.0  # this process's sends already added to a minute
_minutes: dict[int, int] = {}  # embedded: minute (Unix time // 60) -> sends


def answered_sends() -> float:
    """The sends this process has answered since it started, whatever their outcome."""
    sends = 0.0
    for metric in REQUESTS.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.labels.get("method") in SEND_METHODS:
                sends += sample.value
    return sends


def record_sends() -> None:
    """Add the sends answered since the last call to the current minute (a heartbeat hook)."""
    global _counted
    with _lock:
        now = answered_sends()
        new, _counted = int(now - _counted), now
    if new > 0:
        add(int(time.time() // 60), new)


def add(minute: int, sends: int) -> None:
    if not settings.REDIS_URL:
        with _lock:
            _minutes[minute] = _minutes.get(minute, 0) + sends
            for old in [m for m in _minutes if m <= minute - MINUTES_KEPT_IN_MEMORY]:
                del _minutes[old]
        return
    key = f"{KEY_PREFIX}{minute}"
    try:
        with redis_clients.shared_client().pipeline(transaction=False) as pipe:
            pipe.incrby(key, sends)
            pipe.expire(key, KEEP_SECONDS)
            pipe.execute()
    except redis.RedisError:
        # The sends are lost to the chart only; the next beat counts its own.
        pass


def per_minute(now: datetime, minutes: int = 60) -> list[tuple[datetime, int]]:
    """Sends in each of the last `minutes` minutes, oldest first, the current one last."""
    last = int(now.timestamp() // 60)
    numbers = list(range(last - minutes + 1, last + 1))
    if settings.REDIS_URL:
        try:
            raw = redis_clients.shared_client().mget([f"{KEY_PREFIX}{m}" for m in numbers])
        except redis.RedisError:
            raw = [None] * len(numbers)
        counts = [int(value or 0) for value in raw]
    else:
        with _lock:
            counts = [_minutes.get(m, 0) for m in numbers]
    return [
        (datetime.fromtimestamp(m * 60, tz=UTC), count)
        for m, count in zip(numbers, counts, strict=True)
    ]
