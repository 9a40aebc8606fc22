"""Fixtures for the protocol tests: agents that need an API key and callers holding keys (the
callers and the readers of their answers live in `callers.py` and `answers.py`).

Personas and their rights:
- `caller`: holds a valid API key; creates tasks and sees, lists and cancels its own.
- `stranger`: holds another valid API key for the same agents; none of `caller`'s tasks
  exist for it (they are reported as not found, never shown).
- `anonymous`: presents no key; every agent that requires one answers HTTP 401.
- `impostor`: presents a key the hub never issued; also HTTP 401.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agents.models import Agent, ApiKey
from tests.door_client import Door
from tests.factories.agents import secured_agent
from tests.protocol.callers import AsyncCaller, Caller, holder_of_key


@pytest.fixture
def caller(door: Door) -> Caller:
    return holder_of_key("caller")


@pytest.fixture
def stranger(door: Door) -> Caller:
    return holder_of_key("stranger")


@pytest.fixture
def anonymous(door: Door) -> Caller:
    return Caller(None)


@pytest.fixture
def impostor(door: Door) -> Caller:
    return Caller("a2a_000000000000_not-a-key-this-hub-issued")


@pytest.fixture
def async_caller(door: Door) -> AsyncCaller:
    _, raw = ApiKey.issue("async caller")
    return AsyncCaller(raw)


@pytest.fixture
def echo(db: None) -> Agent:
    return secured_agent("echo")


@pytest.fixture
def interview(db: None) -> Agent:
    return secured_agent("interview", "interview")


@pytest.fixture
def tck(db: None) -> Agent:
    return secured_agent("tck", "conformance")


@pytest.fixture
def slow_agent(db: None) -> Callable[..., Agent]:
    """Slow agents work the seconds named in the message, in steps of 0.1 s."""

    def make(slug: str = "slow", mode: str = "worker") -> Agent:
        return secured_agent(slug, "slow", execution_mode=mode, executor_settings={"step": 0.1})

    return make


@pytest.fixture
def in_process_workers(settings: Any) -> None:
    """Worker-mode turns go to Celery when REDIS_URL is set; these tests start no Celery
    worker, so the turns run on the hub's in-process pool (the integration tests run a real
    worker)."""
    settings.REDIS_URL = ""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
