"""Queueing a task's turn: on Celery workers when distributed, on this process's own pool if not."""

from __future__ import annotations

from a2ahub.worker import submit_or_retry_async
from tasks.jobs import run_task


async def enqueue_run(task_id: str, token: str, reply_to: str = "") -> bool:
    """Queue a turn: on Celery workers when distributed, on this process's own pool if not.
    The task is stored by now, so a broker that is away does not fail the send that stored
    it: the turn is offered again until the broker takes it (then recovery requeues it).
    Whether the broker took it at once."""
    return await submit_or_retry_async(run_task, task_id, token, *([reply_to] if reply_to else []))
