"""Periodic jobs, in one table: Celery beat sends them when the hub is distributed, the
in-process scheduler runs them when it is embedded. Apps add theirs from `AppConfig.ready()`.

A periodic job is a Celery job that takes no arguments and is safe to run twice (two hubs'
beats may both send it): recovery of stale turns, the push sweep.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)


@dataclass
class Periodic:
    job: Any  # a Celery job (its `name` for beat; called as it is when embedded)
    interval: Callable[[], float]  # seconds, read when used (tests change the settings)
    last_run: float = field(default=0.0)


PERIODIC: dict[str, Periodic] = {}


def register(job: Any, interval: Callable[[], float]) -> None:
    PERIODIC[job.name] = Periodic(job, interval)


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
