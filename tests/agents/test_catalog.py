"""The hub's catalog lists every public, enabled agent with its card URL."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_catalog_lists_public_agents_only(agent_factory: Any, client: Client) -> None:
    agent_factory("shown")
    agent_factory("hidden", public=False)
    agent_factory("disabled", enabled=False)
    document = client.get("/.well-known/ai-catalog.json").json()
    assert [entry["id"] for entry in document["agents"]] == ["shown"]


def test_catalog_entries_point_at_cards_that_exist(agent_factory: Any, client: Client) -> None:
    agent_factory("one")
    agent_factory("two", skills=2)
    entries = client.get("/.well-known/ai-catalog.json").json()["agents"]
    for entry in entries:
        assert entry["cardUrl"].startswith("http://testserver/agents/")
        path = entry["cardUrl"].removeprefix("http://testserver")
        assert client.get(path).json()["name"] == entry["name"]
    assert [len(e["skills"]) for e in entries] == [1, 2]
