"""Celery jobs for tasks. Jobs take ids, reload rows, and are safe to run twice."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready
from django.db import close_old_connections

from a2ahub.worker import submit_or_retry, submit_or_retry_async
from tasks import retention, runner

# A turn whose claim could not reach the database (it restarts) is offered again a second
# later, this many times at most: its blocking send is waiting, and recovery would queue it
# again only after TASK_STALE_SECONDS (a minute by default).
CLAIM_RETRIES = 30


@shared_task(
    name="tasks.run_task",
    ignore_result=True,
    autoretry_for=(runner.ClaimFailed,),
    retry_kwargs={"max_retries": CLAIM_RETRIES, "countdown": 1},
)
def run_task(task_id: str, token: str, reply_to: str = "") -> None:
    """Run the executor's turn of a stored task; `token` lets only one worker claim it, and
    `reply_to` names the web process waiting for the turn's end (if one is)."""
    close_old_connections()
    try:
        runner.run_job(task_id, token, reply_to)
    finally:
        close_old_connections()


@shared_task(name="tasks.recover_stale_tasks", ignore_result=True)
def recover_stale_tasks() -> int:
    return runner.recover_stale()


@shared_task(name="tasks.prune_finished_tasks", ignore_result=True)
def prune_finished_tasks() -> int:
    """Delete finished tasks older than TASK_RETENTION_DAYS, a batch at a time."""
    return sum(retention.prune_tasks())


def enqueue_run(task_id: str, token: str, reply_to: str = "") -> bool:
    """Queue a turn: on Celery workers when distributed, on this process's own pool if not.
    The task is stored by now, so a broker that is away does not fail the send that stored
    it: the turn is offered again until the broker takes it (then recovery requeues it).
    Whether the broker took it at once."""
    return submit_or_retry(run_task, task_id, token, *([reply_to] if reply_to else []))


async def enqueue_run_async(task_id: str, token: str, reply_to: str = "") -> bool:
    return await submit_or_retry_async(run_task, task_id, token, *([reply_to] if reply_to else []))


@worker_ready.connect
def start_task_maintenance(**_: object) -> None:
    # Every worker beats the hearts of the turns it runs and hears stop requests.
    runner.ensure_maintenance()
