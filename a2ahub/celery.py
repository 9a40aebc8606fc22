"""The Celery application. Jobs live in each app's `jobs.py`: in this code "task" is an A2A Task."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "a2ahub.settings")

app = Celery("a2ahub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")


@worker_ready.connect
def start_task_maintenance(**_: object) -> None:
    # Every worker beats the hearts of its tasks and fails those whose runner died.
    from tasks.runner import ensure_maintenance

    ensure_maintenance()


@worker_init.connect
def let_jobs_block_their_loops(**_: object) -> None:
    from a2ahub.worker import allow_blocking_jobs

    allow_blocking_jobs()
