"""Outages of the services the hub needs (its database, Redis) as this process meets them:
one log line when an attempt first fails and one when an attempt succeeds again, saying how
long the service was away, however many attempts failed in between.

Every part of the process that uses a service reports to that service's one `Outage`, so a
Redis outage is two lines per process, not one per publish, subscription and heartbeat.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import psycopg
import redis
from django.conf import settings
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

logger = logging.getLogger(__name__)

# What a database that cannot be reached (or dropped the connection) raises: Django's
# wrappers of the driver's errors, psycopg's own where Django does not wrap them (the pool's
# timeout among them), and `a2ahub.asyncdb` raises Django's too.
DATABASE_AWAY = (OperationalError, InterfaceError, psycopg.OperationalError)
# What Redis away raises, to the hub's clients and to Celery's (kombu's).
REDIS_AWAY = (redis.RedisError, BrokerError)


class Outage:
    """One service as this process sees it: answering, or away since a moment."""

    def __init__(self, service: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.service = service
        self.clock = clock
        self.began: float | None = None
        self.failures = 0
        self.lock = threading.Lock()
        # Called (on the failing thread) when an outage begins; a failing one is logged.
        self.on_began: list[Callable[[], object]] = []

    def failed(self, problem: BaseException | str) -> None:
        """An attempt to use the service failed for want of it; the first of an outage is
        logged."""
        with self.lock:
            self.failures += 1
            if self.began is not None:
                return
            self.began = self.clock()
        logger.warning(
            "%s is unavailable (%s); logged again when it answers", self.service, describe(problem)
        )
        for hook in list(self.on_began):
            try:
                hook()
            except Exception:
                logger.exception("a hook of an outage of %s failed", self.service)

    def answered(self) -> None:
        """An attempt succeeded: an outage that was ongoing ends, and says how long it was."""
        if self.began is None:  # on every statement and publish: no lock unless it matters
            return
        with self.lock:
            if self.began is None:
                return
            seconds, failures = self.clock() - self.began, self.failures
            self.began, self.failures = None, 0
        logger.warning(
            "%s answers again after %.1f s away (%d failed %s meanwhile)",
            self.service, seconds, failures, "attempt" if failures == 1 else "attempts",
        )  # fmt: skip


def describe(problem: BaseException | str) -> str:
    if isinstance(problem, str):
        return problem
    return f"{type(problem).__name__}: {problem}".rstrip(": ")


_outages: dict[str, Outage] = {}
_lock = threading.Lock()


def of(service: str) -> Outage:
    """This process's one `Outage` of `service` (its name as the log lines say it)."""
    with _lock:
        return _outages.setdefault(service, Outage(service))


DATABASE = of("The database")


def redis_at(url: str) -> Outage:
    """The outage of the Redis at `url`, named by its address (the URL may carry a password)."""
    parts = urlsplit(url)
    return of(f"Redis at {parts.hostname or 'localhost'}:{parts.port or 6379}")


def note(exc: BaseException) -> bool:
    """Whether `exc` says the database or the process's Redis is away; if so, it is counted in
    that outage."""
    if isinstance(exc, DATABASE_AWAY):
        DATABASE.failed(exc)
        return True
    if isinstance(exc, REDIS_AWAY) and settings.REDIS_URL:
        redis_at(settings.REDIS_URL).failed(exc)
        return True
    return False
