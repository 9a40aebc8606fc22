"""Celery's worker consumer, beat scheduler and Redis transport (settings
`CELERY_WORKER_CONSUMER`, `CELERY_BEAT_SCHEDULER`, `CELERY_BROKER_TRANSPORT`) as Celery and
kombu make them, except that they reconnect to a broker that went away within a second of its
return, that a worker survives losing its broker while it holds a job, and that beat runs the
periodic jobs registered `in_beat` itself (`a2ahub.schedule`)."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import redis
from celery import beat
from celery.worker.consumer import Consumer as CeleryConsumer
from django.conf import settings
from kombu.transport import redis as kombu_redis

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


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> Any:
        # When Redis drops a worker's connection, Celery has kombu collect it (which closes
        # its channel and drops the transport's link to the connection) and then close it.
        # A channel whose first close the dead Redis cut short is closed again, and if the
        # worker holds unacknowledged jobs (one waiting for its countdown or for a thread)
        # kombu builds a client from the dropped link to give them back: an AttributeError
        # that ended the worker. As a connection error, the close is skipped like any other
        # on a broker that is away; Redis keeps the jobs for the next connection.
        if self.connection.client is None:
            raise redis.ConnectionError("the broker connection was already closed")
        return super()._connparams(asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel
