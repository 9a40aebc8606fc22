"""Fixtures for the developer pages.

Personas and their rights:
- `dev_client`: the `developer` (tests/conftest.py), signed in; owns the agents made with
  owner=developer, and registers, imports, edits, previews and tries them.
- `dev_door`: the same session at the A2A doors (a session is a credential there too).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.door_client import Door


@pytest.fixture
def dev_client(developer: User) -> Client:
    client = Client()
    client.force_login(developer)
    return client


@pytest.fixture
def dev_door(door: Door, developer: User) -> Door:
    door.force_login(developer)
    return door
