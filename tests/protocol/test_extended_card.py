"""GetExtendedAgentCard (1.0) and agent/getAuthenticatedExtendedCard (0.3): the card with the
extended-only skills, for authenticated callers of agents that offer one."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as v03
from django.test import Client

from agents.models import Agent, Skill
from tests.factories.agents import SECURED, make_agent
from tests.factories.envelopes import request_headers
from tests.factories.signatures import card_verifier
from tests.factories.versions import V03, V1, VERSIONS
from tests.protocol.answers import error_info, field_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db


@pytest.fixture
def vault(db: None) -> Agent:
    agent = make_agent("vault", skills=1, extended_card=True, **SECURED)
    Skill.objects.create(
        agent=agent, skill_id="vault-secret", name="Secret skill",
        description="Only for callers with a key.", tags=["private"], extended_only=True,
        position=5,
    )  # fmt: skip
    return agent


def skill_ids(card: dict[str, Any]) -> list[str]:
    return [skill["id"] for skill in card["skills"]]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_the_card_with_the_extended_only_skills(
    caller: Caller, vault: Agent, version: str
) -> None:
    card = caller.result("vault", version, "card")
    public = caller.client.get("/agents/vault/.well-known/agent-card.json").json()

    assert skill_ids(card) == ["vault-skill-0", "vault-secret"]
    assert skill_ids(public) == ["vault-skill-0"]
    assert card["name"] == "Vault"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_extended_card_is_signed_like_the_public_one(
    caller: Caller, vault: Agent, version: str
) -> None:
    card = parse_agent_card(caller.result("vault", version, "card"))

    card_verifier(Client())(card)
    assert [skill.id for skill in card.skills] == ["vault-skill-0", "vault-secret"]


def test_it_returns_the_pure_1_0_card_to_1_0_callers(caller: Caller, vault: Agent) -> None:
    card = caller.result("vault", V1, "card")

    parsed = parse_agent_card(card)
    assert parsed.capabilities.extended_agent_card is True
    assert "url" not in card
    assert "protocolVersion" not in card
    versions = {i["protocolVersion"] for i in card["supportedInterfaces"]}
    assert versions == {"1.0", "0.3"}


def test_it_returns_a_card_0_3_clients_read_to_0_3_callers(caller: Caller, vault: Agent) -> None:
    card = caller.result("vault", V03, "card")

    legacy = v03.AgentCard.model_validate(card)
    assert legacy.url == "http://testserver/agents/vault/jsonrpc/"
    assert [s.id for s in legacy.skills] == ["vault-skill-0", "vault-secret"]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_answers_not_configured_for_an_agent_without_an_extended_card(
    caller: Caller, echo: Agent, version: str
) -> None:
    error = caller.error("echo", version, "card")

    assert error["code"] == -32007
    if version == V1:
        assert error_info(error)["reason"] == "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_callers_without_a_key(anonymous: Caller, vault: Agent, version: str) -> None:
    response = anonymous.rpc("vault", version, "card")

    assert response.status_code == 401
    assert "X-API-Key" in response["WWW-Authenticate"]
    assert response["WWW-Authenticate"] == 'ApiKey realm="a2a-hub", header="X-API-Key"'
    assert "vault-secret" not in response.content.decode()


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_wrong_keys(impostor: Caller, vault: Agent, version: str) -> None:
    assert impostor.rpc("vault", version, "card").status_code == 401


@pytest.mark.parametrize("version", VERSIONS)
def test_it_needs_credentials_even_where_the_agent_is_open(anonymous: Caller, version: str) -> None:
    make_agent("open-vault", extended_card=True)

    response = anonymous.rpc("open-vault", version, "card")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'ApiKey realm="a2a-hub", header="X-API-Key"'


def test_it_refuses_invalid_params_naming_the_field(caller: Caller, vault: Agent) -> None:
    error = caller.error("vault", V1, "card", {"tenant": 5})

    assert error["code"] == -32602
    assert field_of(error, V1) == "tenant"
    assert error["message"].startswith("Invalid params: tenant: ")  # then the parser's words


def test_a_host_the_hub_does_not_serve_is_a_bad_request_in_both_bindings(
    caller: Caller, vault: Agent
) -> None:
    # The card names the hub's URL as the request reached it, so the Host must be one it serves.
    headers = {"Host": "elsewhere.example"}

    rpc = caller.rpc("vault", V1, "card", headers=headers)
    rest = caller.client.get("/agents/vault/rest/extendedAgentCard",
                             headers=request_headers(V1, caller.key, headers))  # fmt: skip

    assert rpc.json()["error"]["code"] == -32600
    assert "'elsewhere.example'" in rpc.json()["error"]["message"]
    assert rest.status_code == 400
    assert "(ALLOWED_HOSTS)" in rest.json()["error"]["message"]
