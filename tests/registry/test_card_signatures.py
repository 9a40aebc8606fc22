"""Registering a signed card: the answer, the registration's entry and the admin say whether
the card is verified, by which key and from where, or why not; with
CARD_SIGNATURES_REQUIRED the registry refuses unsigned and invalid cards, naming why.

The publisher (`publisher`, tests/conftest.py) is a 127.0.0.1 site serving its JWKS (and its
card, for card-URL registrations); a card sent in the body names an interface on that site,
whose origin is where its keys are read.

Personas: `owner` (tests/registry/conftest.py) registers; `anonymous` reads entries;
`operator_client` reads the admin.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from agents.models import Agent
from tests.factories.signed_cards import PUBLISHER, STRANGER, Site, make_key, signed, site, tampered
from tests.registry.conftest import CARD_V1, Registrar

pytestmark = pytest.mark.django_db


def card_of(publisher: Site) -> dict[str, Any]:
    """CARD_V1, answering at the publisher's origin."""
    document = copy.deepcopy(CARD_V1)
    document["supportedInterfaces"][0]["url"] = publisher.url("/a2a")
    return document


def test_a_card_signed_by_its_origins_key_registers_as_verified(
    owner: Registrar, publisher: Site, anonymous: Registrar
) -> None:
    response = owner.register(signed(card_of(publisher), PUBLISHER))
    assert response.status_code == 201
    signature = response.json()["cardSignature"]
    assert (signature["status"], signature["kid"], signature["keySource"]) == (
        "verified", "publisher-1", "origin",
    )  # fmt: skip
    entry = anonymous.get("translator").json()
    assert entry["cardSignature"]["status"] == "verified"
    assert entry["cardSignature"]["checkedAt"].endswith("Z")
    assert catalog_entry("translator")["cardSignature"] == {
        "status": "verified", "kid": "publisher-1", "keySource": "origin",
    }  # fmt: skip


def test_a_card_url_registration_reads_keys_at_the_card_urls_origin(
    owner: Registrar, publisher: Site
) -> None:
    url = publisher.serve("/.well-known/agent-card.json", signed(CARD_V1, PUBLISHER))
    response = owner.register({"cardUrl": url})
    assert response.status_code == 201
    assert response.json()["cardSignature"]["status"] == "verified"


def test_a_key_the_operator_trusts_verifies_a_card_in_the_body(
    owner: Registrar, publisher: Site, settings: Any
) -> None:
    friend = make_key("friend-1")
    settings.TRUSTED_CARD_KEYS = [friend.public]
    response = owner.register(signed(card_of(publisher), friend))
    assert response.json()["cardSignature"]["keySource"] == "trusted"


def test_an_unsigned_card_registers_as_unsigned(owner: Registrar, publisher: Site) -> None:
    response = owner.register(card_of(publisher))
    assert response.status_code == 201
    assert response.json()["cardSignature"] == {
        "status": "unsigned", "kid": "", "keySource": "",
        "reason": "The card has no signatures.",
        "checkedAt": response.json()["cardSignature"]["checkedAt"],
    }  # fmt: skip


def test_a_tampered_card_registers_as_invalid_with_the_reason(
    owner: Registrar, publisher: Site, anonymous: Registrar
) -> None:
    owner.register(tampered(signed(card_of(publisher), PUBLISHER)))
    signature = anonymous.get("translator").json()["cardSignature"]
    assert signature["status"] == "invalid"
    assert "does not match the card" in signature["reason"]
    listed = catalog_entry("translator")["cardSignature"]
    assert listed["status"] == "invalid" and "does not match the card" in listed["reason"]


def catalog_entry(slug: str) -> dict[str, Any]:
    """The AI Catalog's entry of a registered agent, as anyone reads it."""
    catalog = Client().get("/.well-known/ai-catalog.json").json()
    [entry] = [
        e
        for e in catalog["entries"]
        if e["url"].endswith(f"/agents/{slug}/.well-known/agent-card.json")
    ]
    return dict(entry)


def test_a_card_signed_by_an_unknown_key_registers_as_invalid(
    owner: Registrar, publisher: Site
) -> None:
    signature = owner.register(signed(card_of(publisher), STRANGER)).json()["cardSignature"]
    assert signature["status"] == "invalid" and "'stranger-1'" in signature["reason"]


def test_a_jku_elsewhere_is_not_fetched_and_the_card_is_invalid(
    owner: Registrar, publisher: Site
) -> None:
    with site() as elsewhere:
        jku = elsewhere.serve("/jwks.json", STRANGER.jwks)
        response = owner.register(signed(card_of(publisher), STRANGER, jku=jku))
        assert elsewhere.asked == []
    signature = response.json()["cardSignature"]
    assert signature["status"] == "invalid" and "is not on the card's origin" in signature["reason"]


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: card_of(p), "the card is not signed"),
        (lambda p: tampered(signed(card_of(p), PUBLISHER)), "signature is invalid"),
        (lambda p: signed(card_of(p), STRANGER), "signature is invalid"),
    ],
    ids=["unsigned", "tampered", "wrong-key"],
)
def test_required_signatures_refuse_the_card_with_the_registrys_error(
    owner: Registrar, publisher: Site, settings: Any, make: Any, why: str
) -> None:
    settings.CARD_SIGNATURES_REQUIRED = True
    response = owner.register(make(publisher))
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["status"], error["field"]) == ("INVALID_ARGUMENT", "signatures")
    assert "CARD_SIGNATURES_REQUIRED" in error["message"] and why in error["message"]
    assert not Agent.objects.filter(slug="translator").exists()


def test_required_signatures_take_a_verified_card(
    owner: Registrar, publisher: Site, settings: Any
) -> None:
    settings.CARD_SIGNATURES_REQUIRED = True
    assert owner.register(signed(card_of(publisher), PUBLISHER)).status_code == 201


def test_replacing_the_card_checks_the_new_one(owner: Registrar, publisher: Site) -> None:
    owner.register(signed(card_of(publisher), PUBLISHER))
    response = owner.put("translator", card_of(publisher))
    assert response.status_code == 200
    assert response.json()["cardSignature"]["status"] == "unsigned"
    assert Agent.objects.get(slug="translator").card_signature == "unsigned"


def test_the_admin_shows_the_signature_of_each_registration(
    owner: Registrar, publisher: Site, operator_client: Client
) -> None:
    owner.register(tampered(signed(card_of(publisher), PUBLISHER)))
    listing = operator_client.get("/admin/registry/registration/").content.decode()
    assert "invalid" in listing
    agents = operator_client.get("/admin/agents/agent/?card_signature=invalid").content.decode()
    assert "translator" in agents


def test_a_heartbeat_that_finds_the_card_changed_checks_it_again(
    owner: Registrar, publisher: Site, anonymous: Registrar
) -> None:
    url = publisher.serve("/.well-known/agent-card.json", signed(CARD_V1, PUBLISHER))
    owner.register({"cardUrl": url})
    publisher.serve("/.well-known/agent-card.json", tampered(signed(CARD_V1, PUBLISHER)))
    assert owner.heartbeat("translator").status_code == 200
    assert anonymous.get("translator").json()["cardSignature"]["status"] == "invalid"


def test_a_heartbeat_that_finds_an_unsigned_card_is_refused_when_signatures_are_required(
    owner: Registrar, publisher: Site, settings: Any
) -> None:
    url = publisher.serve("/.well-known/agent-card.json", signed(CARD_V1, PUBLISHER))
    owner.register({"cardUrl": url})
    settings.CARD_SIGNATURES_REQUIRED = True
    publisher.serve("/.well-known/agent-card.json", CARD_V1 | {"version": "2.1.0"})
    response = owner.heartbeat("translator")
    assert response.status_code == 400 and response.json()["error"]["field"] == "signatures"
    assert Agent.objects.get(slug="translator").version == "2.0.0"
