"""Per-agent limits: request rate per caller, concurrent tasks, body size (turn time limits
are enforced by the runner). A request over a limit gets HTTP 429 or 413 with a JSON-RPC
error saying which limit, and the agent's row records the hit for operators."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import deque

import redis
from django.conf import settings
from django.db.models import F
from django.utils import timezone

from a2ahub import redis_clients
from a2ahub.errors import UnsupportedOperationError
from agents.models import Agent
from tasks.models import ACTIVE_STATES, Task

WINDOW_SECONDS = 60


class LimitExceeded(Exception):
    """Refused before any work: the caller should wait (HTTP 429) or send less (HTTP 413).
    The JSON-RPC error inside is UnsupportedOperation, naming the limit."""

    def __init__(self, message: str, status: int = 429, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.error = UnsupportedOperationError(message, data={"limit": message})
        self.status = status
        self.retry_after = retry_after


def note_hit(agent: Agent, what: str) -> None:
    Agent.objects.filter(pk=agent.pk).update(
        limit_hits=F("limit_hits") + 1, last_limit_hit=what[:300], last_limit_hit_at=timezone.now()
    )


# The requests each key made in the last WINDOW_SECONDS, in this process (embedded: no Redis).
_local_times: dict[str, deque[float]] = {}
_local_lock = threading.Lock()


def forget_counts() -> None:
    with _local_lock:
        _local_times.clear()


def take(key: str, limit: int, now: float) -> float | None:
    """Count a request for `key` unless `limit` requests were taken in the WINDOW_SECONDS
    before `now`; None when taken, else the seconds until one of those leaves the window.

    A moving window, not a per-minute counter: one that starts again at each minute lets a
    caller send its whole allowance at :59 and again at :00. A refused request uses nothing,
    so a caller who keeps trying is not kept out any longer for it. Shared by every process
    through Redis when there is one; a limit must not take the hub down with Redis."""
    if settings.REDIS_URL:
        return take_in_redis(key, limit, now)
    return take_locally(key, limit, now)


def take_in_redis(key: str, limit: int, now: float) -> float | None:
    client = redis_clients.shared_client()
    member = f"{now:.6f}:{uuid.uuid4().hex[:8]}"
    try:
        # MULTI/EXEC: each caller's trim, count and add run together, so two requests at
        # once cannot both take the last place.
        with client.pipeline() as pipe:
            pipe.zremrangebyscore(key, "-inf", now - WINDOW_SECONDS)
            pipe.zcard(key)
            pipe.zadd(key, {member: now})
            pipe.zrange(key, 0, 0, withscores=True)
            pipe.expire(key, WINDOW_SECONDS + 1)
            _, taken, _, oldest, _ = pipe.execute()
        if int(taken) < limit:
            return None
        client.zrem(key, member)
        return float(oldest[0][1]) + WINDOW_SECONDS - now
    except redis.RedisError:
        return None


def take_locally(key: str, limit: int, now: float) -> float | None:
    with _local_lock:
        if len(_local_times) > 100_000:
            _local_times.clear()
        times = _local_times.setdefault(key, deque())
        while times and times[0] <= now - WINDOW_SECONDS:
            times.popleft()
        if len(times) >= limit:
            return times[0] + WINDOW_SECONDS - now
        times.append(now)
        return None


def check_rate(agent: Agent, principal: str) -> None:
    limit = agent.requests_per_minute
    if not limit:
        return
    # created_at tells apart agents that reuse a primary key (a database made again).
    key = f"a2ahub:rate:{agent.pk}:{agent.created_at.timestamp():.6f}:{principal}"
    wait = take(key, limit, time.time())
    if wait is not None:
        retry = max(1, math.ceil(wait))
        what = f"more than {limit} requests per minute from one caller"
        note_hit(agent, what)
        raise LimitExceeded(f"This agent takes at most {limit} requests per minute from you; "
                            f"try again in {retry} s.", retry_after=retry)  # fmt: skip


def check_concurrency(agent: Agent) -> None:
    limit = agent.max_concurrent_tasks
    if not limit:
        return
    if Task.objects.filter(agent=agent, state__in=ACTIVE_STATES).count() >= limit:
        note_hit(agent, f"{limit} concurrent tasks")
        raise LimitExceeded(f"This agent is already working on {limit} tasks; try again shortly.",
                            retry_after=1)  # fmt: skip


def check_size(agent: Agent, size: int) -> None:
    limit = agent.max_message_bytes
    if limit and size > limit:
        note_hit(agent, f"a request of {size} bytes (limit {limit})")
        raise LimitExceeded(f"This agent takes requests of at most {limit} bytes.", status=413)
