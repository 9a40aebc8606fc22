"""Periodic jobs, in one table: Celery beat sends them when the hub is distributed, the
in-process scheduler runs them when it is embedded. Apps add theirs from `AppConfig.ready()`.

A periodic job is a Celery job that takes no arguments and is safe to run twice (two hubs'
beats may both send it): recovery of stale turns, the push sweep. A job registered `in_beat`
is run by beat itself, on a thread of its own, rather than sent: it must not wait for a free
worker thread (recovery, whose work is most needed when long turns hold every thread).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connections

logger = logging.getLogger(__name__)


@dataclass
class Periodic:
    job: Any  # a Celery job (its `name` for beat; called as it is when embedded)
    interval: Callable[[], float]  # seconds, read when used (tests change the settings)
    in_beat: bool = False
    last_run: float = field(default=0.0)
    thread: threading.Thread | None = None  # beat's run of an `in_beat` job
    overran: bool = False  # a tick found its last run still going


PERIODIC: dict[str, Periodic] = {}


def register(job: Any, interval: Callable[[], float], in_beat: bool = False) -> None:
    PERIODIC[job.name] = Periodic(job, interval, in_beat)


def runs_in_beat(name: str) -> bool:
    periodic = PERIODIC.get(name)
    return periodic is not None and periodic.in_beat


def run_in_beat(name: str) -> None:
    """Run an `in_beat` job on a thread of beat's process, unless its last run still goes on
    (a database that hangs, say): the next tick tries again."""
    periodic = PERIODIC[name]
    if periodic.thread is not None and periodic.thread.is_alive():
        # Every tick while a run hangs (the database is away, say): one line for the run,
        # the outage itself is logged by `a2ahub.outages`.
        if not periodic.overran:
            logger.warning("periodic job %s still runs from its last tick; not started again", name)
        periodic.overran = True
        return
    periodic.overran = False
    periodic.thread = threading.Thread(
        target=run_and_release, args=(name, periodic.job), name=f"a2ahub-{name}", daemon=True
    )
    periodic.thread.start()


def run_and_release(name: str, job: Any) -> None:
    try:
        logger.info("periodic job %s ran in beat: %s", name, job())
    except Exception:
        logger.exception("periodic job %s failed", name)
    finally:
        connections.close_all()  # this thread's: none held while beat waits for the next tick


def beat_schedule() -> dict[str, dict[str, Any]]:
    """The table as Celery beat wants it. A job not taken within its interval expires: while
    the workers are away the next one will do, rather than a pile of them."""
    table = {}
    for name, periodic in PERIODIC.items():
        every = periodic.interval()
        table[name] = {"task": name, "schedule": every, "options": {"expires": every}}
    return table


def run_due(now: float | None = None) -> list[str]:
    """Run, in this thread, every job whose interval has passed (the embedded hub's scheduler);
    a failing job is logged and does not keep the others from running."""
    now = time.monotonic() if now is None else now
    ran = []
    for name, periodic in PERIODIC.items():
        if now - periodic.last_run < periodic.interval():
            continue
        periodic.last_run = now
        try:
            periodic.job()
        except Exception:
            logger.exception("periodic job %s failed", name)
        ran.append(name)
    return ran
