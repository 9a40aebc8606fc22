"""The Celery application. Jobs live in each app's `jobs.py`: in this code "task" is an A2A Task.

Periodic jobs come from `a2ahub.schedule` (apps register them), read once the apps are ready.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "a2ahub.settings")

app = Celery("a2ahub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")


@app.on_after_finalize.connect
def add_periodic_jobs(sender: Celery, **_: Any) -> None:
    from a2ahub import schedule

    sender.conf.beat_schedule = schedule.beat_schedule()


@worker_init.connect
def let_jobs_block_their_loops(**_: object) -> None:
    from a2ahub.worker import allow_blocking_jobs

    allow_blocking_jobs()
