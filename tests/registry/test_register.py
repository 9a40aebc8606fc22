"""Registering: seed 003's request, 1.0 and 0.3 cards and card URLs become hosted
`a2a-remote` agents at once; bad bodies and credentials are refused precisely."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents.models import Agent, ApiKey
from registry.models import Registration
from tests.factories.agents import make_agent
from tests.registry.conftest import CARD_V03, CARD_V1, SEED_003, CardServer, Registrar, card

pytestmark = pytest.mark.django_db


def test_seed_003s_request_posted_as_is_gets_the_seeds_response_fields(owner: Registrar) -> None:
    response = owner.register(SEED_003)
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "registered"
    assert body["agentId"] == "weather-agent-001"
    assert body["registrationId"].startswith("reg-")
    assert body["expiresAt"].endswith("Z")
    assert body["discoveryUrl"] == (
        "http://testserver/agents/weather-agent-001/.well-known/agent-card.json"
    )


def test_the_registered_agent_is_hosted_at_once_with_its_own_card(
    owner: Registrar, client: Client
) -> None:
    discovery = owner.register(SEED_003).json()["discoveryUrl"]
    hub_card = client.get(discovery.removeprefix("http://testserver")).json()
    assert hub_card["name"] == "天气助手"
    assert [s["id"] for s in hub_card["skills"]] == ["weather-query"]
    assert hub_card["url"] == "http://testserver/agents/weather-agent-001/jsonrpc/"
    agent = Agent.objects.get(slug="weather-agent-001")
    assert agent.executor_kind == "a2a-remote"
    assert agent.executor_settings["card"]["supportedInterfaces"][0]["url"] == (
        "https://weather-agent.example.com/api"
    )


@pytest.mark.parametrize(
    ("document", "slug", "version"),
    [(CARD_V1, "translator", "1.0"), (CARD_V03, "summarizer", "0.3")],
)
def test_a_card_of_either_version_registers_under_its_name(
    owner: Registrar, document: dict[str, Any], slug: str, version: str
) -> None:
    response = owner.register(document)
    assert response.status_code == 201 and response.json()["agentId"] == slug
    # The protocol versions the remote speaks, from the card's interfaces.
    assert Registration.objects.get(agent__slug=slug).protocols == [version]


def test_an_agent_id_may_be_asked_for(owner: Registrar) -> None:
    assert owner.register(CARD_V1, "?agentId=words").json()["agentId"] == "words"


def test_a_card_url_is_fetched_and_kept_for_later_reads(
    owner: Registrar, card_server: CardServer
) -> None:
    response = owner.register({"cardUrl": card_server.url})
    assert response.status_code == 201
    registration = Registration.objects.get(agent__slug="translator")
    assert registration.card_url == card_server.url
    assert registration.card_etag == card_server.etag
    assert registration.agent.executor_settings["card_url"] == card_server.url


def test_a_card_url_on_a_private_address_is_refused(owner: Registrar) -> None:
    response = owner.register({"cardUrl": "http://127.0.0.1:9/.well-known/agent-card.json"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "cardUrl"
    assert "loopback" in response.json()["error"]["message"]
    assert not Agent.objects.exclude(slug__in=[]).filter(executor_kind="a2a-remote").exists()


def test_a_card_naming_a_private_interface_is_refused(owner: Registrar) -> None:
    private = card(CARD_V1, supportedInterfaces=[
        {"url": "http://10.0.0.5/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ])  # fmt: skip
    response = owner.register(private)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "supportedInterfaces.url"


def test_an_invalid_card_is_refused_naming_the_field(owner: Registrar) -> None:
    nameless = card(CARD_V1)
    del nameless["name"]
    response = owner.register(nameless)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and error["field"] == "card"
    assert "name" in error["message"]


def test_seed_shape_without_endpoints_is_refused_naming_endpoints(owner: Registrar) -> None:
    response = owner.register(card(SEED_003, endpoints=[]))
    assert response.status_code == 400 and response.json()["error"]["field"] == "endpoints"


def test_a_body_over_the_size_limit_gets_413(owner: Registrar, settings: Any) -> None:
    settings.REGISTRY_MAX_BODY_BYTES = 2048
    response = owner.register(card(CARD_V1, description="x" * 4000))
    assert response.status_code == 413
    assert response.json()["error"]["status"] == "PAYLOAD_TOO_LARGE"


def test_a_body_that_is_not_json_is_refused(owner: Registrar) -> None:
    response = owner.client.post("/registry/agents", "{nope", content_type="application/json",
                                 **owner.headers)  # fmt: skip
    assert response.status_code == 400 and response.json()["error"]["field"] == "body"


def test_registering_without_credentials_gets_401_with_a_challenge(anonymous: Registrar) -> None:
    response = anonymous.register(CARD_V1)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert not Agent.objects.filter(slug="translator").exists()


def test_a_wrong_key_gets_401(db: None) -> None:
    response = Registrar(Client(), "a2a_0000_not-a-key").register(CARD_V1)
    assert response.status_code == 401


def test_a_key_bound_to_one_agent_may_not_register(db: None) -> None:
    _, raw = ApiKey.issue("one agent only", agent=make_agent("echo"))
    response = Registrar(Client(), raw).register(CARD_V1)
    assert response.status_code == 401
    assert "bound to one agent" in response.json()["error"]["message"]


def test_a_slug_of_a_hosted_agent_cannot_be_taken_over(owner: Registrar) -> None:
    make_agent("translator")
    response = owner.register(CARD_V1)
    assert response.status_code == 409
    assert Agent.objects.get(slug="translator").executor_kind == "echo"


def test_a_ttl_over_the_maximum_is_refused_naming_ttl(owner: Registrar, settings: Any) -> None:
    settings.REGISTRY_MAX_TTL_SECONDS = 600
    response = owner.register(CARD_V1, "?ttl=601")
    assert response.status_code == 400 and response.json()["error"]["field"] == "ttl"


def test_the_ttl_asked_for_sets_the_expiry(owner: Registrar) -> None:
    assert owner.register(CARD_V1, "?ttl=42").json()["ttl"] == 42
    registration = Registration.objects.get()
    assert 41 <= (registration.expires_at - registration.renewed_at).total_seconds() <= 42
