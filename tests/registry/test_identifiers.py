"""A registered agent's AI Catalog identifier: the one its publisher gave (`?identifier=`,
or beside a `cardUrl`) is kept exactly, never changed and never shared; without one the hub
names it under its own, non-`urn:air` scheme, since it does not publish the agent."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from tests.registry.catalogs import agent_entries
from tests.registry.conftest import CARD_V1, CardServer, Registrar

pytestmark = pytest.mark.django_db

GIVEN = "urn:air:publisher.example:a2a:translator"


def catalog_identifiers(client: Client) -> list[str]:
    entries = agent_entries(client.get("/.well-known/ai-catalog.json").json())
    return [entry["identifier"] for entry in entries]


def test_the_publishers_identifier_is_listed_exactly(owner: Registrar, client: Client) -> None:
    response = owner.register(CARD_V1, f"?identifier={quote(GIVEN)}")

    assert response.status_code == 201, response.content
    assert catalog_identifiers(client) == [GIVEN]
    assert owner.get(response.json()["agentId"]).json()["identifier"] == GIVEN


def test_a_card_url_registration_takes_the_identifier_beside_it(
    owner: Registrar, client: Client, card_server: CardServer
) -> None:
    response = owner.register({"cardUrl": card_server.url, "identifier": GIVEN})

    assert response.status_code == 201, response.content
    assert catalog_identifiers(client) == [GIVEN]


def test_without_one_the_hub_names_it_outside_urn_air(owner: Registrar, client: Client) -> None:
    agent_id = owner.register(CARD_V1).json()["agentId"]

    assert catalog_identifiers(client) == [f"urn:a2a-hub:testserver:agent:{agent_id}"]


def test_renewing_with_the_same_identifier_keeps_it_and_another_is_refused(
    owner: Registrar, client: Client
) -> None:
    agent_id = owner.register(CARD_V1, f"?identifier={quote(GIVEN)}").json()["agentId"]

    again = owner.register(CARD_V1, f"?identifier={quote(GIVEN)}")
    other = owner.register(CARD_V1, "?identifier=urn:air:publisher.example:a2a:other")

    assert again.status_code == 200
    assert other.status_code == 409 and other.json()["error"]["field"] == "identifier"
    assert catalog_identifiers(client) == [GIVEN]
    assert owner.get(agent_id).json()["identifier"] == GIVEN


def test_another_agent_may_not_take_a_listed_identifier(owner: Registrar) -> None:
    owner.register(CARD_V1, f"?identifier={quote(GIVEN)}")

    second = owner.register(CARD_V1, f"?agentId=second&identifier={quote(GIVEN)}")

    assert second.status_code == 409 and second.json()["error"]["field"] == "identifier"


@pytest.mark.parametrize("bad", ["not a uri", "no-scheme", "urn:" + "x" * 600])
def test_an_identifier_that_is_not_an_absolute_uri_is_refused(owner: Registrar, bad: Any) -> None:
    response = owner.register(CARD_V1, f"?identifier={quote(bad)}")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "identifier"
