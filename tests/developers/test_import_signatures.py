"""Importing (and re-syncing) an agent from a signed card: the agent records whether the card
is verified, by which key and from where, or why not; with CARD_SIGNATURES_REQUIRED the
import page refuses unsigned and invalid cards with a form error that says why.

The developer pages' agent form checks an `a2a-remote` agent's card on save too, while its
live preview, which judges the form at each change, reads no card.

The publisher (`publisher`, tests/conftest.py) is a 127.0.0.1 site serving its card and its JWKS.

Personas: `dev_client` (tests/developers/conftest.py) imports, re-syncs and registers its
agents.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Agent
from tests.developers.test_settings_forms import page_data
from tests.factories.signed_cards import PUBLISHER, STRANGER, Site, signed, site, tampered
from tests.registry.conftest import CARD_V1

pytestmark = pytest.mark.django_db

CARD_PATH = "/.well-known/agent-card.json"


def import_card(client: Client, url: str) -> Any:
    return client.post(reverse("developers:agent-import"), {"card_url": url, "slug": "words"})


def test_an_imported_card_signed_by_its_origins_key_is_verified(
    dev_client: Client, publisher: Site
) -> None:
    url = publisher.serve(CARD_PATH, signed(CARD_V1, PUBLISHER))
    assert import_card(dev_client, url).status_code == 302
    agent = Agent.objects.get(slug="words")
    assert (agent.card_signature, agent.card_signature_kid, agent.card_signature_key_source) == (
        "verified", "publisher-1", "origin",
    )  # fmt: skip
    assert agent.card_checked_at is not None


@pytest.mark.parametrize(
    ("make", "status", "reason"),
    [
        (lambda: CARD_V1, "unsigned", "no signatures"),
        (lambda: tampered(signed(CARD_V1, PUBLISHER)), "invalid", "does not match the card"),
        (lambda: signed(CARD_V1, STRANGER), "invalid", "'stranger-1'"),
    ],
    ids=["unsigned", "tampered", "wrong-key"],
)
def test_an_imported_card_that_is_not_verified_says_why(
    dev_client: Client, publisher: Site, make: Any, status: str, reason: str
) -> None:
    url = publisher.serve(CARD_PATH, make())
    assert import_card(dev_client, url).status_code == 302
    agent = Agent.objects.get(slug="words")
    assert agent.card_signature == status and reason in agent.card_signature_reason
    assert agent.card_signature_kid == ""


def test_a_jku_elsewhere_is_not_fetched_on_import(dev_client: Client, publisher: Site) -> None:
    with site() as elsewhere:
        jku = elsewhere.serve("/jwks.json", STRANGER.jwks)
        import_card(dev_client, publisher.serve(CARD_PATH, signed(CARD_V1, STRANGER, jku=jku)))
        assert elsewhere.asked == []
    agent = Agent.objects.get(slug="words")
    assert agent.card_signature == "invalid"
    assert "is not on the card's origin" in agent.card_signature_reason


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: CARD_V1, "the card is not signed"),
        (lambda: tampered(signed(CARD_V1, PUBLISHER)), "signature is invalid"),
        (lambda: signed(CARD_V1, STRANGER), "signature is invalid"),
    ],
    ids=["unsigned", "tampered", "wrong-key"],
)
def test_required_signatures_refuse_the_import_with_a_form_error(
    dev_client: Client, publisher: Site, settings: Any, make: Any, why: str
) -> None:
    settings.CARD_SIGNATURES_REQUIRED = True
    response = import_card(dev_client, publisher.serve(CARD_PATH, make()))
    assert response.status_code == 400
    errors = " ".join(response.context["form"].errors["card_url"])
    assert "CARD_SIGNATURES_REQUIRED" in errors and why in errors
    assert not Agent.objects.filter(slug="words").exists()


def test_required_signatures_take_a_verified_import(
    dev_client: Client, publisher: Site, settings: Any
) -> None:
    settings.CARD_SIGNATURES_REQUIRED = True
    url = publisher.serve(CARD_PATH, signed(CARD_V1, PUBLISHER))
    assert import_card(dev_client, url).status_code == 302


def test_a_resync_checks_the_card_again(dev_client: Client, publisher: Site) -> None:
    url = publisher.serve(CARD_PATH, signed(CARD_V1, PUBLISHER))
    import_card(dev_client, url)
    publisher.serve(CARD_PATH, tampered(signed(CARD_V1, PUBLISHER)))
    dev_client.post(reverse("developers:resync", kwargs={"slug": "words"}))
    assert Agent.objects.get(slug="words").card_signature == "invalid"


def test_a_resync_to_an_unsigned_card_is_refused_when_signatures_are_required(
    dev_client: Client, publisher: Site, settings: Any
) -> None:
    url = publisher.serve(CARD_PATH, signed(CARD_V1, PUBLISHER))
    import_card(dev_client, url)
    settings.CARD_SIGNATURES_REQUIRED = True
    publisher.serve(CARD_PATH, CARD_V1 | {"description": "Changed, unsigned."})
    page = dev_client.post(
        reverse("developers:resync", kwargs={"slug": "words"}), follow=True
    ).content.decode()
    assert "Nothing was changed" in page and "the card is not signed" in page
    agent = Agent.objects.get(slug="words")
    assert agent.card_signature == "verified" and agent.description != "Changed, unsigned."


def test_the_agents_page_shows_the_cards_signature(dev_client: Client, publisher: Site) -> None:
    import_card(dev_client, publisher.serve(CARD_PATH, signed(CARD_V1, STRANGER)))
    page = dev_client.get(reverse("developers:agent", kwargs={"slug": "words"})).content.decode()
    assert "Card signature" in page and "invalid" in page
    assert "no key at" in page and "stranger-1" in page


def test_an_agent_registered_on_the_developer_pages_has_its_remote_card_checked(
    dev_client: Client, publisher: Site, settings: Any
) -> None:
    url = publisher.serve(CARD_PATH, signed(CARD_V1, STRANGER))
    data = page_data("a2a-remote", {"card_url": url, "timeout": "60"})
    settings.CARD_SIGNATURES_REQUIRED = True
    response = dev_client.post(reverse("developers:agent-new"), data)
    assert response.status_code == 400
    assert "'stranger-1'" in " ".join(response.context["form"].errors["executor_settings"])
    settings.CARD_SIGNATURES_REQUIRED = False
    assert dev_client.post(reverse("developers:agent-new"), data).status_code == 302
    assert Agent.objects.get(slug="weather").card_signature == "invalid"


def test_the_live_preview_reads_no_card(dev_client: Client, publisher: Site) -> None:
    url = publisher.serve(CARD_PATH, signed(CARD_V1, PUBLISHER))
    data = page_data("a2a-remote", {"card_url": url, "timeout": "60"})
    assert dev_client.post(reverse("developers:preview-new"), data).json()["ok"]
    assert publisher.asked == []
