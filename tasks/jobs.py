"""Celery jobs for tasks. Jobs take ids, reload rows, and are safe to run twice."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.db import close_old_connections

from a2ahub.worker import submit_or_retry
from tasks import recovery, retention, runner

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
    """Queue again the turns that waited too long for a worker, then fail the open tasks of
    processes that died; how many were failed."""
    cutoff = recovery.stale_cutoff()
    for task_id, token in recovery.lost_turns(cutoff):
        submit_or_retry(run_task, task_id, token)
    return recovery.fail_stale(cutoff)


@shared_task(name="tasks.prune_finished_tasks", ignore_result=True)
def prune_finished_tasks() -> int:
    """Delete finished tasks older than TASK_RETENTION_DAYS, a batch at a time."""
    return sum(retention.prune_tasks())


@worker_ready.connect
def start_task_maintenance(**_: object) -> None:
    # Every worker beats the hearts of the turns it runs and hears stop requests.
    runner.ensure_maintenance()


@worker_shutdown.connect
def close_job_database(**_: object) -> None:
    # Its connections are given back rather than cut when the process exits.
    runner.close_job_connections()
