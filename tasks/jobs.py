"""Celery jobs for tasks. Jobs take ids, reload rows, and are safe to run twice."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

from tasks import runner


@shared_task(name="tasks.run_task", ignore_result=True)
def run_task(task_id: str, token: str) -> None:
    """Run the executor's turn of a stored task; `token` lets only one worker claim it."""
    close_old_connections()
    try:
        asyncio.run(runner.run_stored(task_id, token))
    finally:
        close_old_connections()


@shared_task(name="tasks.recover_stale_tasks", ignore_result=True)
def recover_stale_tasks() -> int:
    return runner.recover_stale()


@cache
def in_process_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        max_workers=settings.CELERY_WORKER_CONCURRENCY, thread_name_prefix="a2ahub-worker"
    )


_pool_lock = threading.Lock()


def enqueue_run(task_id: str, token: str) -> None:
    """Queue a turn: on Celery workers when distributed, on this process's own pool if not."""
    if settings.REDIS_URL:
        run_task.delay(task_id, token)
        return
    with _pool_lock:
        in_process_pool().submit(run_task, task_id, token)
