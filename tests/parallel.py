"""Loaded with `-p tests.parallel` when pytest-xdist runs the suite in several processes
(`make pytest`): each worker process takes a Redis database of its own, the next ones after
the one `REDIS_URL` names (the test databases of PostgreSQL get their own names from
pytest-django). Workers sharing one would hear each other's events and wake-ups, take each
other's Celery jobs, and empty each other's counters."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests() -> None:
    # Before pytest-django sets Django up: the settings read REDIS_URL once, at import.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    url = os.environ.get("REDIS_URL")
    if not worker.startswith("gw") or not url:
        return
    parts = urlsplit(url)
    first = int(parts.path.strip("/") or 0)
    number = first + int(worker.removeprefix("gw"))
    os.environ["REDIS_URL"] = urlunsplit(parts._replace(path=f"/{number}"))
