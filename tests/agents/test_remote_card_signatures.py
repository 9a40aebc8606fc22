"""An `a2a-remote` agent saved in the admin has its remote card's signature checked: the agent
records verified, unsigned or invalid (and by which key, or why); with
CARD_SIGNATURES_REQUIRED the form refuses a card that is not verified, next to its settings.

The publisher (`publisher`, tests/conftest.py) is a 127.0.0.1 site serving its card and its JWKS.

Personas: `operator_client` (tests/conftest.py) adds and edits agents in the admin.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Agent
from tests.factories.agent_forms import add_agent, agent_form
from tests.factories.signed_cards import PUBLISHER, STRANGER, Site, signed, site, tampered
from tests.registry.conftest import CARD_V1

pytestmark = pytest.mark.django_db

CARD_PATH = "/.well-known/agent-card.json"


def remote_fields(url: str) -> dict[str, str]:
    return {"executor_kind": "a2a-remote", "settings-a2a-remote-card_url": url,
            "settings-a2a-remote-timeout": "60"}  # fmt: skip


def settings_errors(response: Any) -> str:
    return " ".join(response.context["adminform"].form.errors.get("executor_settings", []))


def test_a_remote_agent_whose_card_is_signed_by_its_origins_key_is_saved_as_verified(
    operator_client: Client, publisher: Site
) -> None:
    url = publisher.serve(CARD_PATH, signed(CARD_V1, PUBLISHER))
    assert add_agent(operator_client, **remote_fields(url)).status_code == 302
    agent = Agent.objects.get(slug="formed")
    assert (agent.card_signature, agent.card_signature_kid, agent.card_signature_key_source) == (
        "verified", "publisher-1", "origin",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("make", "status", "reason"),
    [
        (lambda: CARD_V1, "unsigned", "no signatures"),
        (lambda: tampered(signed(CARD_V1, PUBLISHER)), "invalid", "does not match the card"),
        (lambda: signed(CARD_V1, STRANGER), "invalid", "'stranger-1'"),
    ],
    ids=["unsigned", "tampered", "wrong-key"],
)
def test_a_remote_agent_whose_card_is_not_verified_is_saved_saying_why(
    operator_client: Client, publisher: Site, make: Any, status: str, reason: str
) -> None:
    url = publisher.serve(CARD_PATH, make())
    assert add_agent(operator_client, **remote_fields(url)).status_code == 302
    agent = Agent.objects.get(slug="formed")
    assert agent.card_signature == status and reason in agent.card_signature_reason


def test_a_jku_elsewhere_is_not_fetched_on_save(operator_client: Client, publisher: Site) -> None:
    with site() as elsewhere:
        jku = elsewhere.serve("/jwks.json", STRANGER.jwks)
        url = publisher.serve(CARD_PATH, signed(CARD_V1, STRANGER, jku=jku))
        add_agent(operator_client, **remote_fields(url))
        assert elsewhere.asked == []
    assert Agent.objects.get(slug="formed").card_signature == "invalid"


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: CARD_V1, "the card is not signed"),
        (lambda: tampered(signed(CARD_V1, PUBLISHER)), "signature is invalid"),
        (lambda: signed(CARD_V1, STRANGER), "signature is invalid"),
    ],
    ids=["unsigned", "tampered", "wrong-key"],
)
def test_required_signatures_refuse_the_save_next_to_the_settings(
    operator_client: Client, publisher: Site, settings: Any, make: Any, why: str
) -> None:
    settings.CARD_SIGNATURES_REQUIRED = True
    response = add_agent(operator_client, **remote_fields(publisher.serve(CARD_PATH, make())))
    assert response.status_code == 200
    assert "CARD_SIGNATURES_REQUIRED" in settings_errors(response)
    assert why in settings_errors(response)
    assert not Agent.objects.filter(slug="formed").exists()


def test_required_signatures_refuse_a_card_that_cannot_be_read(
    operator_client: Client, publisher: Site, settings: Any
) -> None:
    settings.CARD_SIGNATURES_REQUIRED = True
    response = add_agent(operator_client, **remote_fields(publisher.url("/missing.json")))
    assert "could not be checked" in settings_errors(response)
    assert "HTTP 404" in settings_errors(response)


def test_saving_again_with_the_same_card_url_does_not_read_the_card_again(
    operator_client: Client, publisher: Site
) -> None:
    url = publisher.serve(CARD_PATH, signed(CARD_V1, PUBLISHER))
    add_agent(operator_client, **remote_fields(url))
    read = len(publisher.asked)
    agent = Agent.objects.get(slug="formed")
    change = reverse("admin:agents_agent_change", args=[agent.pk])
    skill = agent.skills.get()
    edited = agent_form(
        **remote_fields(url), name="Renamed", **{
            "skills-INITIAL_FORMS": "1", "skills-0-id": str(skill.pk),
            "skills-0-skill_id": skill.skill_id, "skills-0-name": skill.name,
            "skills-0-description": skill.description, "skills-0-tags": "x",
        },
    )  # fmt: skip
    assert operator_client.post(change, edited).status_code == 302
    assert len(publisher.asked) == read
    agent.refresh_from_db()
    assert (agent.name, agent.card_signature) == ("Renamed", "verified")


def test_an_agent_of_another_kind_has_no_card_to_check(operator_client: Client) -> None:
    assert add_agent(operator_client).status_code == 302
    assert Agent.objects.get(slug="formed").card_signature == ""
