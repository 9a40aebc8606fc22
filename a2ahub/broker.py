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

from a2ahub import schedule

logger = logging.getLogger(__name__)

# Celery waits 2 s after a first failed attempt and 2 s more after each one, up to 30 s:
# after a minute without Redis the workers and beat stayed away up to half a minute longer
# than Redis did, and every worker-mode turn and the recovery of stale ones waited with them.
RECONNECT_INTERVALS = {"interval_start": 0.2, "interval_step": 0.2, "interval_max": 1.0}


class Consumer(CeleryConsumer):
    def ensure_connected(self, conn: Any) -> Any:
        # Celery passes kombu no intervals of its own and takes none from its settings.
        conn.ensure_connection = partial(conn.ensure_connection, **RECONNECT_INTERVALS)
        return super().ensure_connected(conn)


class Scheduler(beat.Scheduler):
    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        if schedule.runs_in_beat(entry.task):
            schedule.run_in_beat(entry.task)
        else:
            super().apply_entry(entry, producer)

    def _ensure_connected(self) -> Any:
        # Celery's own, with the intervals above.
        def report(exc: Exception, interval: float) -> None:
            logger.error("beat: connection error: %s; trying again in %s s", exc, interval)

        max_retries = self.app.conf.broker_connection_max_retries
        return self.connection.ensure_connection(report, max_retries, **RECONNECT_INTERVALS)
