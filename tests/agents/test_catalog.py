"""The AI Catalog (/.well-known/ai-catalog.json, the ai-catalog draft): every public, enabled
agent, hosted or registered, as an entry with a URN identifier pointing at its card; the
catalog signed with the hub's key, verifiable with its served JWKS. (Registering with the
publisher's own identifier: tests/registry/test_identifiers.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from jwcrypto.jws import InvalidJWSSignature

from agents.models import Access, ApiKey
from tests.door_client import Door
from tests.registry.catalogs import agent_entries, verified

pytestmark = pytest.mark.django_db

REQUIRED_TOP = {"specVersion", "host", "entries", "signature"}
REQUIRED_ENTRY = {"identifier", "type", "url", "updatedAt"}


def catalog(client: Client) -> dict[str, Any]:
    response = client.get("/.well-known/ai-catalog.json")
    assert response["Content-Type"] == "application/ai-catalog+json"
    return response.json()


def test_catalog_lists_public_agents_only(agent_factory: Any, client: Client) -> None:
    agent_factory("shown")
    agent_factory("hidden", public=False)
    agent_factory("disabled", enabled=False)
    entries = agent_entries(catalog(client))
    assert [entry["identifier"] for entry in entries] == ["urn:air:testserver:a2a:shown"]


def test_catalog_has_the_drafts_fields(agent_factory: Any, client: Client) -> None:
    agent_factory("one", provider_organization="Acme", provider_url="https://acme.example")
    document = catalog(client)
    assert set(document) == REQUIRED_TOP
    assert document["specVersion"] == "1.0"
    assert document["host"] == {"displayName": document["host"]["displayName"],
                                "identifier": "testserver",
                                "documentationUrl": "http://testserver/"}  # fmt: skip
    entry = document["entries"][0]
    assert set(entry) >= REQUIRED_ENTRY
    assert entry["type"] == "application/a2a-agent-card+json"
    assert entry["identifier"] == "urn:air:testserver:a2a:one"
    assert entry["publisher"] == {"identifier": "https://acme.example", "displayName": "Acme"}
    assert entry["updatedAt"].endswith("Z")


def test_an_entry_leaves_the_cards_own_name_description_and_version_to_the_card(
    agent_factory: Any, client: Client
) -> None:
    agent_factory("one", provider_organization="Acme")
    entry = catalog(client)["entries"][0]
    assert not {"displayName", "description", "version", "mediaType"} & set(entry)
    # A publisher without a verifiable identifier is not named.
    assert "publisher" not in entry


def test_the_catalog_is_signed_with_the_hubs_served_keys(
    agent_factory: Any, client: Client
) -> None:
    agent_factory("one")
    document = catalog(client)
    jwks = client.get("/.well-known/jwks.json").json()

    header = verified(document, jwks)

    assert header["alg"] == "ES256"
    assert header["jku"] == "http://testserver/.well-known/jwks.json"
    assert document["signature"].split(".")[1] == ""  # the payload is detached


def test_a_catalog_changed_after_signing_fails_verification(
    agent_factory: Any, client: Client
) -> None:
    agent_factory("one")
    agent_factory("two")
    document = catalog(client)
    jwks = client.get("/.well-known/jwks.json").json()
    first, *others = document["entries"]
    tampered = [
        document | {"entries": [first]},
        document | {"host": document["host"] | {"displayName": "Someone else"}},
        document | {"entries": [first | {"url": "https://evil.example/card"}, *others]},
    ]

    for changed in tampered:
        with pytest.raises(InvalidJWSSignature):
            verified(changed, jwks)


def test_an_unchanged_catalog_reads_the_same_each_time(agent_factory: Any, client: Client) -> None:
    agent_factory("one")
    assert catalog(client) == catalog(client)


def test_catalog_entries_point_at_cards_that_exist(agent_factory: Any, client: Client) -> None:
    agent_factory("one")
    agent_factory("two", skills=2)
    for entry in agent_entries(catalog(client)):
        assert entry["url"].startswith("http://testserver/agents/")
        path = entry["url"].removeprefix("http://testserver")
        assert client.get(path).json()["name"] == entry["identifier"].rsplit(":", 1)[1].title()


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
    identifiers = [e["identifier"] for e in agent_entries(catalog(client))]
    # The hub publishes its hosted agent; a registered one's publisher gave no urn:air name.
    assert identifiers == [
        "urn:air:testserver:a2a:hosted",
        "urn:a2a-hub:testserver:agent:registered",
    ]


def test_restricting_an_agent_to_a_group_changes_neither_the_catalog_nor_its_card(
    agent_factory: Any, client: Client, door: Door
) -> None:
    # Who may call an agent is not whether it is listed: a public agent open to one group is
    # still in the catalog with its card readable by anyone; a private one stays out.
    team = Group.objects.create(name="team")
    for slug, public in (("team-public", True), ("team-private", False)):
        agent = agent_factory(slug, public=public, access=Access.LISTED)
        agent.allowed_groups.add(team)

    entries = agent_entries(catalog(client))
    assert [entry["identifier"] for entry in entries] == ["urn:air:testserver:a2a:team-public"]
    card = client.get("/agents/team-public/.well-known/agent-card.json")
    assert card.status_code == 200
    assert card.json()["name"]
    # The card is not the door: calling it still needs a member's credential.
    refused = door.post("/agents/team-public/jsonrpc/", "{}", content_type="application/json")
    assert refused.status_code == 401
