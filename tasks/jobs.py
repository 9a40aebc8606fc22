"""Celery jobs for tasks. Jobs take ids, reload rows, and are safe to run twice."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from celery import shared_task
from django.db import close_old_connections

from a2ahub.worker import submit
from tasks import runner


@shared_task(name="tasks.run_task", ignore_result=True)
def run_task(task_id: str, token: str) -> None:
    """Run the executor's turn of a stored task; `token` lets only one worker claim it."""
    close_old_connections()
    try:
        # async_to_sync, not asyncio.run: the ORM calls of this turn then stay on this worker
        # thread, instead of queueing behind every other thread's on one shared thread.
        async_to_sync(runner.run_stored)(task_id, token)
    finally:
        close_old_connections()


@shared_task(name="tasks.recover_stale_tasks", ignore_result=True)
def recover_stale_tasks() -> int:
    return runner.recover_stale()


def enqueue_run(task_id: str, token: str) -> None:
    """Queue a turn: on Celery workers when distributed, on this process's own pool if not."""
    submit(run_task, task_id, token)
