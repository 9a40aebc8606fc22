"""Agent Cards: both versions read them, caching works, and only served agents have one."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as pb
from django.test import Client
from google.protobuf.json_format import ParseDict, ParseError

from agents.models import Skill

pytestmark = pytest.mark.django_db

RICH = {
    "provider_organization": "Example Org",
    "provider_url": "https://example.org",
    "icon_url": "https://example.org/icon.png",
    "documentation_url": "https://example.org/docs",
    "push_notifications": True,
    "extended_card": True,
    "extensions": [
        {"uri": "urn:example:ext", "description": "An extension", "required": True,
         "params": {"level": 2}}
    ],
    "security_schemes": {
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
    },
    "security_requirements": [{"apiKey": []}, {"bearer": []}],
    "default_input_modes": ["text/plain", "application/json"],
    "default_output_modes": ["application/json"],
}  # fmt: skip


def get_card(client: Client, slug: str, **headers: Any) -> Any:
    return client.get(f"/agents/{slug}/.well-known/agent-card.json", headers=headers)


@pytest.mark.parametrize("fields", [{}, RICH], ids=["plain", "rich"])
def test_default_card_is_read_by_both_versions(
    agent_factory: Any, client: Client, fields: dict
) -> None:
    agent_factory("alpha", skills=2, **fields)
    document = get_card(client, "alpha").json()

    legacy = v03.AgentCard.model_validate(document)
    assert legacy.url == "http://testserver/agents/alpha/jsonrpc/"
    assert legacy.preferred_transport == "JSONRPC"
    assert [s.id for s in legacy.skills] == ["alpha-skill-0", "alpha-skill-1"]

    assert [(i.transport, i.url) for i in legacy.additional_interfaces or []] == [
        ("HTTP+JSON", "http://testserver/agents/alpha/rest/")
    ]

    current = parse_agent_card(document)
    interfaces = [
        (i.protocol_binding, i.protocol_version, i.url, i.tenant)
        for i in current.supported_interfaces
    ]
    assert interfaces == [
        ("JSONRPC", "1.0", "http://testserver/agents/alpha/jsonrpc/", ""),
        ("JSONRPC", "0.3", "http://testserver/agents/alpha/jsonrpc/", ""),
        ("HTTP+JSON", "1.0", "http://testserver/agents/alpha/rest/", ""),
        ("HTTP+JSON", "0.3", "http://testserver/agents/alpha/rest/", ""),
        ("JSONRPC", "1.0", "http://testserver/a2a/jsonrpc/", "alpha"),
        ("HTTP+JSON", "1.0", "http://testserver/a2a/rest/", "alpha"),
        ("GRPC", "1.0", "testserver:50051", "alpha"),
    ]


def test_rich_card_keeps_every_field_in_both_shapes(agent_factory: Any, client: Client) -> None:
    agent_factory("rich", **RICH)
    union = get_card(client, "rich").json()
    pure = get_card(client, "rich", A2A_Version="1.0").json()

    legacy = v03.AgentCard.model_validate(union)
    assert legacy.provider is not None and legacy.provider.organization == "Example Org"
    assert legacy.capabilities.push_notifications is True
    assert legacy.capabilities.extensions[0].required is True
    assert legacy.security == [{"apiKey": []}, {"bearer": []}]
    assert legacy.security_schemes["apiKey"].root.name == "X-API-Key"

    current = ParseDict(pure, pb.AgentCard())
    assert current.capabilities.extended_agent_card is True
    assert current.capabilities.extensions[0].params["level"] == 2
    assert current.security_schemes["bearer"].http_auth_security_scheme.bearer_format == "JWT"
    assert current.icon_url == "https://example.org/icon.png"


def test_pure_card_passes_strict_parsing_and_union_card_does_not(
    agent_factory: Any, client: Client
) -> None:
    agent_factory("strict")
    pure = get_card(client, "strict", A2A_Version="1.0").json()
    ParseDict(pure, pb.AgentCard())  # unknown fields are refused here
    assert "url" not in pure and "protocolVersion" not in pure
    assert {i["protocolVersion"] for i in pure["supportedInterfaces"]} == {"1.0", "0.3"}

    with pytest.raises(ParseError):
        ParseDict(get_card(client, "strict").json(), pb.AgentCard())


def test_extended_only_skills_stay_off_the_public_card(agent_factory: Any, client: Client) -> None:
    agent = agent_factory("ext", extended_card=True)
    Skill.objects.create(
        agent=agent, skill_id="secret", name="Secret", description="x", tags=["t"],
        extended_only=True, position=9,
    )  # fmt: skip
    skills = [s["id"] for s in get_card(client, "ext").json()["skills"]]
    assert skills == ["ext-skill-0"]


def test_urls_are_absolute_from_the_request_host(agent_factory: Any, client: Client) -> None:
    agent_factory("hosty")
    document = get_card(client, "hosty", host="localhost:9000").json()
    assert document["url"] == "http://localhost:9000/agents/hosty/jsonrpc/"
    http = [i for i in document["supportedInterfaces"] if i["protocolBinding"] != "GRPC"]
    assert all(i["url"].endswith("/") for i in http)


def test_urls_use_the_public_base_url_when_configured(
    agent_factory: Any, client: Client, settings: Any
) -> None:
    settings.PUBLIC_BASE_URL = "https://hub.example.com"
    agent_factory("public")
    document = get_card(client, "public").json()
    assert {i["url"] for i in document["supportedInterfaces"]} == {
        "https://hub.example.com/agents/public/jsonrpc/",
        "https://hub.example.com/agents/public/rest/",
        "https://hub.example.com/a2a/jsonrpc/",
        "https://hub.example.com/a2a/rest/",
        "hub.example.com:50051",
    }


def test_the_10_card_lists_the_grpc_service_naming_the_agent_by_tenant(
    agent_factory: Any, client: Client, settings: Any
) -> None:
    settings.GRPC_PORT = 50061
    agent_factory("rpc")
    pure = get_card(client, "rpc", A2A_Version="1.0").json()
    grpc = [i for i in pure["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert grpc == [{"url": "testserver:50061", "protocolBinding": "GRPC",
                     "tenant": "rpc", "protocolVersion": "1.0"}]  # fmt: skip
    # 0.3 requests cannot name an agent: only the default agent offers 0.3 gRPC.
    union = get_card(client, "rpc").json()
    assert all(i["transport"] != "GRPC" for i in union.get("additionalInterfaces", []))


def test_the_default_agents_card_alone_offers_03_clients_the_grpc_service(
    agent_factory: Any, client: Client, settings: Any
) -> None:
    settings.HUB_DEFAULT_AGENT = "home"
    agent_factory("home")
    union = get_card(client, "home").json()
    assert {"transport": "GRPC", "url": "testserver:50051"} in union["additionalInterfaces"]
    pure = get_card(client, "home", A2A_Version="1.0").json()
    grpc = [i for i in pure["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert [(i["protocolVersion"], i.get("tenant")) for i in grpc] == [
        ("1.0", "home"),
        ("0.3", None),
    ]


def test_no_grpc_interface_when_grpc_is_off(
    agent_factory: Any, client: Client, settings: Any
) -> None:
    settings.GRPC_PORT = 0
    agent_factory("norpc")
    pure = get_card(client, "norpc", A2A_Version="1.0").json()
    assert {i["protocolBinding"] for i in pure["supportedInterfaces"]} == {"JSONRPC", "HTTP+JSON"}


def test_card_answers_if_none_match_with_304(agent_factory: Any, client: Client) -> None:
    agent_factory("cached")
    first = get_card(client, "cached")
    assert first["Cache-Control"].startswith("public, max-age=")
    assert "A2A-Version" in first["Vary"]

    again = get_card(client, "cached", If_None_Match=first["ETag"])
    assert again.status_code == 304
    assert again.content == b""


def test_each_card_variant_has_its_own_etag(agent_factory: Any, client: Client) -> None:
    agent_factory("tags")
    union = get_card(client, "tags")
    pure = get_card(client, "tags", A2A_Version="1.0")
    assert union["ETag"] != pure["ETag"]
    stale = get_card(client, "tags", A2A_Version="1.0", If_None_Match=union["ETag"])
    assert stale.status_code == 200


def test_a_changed_agent_gets_a_new_etag(agent_factory: Any, client: Client) -> None:
    agent = agent_factory("changing")
    before = get_card(client, "changing")["ETag"]
    agent.description = "Now does something else."
    agent.save()
    after = get_card(client, "changing", If_None_Match=before)
    assert after.status_code == 200
    assert after.json()["description"] == "Now does something else."


def test_legacy_card_path_serves_the_same_card(agent_factory: Any, client: Client) -> None:
    agent_factory("old")
    legacy = client.get("/agents/old/.well-known/agent.json")
    assert legacy.status_code == 200
    assert legacy.json() == get_card(client, "old").json()


@pytest.mark.parametrize("slug", ["missing", "off"])
def test_unknown_and_disabled_agents_get_a_json_404(
    agent_factory: Any, client: Client, slug: str
) -> None:
    agent_factory("off", enabled=False)
    response = get_card(client, slug)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == 404


def test_cards_refuse_writes(agent_factory: Any, client: Client) -> None:
    agent_factory("ro")
    assert client.post("/agents/ro/.well-known/agent-card.json").status_code == 405


def test_hub_card_is_the_default_agents_card(
    agent_factory: Any, client: Client, settings: Any
) -> None:
    agent_factory("echo")
    agent_factory("other")
    assert client.get("/.well-known/agent-card.json").json() == get_card(client, "echo").json()
    settings.HUB_DEFAULT_AGENT = "other"
    assert client.get("/.well-known/agent-card.json").json()["name"] == "Other"
    settings.HUB_DEFAULT_AGENT = "absent"
    assert client.get("/.well-known/agent-card.json").status_code == 404
