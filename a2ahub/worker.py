"""Where jobs run: Celery workers when REDIS_URL is set, a thread pool in this process when not.

Either way a job is called with the same arguments; in-process jobs with a countdown wait on
a timer, as a Celery ETA would. A job to run now goes to the Redis broker as one LPUSH of the
message Celery would write (`job_message`): `apply_async` spends 0.6 ms more CPU around that
one command (a result object, a producer from the pool, routing), and the worker send rate
drops by a quarter with it (bench/results-2026-11-27-enqueue.md).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings
from kombu.exceptions import OperationalError

from a2ahub import redis_clients, request_id, tracing

logger = logging.getLogger(__name__)

# What a broker that is away raises: redis-py's errors, kombu's (a job with a countdown), a
# socket's, and our own bound on a wait.
BROKER_ERRORS = (redis.RedisError, OperationalError, OSError, TimeoutError)
# How long a job the broker refused is offered again from here, and how often at most; past
# that, recovery finds the work that waits (for a task turn, by its stored token).
RETRY_FOR_SECONDS = 60.0
RETRY_EVERY_SECONDS = 0.5


@cache
def in_process_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        max_workers=settings.CELERY_WORKER_CONCURRENCY, thread_name_prefix="a2ahub-worker"
    )


def submit(job: Any, *args: Any, countdown: float = 0) -> None:
    if settings.REDIS_URL:
        if countdown > 0:
            job.apply_async(args=args, countdown=countdown)
        else:
            broker().lpush(queue_name(), job_message(job, args))
        return
    if countdown > 0:
        timer = threading.Timer(countdown, lambda: in_process_pool().submit(job, *args))
        timer.daemon = True
        timer.start()
        return
    in_process_pool().submit(job, *args)


async def submit_async(job: Any, *args: Any) -> None:
    """`submit` (to run now) from an event loop, which the broker's round trip does not block."""
    if not settings.REDIS_URL:
        in_process_pool().submit(job, *args)
        return
    loop = asyncio.get_running_loop()
    client = _async_brokers.get(loop)
    if client is None:
        client = _async_brokers[loop] = redis_clients.async_client(settings.CELERY_BROKER_URL)
    async with asyncio.timeout(redis_clients.REDIS_WAIT_SECONDS):
        await client.lpush(queue_name(), job_message(job, args))


def submit_or_retry(job: Any, *args: Any) -> bool:
    """`submit`, except that a broker that is away does not fail the caller: the job waits
    in this process and is offered again until the broker takes it. For work already stored,
    whose request must answer with what was stored. Whether the broker took the job now."""
    try:
        submit(job, *args)
    except BROKER_ERRORS as exc:
        hold(job, args, exc)
        return False
    return True


async def submit_or_retry_async(job: Any, *args: Any) -> bool:
    try:
        await submit_async(job, *args)
    except BROKER_ERRORS as exc:
        hold(job, args, exc)
        return False
    return True


# Jobs the broker refused: (when given up on, job, args), offered again in order by one thread.
_held: deque[tuple[float, Any, tuple[Any, ...]]] = deque()
_held_lock = threading.Lock()
_offering: threading.Thread | None = None


def hold(job: Any, args: Sequence[Any], exc: BaseException) -> None:
    global _offering
    logger.warning("the broker refused job %s (%s); offering it again", job.name, exc)
    with _held_lock:
        _held.append((time.monotonic() + RETRY_FOR_SECONDS, job, tuple(args)))
        if _offering is None or not _offering.is_alive():
            _offering = threading.Thread(target=offer_held, name="a2ahub-held", daemon=True)
            _offering.start()


def offer_held() -> None:
    """Offer the held jobs, oldest first, until none is left; a job held past its time is
    dropped (recovery finds its work: a task turn by its stored token, a delivery by the
    sweep)."""
    while True:
        time.sleep(RETRY_EVERY_SECONDS)
        with _held_lock:
            if not _held:
                return
        while True:
            with _held_lock:
                if not _held:
                    break
                until, job, args = _held[0]
            if time.monotonic() < until:
                try:
                    submit(job, *args)
                except BROKER_ERRORS:
                    break  # still away: wait, then start again from the oldest
            else:
                logger.error("the broker did not take job %s; recovery will find it", job.name)
            with _held_lock:
                _held.popleft()


_async_brokers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary()
)


@cache
def broker() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def queue_name() -> str:
    return str(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery"))


def jobs_waiting() -> int:
    """Jobs no worker has taken yet: the broker queue's length, or the backlog of this
    process's own pool. (Every job the hub sends has the default priority, which kombu keeps
    in the one list.)"""
    if settings.REDIS_URL:
        return int(broker().llen(queue_name()))
    return in_process_pool()._work_queue.qsize()


ORIGIN = f"gen{os.getpid()}@{socket.gethostname()}"


def job_message(job: Any, args: Sequence[Any]) -> str:
    """A Celery job message (protocol 2, JSON), as kombu's Redis transport keeps it in a
    queue: the fields `apply_async` writes for a job without options, routed to the default
    queue (this hub sets no routes)."""
    job_id = str(uuid.uuid4())
    embed = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
    body = json.dumps([list(args), {}, embed]).encode()
    headers = {
        "lang": "py", "task": job.name, "id": job_id, "shadow": None, "eta": None,
        "expires": None, "group": None, "group_index": None, "retries": 0,
        "timelimit": [None, None], "root_id": job_id, "parent_id": None,
        "argsrepr": repr(tuple(args)), "kwargsrepr": "{}", "origin": ORIGIN,
        "ignore_result": bool(job.ignore_result), "replaced_task_nesting": 0,
        "stamped_headers": None, "stamps": {},
    }  # fmt: skip
    if sent_by := request_id.current_id():
        headers[request_id.JOB_HEADER] = sent_by  # the job's log lines carry it (a2ahub.celery)
    if tracing.enabled:
        tracing.inject(headers)  # the job's run continues the trace (Celery's instrumentation)
    properties = {
        "correlation_id": job_id, "reply_to": "", "delivery_mode": 2,
        "delivery_info": {"exchange": "", "routing_key": queue_name()}, "priority": 0,
        "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
    }  # fmt: skip
    return json.dumps({
        "body": base64.b64encode(body).decode(), "content-encoding": "utf-8",
        "content-type": "application/json", "headers": headers, "properties": properties,
    })  # fmt: skip
