"""The AI Catalog (/.well-known/ai-catalog.json, the ai-catalog draft): every public, enabled
agent, hosted or registered, as an entry with a URN identifier pointing at its card."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from agents.models import Access, ApiKey
from tests.door_client import Door

pytestmark = pytest.mark.django_db

REQUIRED_TOP = {"specVersion", "host", "entries"}
REQUIRED_ENTRY = {"identifier", "displayName", "mediaType", "url"}


def catalog(client: Client) -> dict[str, Any]:
    response = client.get("/.well-known/ai-catalog.json")
    assert response["Content-Type"] == "application/ai-catalog+json"
    return response.json()


def test_catalog_lists_public_agents_only(agent_factory: Any, client: Client) -> None:
    agent_factory("shown")
    agent_factory("hidden", public=False)
    agent_factory("disabled", enabled=False)
    entries = catalog(client)["entries"]
    assert [entry["identifier"] for entry in entries] == ["urn:a2a-hub:testserver:agent:shown"]


def test_catalog_has_the_drafts_required_fields(agent_factory: Any, client: Client) -> None:
    agent_factory("one", provider_organization="Acme")
    document = catalog(client)
    assert set(document) >= REQUIRED_TOP
    assert document["specVersion"] == "1.0"
    assert document["host"]["displayName"]
    entry = document["entries"][0]
    assert set(entry) >= REQUIRED_ENTRY
    assert entry["mediaType"] == "application/a2a-agent-card+json"
    assert entry["identifier"].startswith("urn:")
    assert entry["publisher"] == {"displayName": "Acme"}
    assert entry["updatedAt"].endswith("Z")


def test_catalog_entries_point_at_cards_that_exist(agent_factory: Any, client: Client) -> None:
    agent_factory("one")
    agent_factory("two", skills=2)
    for entry in catalog(client)["entries"]:
        assert entry["url"].startswith("http://testserver/agents/")
        path = entry["url"].removeprefix("http://testserver")
        assert client.get(path).json()["name"] == entry["displayName"]


def test_catalog_lists_registered_agents_beside_hosted_ones(
    agent_factory: Any, client: Client, developer: Any
) -> None:
    agent_factory("hosted")
    _, raw = ApiKey.issue("registrar", owner=developer, scopes=["registry"])
    card = {"name": "Registered", "description": "Came by itself.", "version": "1.0.0",
            "supportedInterfaces": [{"url": "https://registered.example/a2a",
                                     "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "S", "description": "S.", "tags": ["t"]}]}  # fmt: skip
    client.post("/registry/agents", card, content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {raw}")  # fmt: skip
    names = [e["displayName"] for e in catalog(client)["entries"]]
    assert names == ["hosted".title(), "Registered"]


def test_restricting_an_agent_to_a_group_changes_neither_the_catalog_nor_its_card(
    agent_factory: Any, client: Client, door: Door
) -> None:
    # Who may call an agent is not whether it is listed: a public agent open to one group is
    # still in the catalog with its card readable by anyone; a private one stays out.
    team = Group.objects.create(name="team")
    for slug, public in (("team-public", True), ("team-private", False)):
        agent = agent_factory(slug, public=public, access=Access.LISTED)
        agent.allowed_groups.add(team)

    entries = catalog(client)["entries"]
    assert [entry["identifier"] for entry in entries] == [
        "urn:a2a-hub:testserver:agent:team-public"
    ]
    card = client.get("/agents/team-public/.well-known/agent-card.json")
    assert card.status_code == 200
    assert card.json()["name"]
    # The card is not the door: calling it still needs a member's credential.
    refused = door.post("/agents/team-public/jsonrpc/", "{}", content_type="application/json")
    assert refused.status_code == 401
