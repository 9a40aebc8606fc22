"""Fixtures for the developer pages.

Personas and their rights:
- `dev_client`: the `developer` (tests/conftest.py), signed in; owns the agents made with
  owner=developer, and registers, imports, edits, previews and tries them.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture
def dev_client(developer: User) -> Client:
    client = Client()
    client.force_login(developer)
    return client
