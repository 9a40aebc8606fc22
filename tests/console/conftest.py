"""Fixtures for the console.

Personas and their rights (tests/conftest.py):
- `operator` (`operator_client`): staff superuser; sees the dashboard and every live page.
- `developer` (`developer_client`): signed in, not staff; the admin and its sockets refuse them.
- anonymous: refused everywhere in the console.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console.models import FinishedHour, FinishedMinute, RollupMark
from tests.factories.agents import make_agent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def developer_client(developer: User) -> Client:
    client = Client()
    client.force_login(developer)
    return client


@pytest.fixture
def echo(db: None) -> Any:
    return make_agent("echo")


@pytest.fixture
def no_earlier_rollup(db: None) -> None:
    """The rollup tests start from none: an embedded hub runs its periodic jobs in the
    maintenance thread, and one that ran during an earlier test committed its mark and rows
    outside any test's transaction."""
    RollupMark.objects.all().delete()
    FinishedMinute.objects.all().delete()
    FinishedHour.objects.all().delete()
