"""Celery jobs of the console."""

from __future__ import annotations

from celery import shared_task

from console import rollup


@shared_task(name="console.roll_up_finished_tasks", ignore_result=True)
def roll_up_finished_tasks() -> int:
    """Count the finished tasks of the minutes that ended since the last run."""
    run = rollup.roll_up()
    return 0 if run is None else run.minutes
