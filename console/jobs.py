"""Celery jobs of the console, and the heartbeats of Celery's own processes: a worker or
beat says it is alive (`a2ahub.processes`) from the moment it is ready."""

from __future__ import annotations

from celery import shared_task
from celery.signals import beat_init, worker_ready

from a2ahub import processes
from console import rollup


@shared_task(name="console.roll_up_finished_tasks", ignore_result=True)
def roll_up_finished_tasks() -> int:
    """Count the finished tasks of the minutes that ended since the last run."""
    run = rollup.roll_up()
    return 0 if run is None else run.minutes


@worker_ready.connect
def beat_as_worker(**_: object) -> None:
    processes.start("worker")


@beat_init.connect
def beat_as_beat(**_: object) -> None:
    processes.start("beat")
