"""Celery's worker consumer and beat scheduler (settings `CELERY_WORKER_CONSUMER`,
`CELERY_BEAT_SCHEDULER`) as Celery makes them, except that they reconnect to a broker that
went away within a second of its return, and that beat runs the periodic jobs registered
`in_beat` itself (`a2ahub.schedule`)."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from celery import beat
from celery.worker.consumer import Consumer as CeleryConsumer
from django.conf import settings

from a2ahub import outages, schedule

logger = logging.getLogger(__name__)

# Celery waits 2 s after a first failed attempt and 2 s more after each one, up to 30 s:
# after a minute without Redis the workers and beat stayed away up to half a minute longer
# than Redis did, and every worker-mode turn and the recovery of stale ones waited with them.
RECONNECT_INTERVALS = {"interval_start": 0.2, "interval_step": 0.2, "interval_max": 1.0}


class Consumer(CeleryConsumer):
    def ensure_connected(self, conn: Any) -> Any:
        # Celery passes kombu no intervals of its own and takes none from its settings, and
        # logs an error for every attempt: the outage is logged once instead.
        conn.ensure_connection = partial(reconnect, conn.ensure_connection)
        return super().ensure_connected(conn)


class Scheduler(beat.Scheduler):
    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        if schedule.runs_in_beat(entry.task):
            schedule.run_in_beat(entry.task)
        else:
            super().apply_entry(entry, producer)

    def _ensure_connected(self) -> Any:
        # Celery's own, with the intervals above and the outage logged once.
        max_retries = self.app.conf.broker_connection_max_retries
        return reconnect(self.connection.ensure_connection, None, max_retries)


def reconnect(ensure: Any, errback: Any = None, max_retries: Any = None, **options: Any) -> Any:
    """kombu's `ensure_connection`, each failed attempt counted in the outage of the broker."""
    outage = outages.redis_at(settings.CELERY_BROKER_URL)
    connection = ensure(
        lambda exc, interval: outage.failed(exc), max_retries, **(options | RECONNECT_INTERVALS)
    )
    outage.answered()
    return connection
