"""Per-agent limits: request rate per caller, concurrent tasks, body size (turn time limits
are enforced by the runner). A request over a limit gets HTTP 429 or 413 with a JSON-RPC
error saying which limit, and the agent's row records the hit for operators."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

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


_local_counts: dict[str, int] = defaultdict(int)
_local_lock = threading.Lock()


def forget_counts() -> None:
    with _local_lock:
        _local_counts.clear()


def count_request(key: str) -> int:
    """This window's count for `key`, shared by every process through Redis when there is one."""
    if settings.REDIS_URL:
        try:
            with redis_clients.shared_client().pipeline() as pipe:
                pipe.incr(key)
                pipe.expire(key, WINDOW_SECONDS + 1)
                count, _ = pipe.execute()
            return int(count)
        except redis.RedisError:
            return 0  # a limit must not take the hub down with Redis
    with _local_lock:
        if len(_local_counts) > 100_000:
            _local_counts.clear()
        _local_counts[key] += 1
        return _local_counts[key]


def check_rate(agent: Agent, principal: str) -> None:
    limit = agent.requests_per_minute
    if not limit:
        return
    window = int(time.time() // WINDOW_SECONDS)
    # created_at tells apart agents that reuse a primary key (a database made again).
    key = f"a2ahub:rate:{agent.pk}:{agent.created_at.timestamp():.6f}:{principal}:{window}"
    if count_request(key) > limit:
        retry = WINDOW_SECONDS - int(time.time() % WINDOW_SECONDS)
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
