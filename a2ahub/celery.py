"""The Celery application. Jobs live in each app's `jobs.py`: in this code "task" is an A2A Task.

Periodic jobs come from `a2ahub.schedule` (apps register them): beat reads the table when it
starts, once Django's apps are ready. Workers and beat say they are alive from the moment they
are ready (`a2ahub.processes`), as each web process does from `a2ahub.asgi`.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import beat_init, task_postrun, task_prerun, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "a2ahub.settings")

app = Celery("a2ahub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")


@beat_init.connect
def add_periodic_jobs(sender: Any, **_: Any) -> None:
    from a2ahub import schedule

    sender.scheduler.update_from_dict(schedule.beat_schedule())


@worker_ready.connect
def beat_as_worker(**_: object) -> None:
    """A worker is listed as alive (`a2ahub.processes`) from the moment it takes jobs, with
    the jobs it holds."""
    from a2ahub import interpreter, processes

    processes.holding = jobs_held
    processes.start("worker")
    interpreter.settle()


def jobs_held() -> list[object]:
    """The jobs this worker took from the broker and has not finished, running, waiting for a
    thread or for their countdown: `[name, args]` each."""
    from celery.worker import state

    return [[request.name, list(request.args)] for request in list(state.requests.values())]


@beat_init.connect
def beat_as_beat(**_: object) -> None:
    from a2ahub import processes

    processes.start("beat")


@task_prerun.connect
def carry_request_id(task: Any, **_: object) -> None:
    """A job a request queued logs with the request's id (`a2ahub.worker.job_message`)."""
    from a2ahub import request_id

    request_id.resume(task.request.get(request_id.JOB_HEADER))


@task_postrun.connect
def forget_request_id(**_: object) -> None:
    from a2ahub import request_id

    request_id.current.set(None)  # the thread's next job may come from no request


@task_postrun.connect
def give_connections_back(**_: object) -> None:
    # As at the end of a request: kept on its thread, a connection the database dropped (a
    # restart) would fail every later job there. (The pool keeps it; the next job checks it
    # out again.)
    from django.db import close_old_connections

    close_old_connections()
