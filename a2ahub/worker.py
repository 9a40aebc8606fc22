"""Where jobs run: Celery workers when REDIS_URL is set, a thread pool in this process when not.

Either way a job is called with the same arguments; in-process jobs with a countdown wait on
a timer, as a Celery ETA would. A job to run now goes to the Redis broker as one LPUSH of the
message Celery would write (`job_message`): `apply_async` spends about 1 ms of CPU around that
one command (a result object, a producer from the pool, routing), more than a fast agent's
whole turn. In a Celery worker process a job owns its thread, and a turn it runs may block the
event loop it makes there (`blocking_jobs`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import threading
import uuid
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

from a2ahub import redis_clients


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


_async_brokers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary()
)


@cache
def broker() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def queue_name() -> str:
    return str(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery"))


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
    properties = {
        "correlation_id": job_id, "reply_to": "", "delivery_mode": 2,
        "delivery_info": {"exchange": "", "routing_key": queue_name()}, "priority": 0,
        "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
    }  # fmt: skip
    return json.dumps({
        "body": base64.b64encode(body).decode(), "content-encoding": "utf-8",
        "content-type": "application/json", "headers": headers, "properties": properties,
    })  # fmt: skip


_blocking_jobs = False


def allow_blocking_jobs() -> None:
    """Let jobs call the ORM from their own event loops: only for Celery worker processes,
    where nothing else runs on a job's thread (a web process must keep Django's check)."""
    global _blocking_jobs
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    _blocking_jobs = True


def blocking_jobs() -> bool:
    return _blocking_jobs
