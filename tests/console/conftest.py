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
