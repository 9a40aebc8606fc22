"""Fixtures for the push tests: a real webhook receiver on 127.0.0.1 (`receiver.py`), agents
that push, and callers holding API keys (`callers.py`).

Personas and their rights (on the `pusher` agent, which requires an API key):
- `caller`: holds a valid key; creates tasks and manages the push configs of its own tasks.
- `stranger`: holds another valid key; none of `caller`'s tasks (nor their configs) exist for it.

Deliveries run on the hub's in-process thread pool (these tests start no Celery worker), so a
test that waits for one needs `django_db(transaction=True)`: the pool's threads must see the
rows the test wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents.models import Agent, ApiKey
from tests.door_client import Door
from tests.factories.agents import SECURED, make_agent
from tests.push.callers import Caller
from tests.push.receiver import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.down()


@pytest.fixture
def push_settings(settings: Any) -> Any:
    """Fast retries, the receiver's loopback address allowed, and jobs on the in-process pool
    (with REDIS_URL set they would wait for a Celery worker these tests do not start)."""
    settings.REDIS_URL = ""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.PUSH_RETRY_BASE_SECONDS = 0.05
    settings.PUSH_RETRY_MAX_SECONDS = 0.2
    settings.PUSH_RETRY_HORIZON_SECONDS = 60.0
    settings.PUSH_TIMEOUT_SECONDS = 5.0
    return settings


@pytest.fixture
def caller(door: Door) -> Caller:
    _, raw = ApiKey.issue("caller")
    return Caller(raw)


@pytest.fixture
def stranger(door: Door) -> Caller:
    _, raw = ApiKey.issue("stranger")
    return Caller(raw)


@pytest.fixture
def pusher(db: None) -> Agent:
    """An echo agent that sends push notifications: each task has four events (the task,
    working, its artifact, completed)."""
    return make_agent("pusher", push_notifications=True, **SECURED)


@pytest.fixture
def silent(db: None) -> Agent:
    """An echo agent without push notifications."""
    return make_agent("silent", push_notifications=False, **SECURED)
