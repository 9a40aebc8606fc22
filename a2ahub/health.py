"""Whether this process can serve: the parts `/readyz` checks, each bounded by
`READINESS_TIMEOUT_SECONDS`, each answering "ready", "embedded" or why not.

Distributed (REDIS_URL set) the hub needs its database, Redis and at least one Celery worker;
embedded it needs its database only (its jobs run in this process).
"""

from __future__ import annotations

import logging
import math

import psycopg
import redis
from django.conf import settings
from django.db import connections

from a2ahub.celery import app as celery_app

logger = logging.getLogger(__name__)

READY = "ready"
EMBEDDED = "embedded"


def readiness() -> dict[str, str]:
    parts = {"database": database()}
    if not settings.REDIS_URL:
        return parts | {"workers": EMBEDDED}
    parts["redis"] = redis_ping()
    # Asking workers goes through Redis; without it the question would only wait.
    parts["workers"] = workers() if parts["redis"] == READY else "not checked: Redis is away"
    return parts


def database() -> str:
    config = connections["default"].settings_dict
    try:
        if config["ENGINE"] == "django.db.backends.postgresql":
            postgres_select_one(config)
        else:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT 1")
    except Exception as exc:
        return failure("database", exc)
    return READY


def postgres_select_one(config: dict[str, object]) -> None:
    """On a connection of its own: the pool would wait up to its own timeout (10 s) for a
    connection when the server is away, and a busy pool is no sign of a dead database."""
    seconds = settings.READINESS_TIMEOUT_SECONDS
    with psycopg.connect(
        dbname=str(config["NAME"]), user=str(config["USER"] or ""),
        password=str(config["PASSWORD"] or ""), host=str(config["HOST"] or ""),
        port=str(config["PORT"] or ""), connect_timeout=max(2, math.ceil(seconds)),
        options=f"-c statement_timeout={int(seconds * 1000)}", autocommit=True,
    ) as connection:  # fmt: skip
        connection.execute("SELECT 1")


def redis_ping() -> str:
    seconds = settings.READINESS_TIMEOUT_SECONDS
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=seconds, socket_connect_timeout=seconds
    )
    try:
        client.ping()
    except Exception as exc:
        return failure("redis", exc)
    finally:
        client.close()
    return READY


def workers() -> str:
    """Celery's own remote-control ping: the first worker to answer is enough. The workers run
    without Celery's heartbeat events, and the task runners' heartbeats are per running task,
    so an idle worker would look dead by them."""
    with celery_app.connection_for_write(settings.REDIS_URL) as connection:
        try:
            replies = celery_app.control.ping(
                timeout=settings.READINESS_TIMEOUT_SECONDS, limit=1, connection=connection
            )
        except Exception as exc:
            return failure("workers", exc)
    return READY if replies else "no worker answered"


def failure(part: str, exc: Exception) -> str:
    logger.warning("readiness: %s is not ready: %s", part, exc)
    return f"not ready: {type(exc).__name__}"
