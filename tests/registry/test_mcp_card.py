"""The MCP door's Server Card (the SEP-2127 draft's shape) and its AI Catalog entry: anyone
may read where the hub's MCP server is, how to reach it and which protocol revisions it
speaks, before connecting."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.registry.catalogs import verified

pytestmark = pytest.mark.django_db


def test_the_catalog_lists_the_mcp_door_after_the_agents(
    agent_factory: Any, client: Client
) -> None:
    agent_factory("one")
    document = client.get("/.well-known/ai-catalog.json").json()
    assert document["entries"][-1] == {
        "identifier": "urn:air:testserver:mcp",
        "type": "application/mcp-server-card+json",
        "url": "http://testserver/mcp/server-card",
    }
    verified(document, client.get("/.well-known/jwks.json").json())


def test_the_server_card_says_where_and_how_to_connect(client: Client) -> None:
    response = client.get("/mcp/server-card")
    assert response["Content-Type"] == "application/mcp-server-card+json"
    assert response["Access-Control-Allow-Origin"] == "*"
    card = response.json()
    assert card["$schema"] == (
        "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
    )
    assert card["name"] == "testserver/a2a-hub"
    (remote,) = card["remotes"]
    assert remote["type"] == "streamable-http"
    assert remote["url"] == "http://testserver/mcp"
    assert {"2025-11-25", "2026-07-28"} <= set(remote["supportedProtocolVersions"])
    assert remote["headers"][0]["name"] == "X-API-Key"
    assert remote["headers"][0]["isSecret"] is True
    assert "tools" not in card


def test_the_card_is_also_at_the_well_known_address(client: Client) -> None:
    assert (
        client.get("/.well-known/mcp/server-card").json() == client.get("/mcp/server-card").json()
    )
