"""What the hub finds when it checks a card's signature: which key verified it and where that
key came from, or why the card is unsigned or invalid. The publisher is a 127.0.0.1 site
serving its card and JWKS (opened with OUTBOUND_ALLOWED_HOSTS, as a developer would)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.client.card_resolver import parse_agent_card
from django.core.exceptions import ImproperlyConfigured

from a2ahub.settings import env_jwks
from agents import card_trust
from tests.factories.signed_cards import (
    PUBLISHER,
    STRANGER,
    Site,
    make_key,
    publishing,
    signed,
    site,
    tampered,
)
from tests.registry.conftest import CARD_V1

OPERATORS_FRIEND = make_key("friend-1")


@pytest.fixture
def publisher(settings: Any) -> Iterator[Site]:
    with publishing(settings, jwks=False) as served:
        yield served


def check(document: dict[str, Any], origin: Site) -> card_trust.CardTrust:
    return card_trust.verify(parse_agent_card(document), origin.url("/card.json"))


def test_a_card_signed_by_a_key_at_its_origins_well_known_jwks_is_verified(
    publisher: Site,
) -> None:
    publisher.serve("/.well-known/jwks.json", PUBLISHER.jwks)
    trust = check(signed(CARD_V1, PUBLISHER), publisher)
    assert (trust.status, trust.kid, trust.key_source, trust.reason) == (
        "verified", "publisher-1", "origin", "",
    )  # fmt: skip


def test_a_jku_on_the_cards_own_origin_is_where_its_keys_are_read(publisher: Site) -> None:
    jku = publisher.serve("/keys/agent.jwks", PUBLISHER.jwks)
    trust = check(signed(CARD_V1, PUBLISHER, jku=jku), publisher)
    assert trust.verified and trust.key_source == "origin"
    assert publisher.asked == ["/keys/agent.jwks"]


def test_a_key_the_operator_trusts_verifies_without_reading_the_origin(
    publisher: Site, settings: Any
) -> None:
    settings.TRUSTED_CARD_KEYS = [OPERATORS_FRIEND.public]
    trust = check(signed(CARD_V1, OPERATORS_FRIEND), publisher)
    assert (trust.status, trust.kid, trust.key_source) == ("verified", "friend-1", "trusted")
    assert publisher.asked == []


def test_a_card_without_signatures_is_unsigned(publisher: Site) -> None:
    trust = check(CARD_V1, publisher)
    assert trust.status == "unsigned" and trust.kid == ""


def test_a_card_changed_after_signing_is_invalid_and_says_so(publisher: Site) -> None:
    publisher.serve("/.well-known/jwks.json", PUBLISHER.jwks)
    trust = check(tampered(signed(CARD_V1, PUBLISHER)), publisher)
    assert trust.status == "invalid" and trust.kid == ""
    assert "'publisher-1' (origin) does not match the card" in trust.reason


def test_a_signature_by_a_key_nobody_publishes_is_invalid(publisher: Site) -> None:
    publisher.serve("/.well-known/jwks.json", PUBLISHER.jwks)
    trust = check(signed(CARD_V1, STRANGER), publisher)
    assert trust.status == "invalid"
    assert f"no key at {publisher.origin}/.well-known/jwks.json has the kid 'stranger-1'" in (
        trust.reason
    )


def test_a_signature_naming_a_published_kid_but_made_with_another_key_is_invalid(
    publisher: Site,
) -> None:
    impostor = make_key("publisher-1")  # the publisher's kid, someone else's key
    publisher.serve("/.well-known/jwks.json", PUBLISHER.jwks)
    trust = check(signed(CARD_V1, impostor), publisher)
    assert trust.status == "invalid" and "does not match the card" in trust.reason


def test_a_jku_on_another_origin_is_never_fetched(publisher: Site) -> None:
    with site() as elsewhere:
        jku = elsewhere.serve("/jwks.json", STRANGER.jwks)
        trust = check(signed(CARD_V1, STRANGER, jku=jku), publisher)
        assert elsewhere.asked == []
    assert trust.status == "invalid"
    assert f"jku '{jku}' is not on the card's origin {publisher.origin}" in trust.reason


def test_an_origin_without_a_jwks_makes_a_signed_card_invalid(publisher: Site) -> None:
    trust = check(signed(CARD_V1, PUBLISHER), publisher)
    assert trust.status == "invalid"
    assert "jwks.json answered HTTP 404" in trust.reason


def test_a_jwks_on_a_private_address_is_not_read(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    settings.TRUSTED_CARD_KEYS = []
    card = parse_agent_card(signed(CARD_V1, PUBLISHER))
    trust = card_trust.verify(card, "http://127.0.0.1:9/card.json")
    assert trust.status == "invalid" and "could not be read" in trust.reason


def test_one_good_signature_among_bad_ones_verifies(publisher: Site) -> None:
    publisher.serve("/.well-known/jwks.json", PUBLISHER.jwks)
    bad = signed(CARD_V1, STRANGER)["signatures"]
    document = signed(CARD_V1, PUBLISHER)
    document["signatures"] = bad + document["signatures"]
    trust = check(document, publisher)
    assert (trust.status, trust.kid) == ("verified", "publisher-1")


def test_required_signatures_refuse_unsigned_and_invalid_cards_with_the_reason(
    settings: Any,
) -> None:
    settings.CARD_SIGNATURES_REQUIRED = True
    card_trust.require(card_trust.CardTrust("verified", "k", "trusted"))
    with pytest.raises(card_trust.UntrustedCard, match="the card is not signed"):
        card_trust.require(card_trust.CardTrust("unsigned", reason="The card has no signatures."))
    with pytest.raises(card_trust.UntrustedCard, match=r"signature is invalid\. No signature"):
        card_trust.require(card_trust.CardTrust("invalid", reason="No signature verifies: x."))
    settings.CARD_SIGNATURES_REQUIRED = False
    card_trust.require(card_trust.CardTrust("invalid", reason="No signature verifies: x."))


def test_trusted_keys_are_read_from_json_or_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRUSTED_CARD_KEYS", json.dumps(PUBLISHER.jwks))
    assert env_jwks("TRUSTED_CARD_KEYS") == [PUBLISHER.public]
    keys = tmp_path / "trusted.jwks"
    keys.write_text(json.dumps({"keys": [PUBLISHER.public, OPERATORS_FRIEND.public]}))
    monkeypatch.setenv("TRUSTED_CARD_KEYS", str(keys))
    assert [k["kid"] for k in env_jwks("TRUSTED_CARD_KEYS")] == ["publisher-1", "friend-1"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('{"keys": [{"kty": "EC"}]}', "needs a kty and a kid"),
        ('{"keys": 5}', "must be a JWKS"),
        ("/nowhere/trusted.jwks", "cannot read the JWKS file"),
    ],
)
def test_bad_trusted_keys_stop_start_up(
    monkeypatch: pytest.MonkeyPatch, value: str, problem: str
) -> None:
    monkeypatch.setenv("TRUSTED_CARD_KEYS", value)
    with pytest.raises(ImproperlyConfigured, match=problem):
        env_jwks("TRUSTED_CARD_KEYS")


def test_a_private_key_among_the_trusted_ones_stops_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    private = json.loads(json.dumps(PUBLISHER.public))
    private["d"] = "secret"
    monkeypatch.setenv("TRUSTED_CARD_KEYS", json.dumps({"keys": [private]}))
    with pytest.raises(ImproperlyConfigured, match="private"):
        env_jwks("TRUSTED_CARD_KEYS")


def test_a_broken_key_at_the_origin_makes_the_card_invalid_not_an_error(publisher: Site) -> None:
    broken = PUBLISHER.public | {"x": "not base64 at all!"}
    publisher.serve("/.well-known/jwks.json", {"keys": [broken]})
    trust = check(signed(CARD_V1, PUBLISHER), publisher)
    assert trust.status == "invalid" and "cannot be used" in trust.reason


def test_a_card_with_many_signatures_makes_few_requests(publisher: Site) -> None:
    document = signed(CARD_V1, PUBLISHER)
    for n in range(5):
        jku = publisher.url(f"/keys-{n}.json")
        document["signatures"] += signed(CARD_V1, STRANGER, jku=jku)["signatures"]
    document["signatures"].reverse()  # the good one last
    trust = check(document, publisher)
    assert len(publisher.asked) == card_trust.MAX_JWKS_READS
    assert trust.status == "invalid" and "is not read" in trust.reason
