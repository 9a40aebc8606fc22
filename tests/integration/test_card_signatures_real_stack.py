"""Signed cards at the registry of a served hub (PostgreSQL, Redis, a web process and a worker)
that requires signatures (CARD_SIGNATURES_REQUIRED) and trusts one key from a JWKS file
(TRUSTED_CARD_KEYS): a publisher on 127.0.0.1 serves its card and JWKS; the hub verifies the
card by the key at the card's origin or by the trusted key, and refuses unsigned, tampered and
wrong-key cards, and a jku on another origin (which it never fetches), with the registry's error.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.factories.signed_cards import Site, make_key, signed, site, tampered
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub
from tests.integration.test_registry_real_stack import issue_key
from tests.registry.conftest import CARD_V1

pytestmark = pytest.mark.integration

PUBLISHER = make_key("publisher-1")
FRIEND = make_key("friend-1")  # the operator trusts it
STRANGER = make_key("stranger-1")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    root = tmp_path_factory.mktemp("card-signatures")
    trusted = root / "trusted-card-keys.json"
    trusted.write_text(json.dumps(FRIEND.jwks))
    settings = {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1", "CARD_SIGNATURES_REQUIRED": "true",
                "TRUSTED_CARD_KEYS": str(trusted)}  # fmt: skip
    with own_small_hub("cardsig", root, settings) as running:
        yield running


@pytest.fixture(scope="module")
def key(hub: Hub) -> str:
    return issue_key(hub)


@pytest.fixture
def publisher() -> Iterator[Site]:
    with site() as served:
        served.serve("/.well-known/jwks.json", PUBLISHER.jwks)
        yield served


def card_of(publisher: Site, name: str) -> dict[str, Any]:
    document = copy.deepcopy(CARD_V1) | {"name": name}
    document["supportedInterfaces"][0]["url"] = publisher.url("/a2a")
    return document


def register(hub: Hub, key: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{hub.web_a}/registry/agents", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {key}"})  # fmt: skip


def test_a_card_url_signed_by_its_origins_key_registers_verified(
    hub: Hub, key: str, publisher: Site
) -> None:
    url = publisher.serve(
        "/.well-known/agent-card.json", signed(card_of(publisher, "Origin"), PUBLISHER)
    )
    answer = register(hub, key, {"cardUrl": url})
    assert answer.status_code == 201, answer.text
    entry = httpx.get(f"{hub.web_a}/registry/agents/origin", timeout=10).json()
    signature = entry["cardSignature"]
    assert (signature["status"], signature["kid"], signature["keySource"]) == (
        "verified", "publisher-1", "origin",
    )  # fmt: skip
    assert publisher.asked == ["/.well-known/agent-card.json", "/.well-known/jwks.json"]


def test_a_card_signed_by_the_key_the_operator_trusts_registers_verified(
    hub: Hub, key: str, publisher: Site
) -> None:
    answer = register(hub, key, signed(card_of(publisher, "Friendly"), FRIEND))
    assert answer.status_code == 201, answer.text
    assert answer.json()["cardSignature"]["keySource"] == "trusted"
    assert publisher.asked == []


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: card_of(p, "Bare"), "the card is not signed"),
        (lambda p: tampered(signed(card_of(p, "Changed"), PUBLISHER)), "does not match the card"),
        (lambda p: signed(card_of(p, "Stranger"), STRANGER), "'stranger-1'"),
    ],
    ids=["unsigned", "tampered", "wrong-key"],
)
def test_cards_that_are_not_verified_are_refused(
    hub: Hub, key: str, publisher: Site, make: Any, why: str
) -> None:
    answer = register(hub, key, make(publisher))
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["status"], error["field"]) == ("INVALID_ARGUMENT", "signatures")
    assert "CARD_SIGNATURES_REQUIRED" in error["message"] and why in error["message"]


def test_a_jku_on_another_origin_is_never_fetched(hub: Hub, key: str, publisher: Site) -> None:
    with site() as elsewhere:
        jku = elsewhere.serve("/jwks.json", STRANGER.jwks)
        answer = register(hub, key, signed(card_of(publisher, "Elsewhere"), STRANGER, jku=jku))
        assert elsewhere.asked == []
    assert answer.status_code == 400
    assert "is not on the card's origin" in answer.json()["error"]["message"]
    assert httpx.get(f"{hub.web_a}/registry/agents/elsewhere", timeout=10).status_code == 404
