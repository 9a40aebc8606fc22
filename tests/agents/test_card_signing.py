"""Signed Agent Cards (PROTOCOL.md section 9): every served card carries a signature the
official SDK's verifier accepts with the keys at /.well-known/jwks.json; a changed card fails
it; a rotation leaves cards signed before it verifiable; an agent may opt out."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import InvalidSignaturesError, NoSignatureError
from django.test import Client

from a2ahub import signing
from tests.factories.agents import SECURED, make_agent
from tests.factories.signatures import KeyLookups, card_verifier

pytestmark = pytest.mark.django_db

CARD = "/agents/{slug}/.well-known/agent-card.json"


def card_of(client: Client, slug: str, **headers: str) -> pb.AgentCard:
    return parse_agent_card(client.get(CARD.format(slug=slug), headers=headers).json())


@pytest.mark.parametrize("headers", [{}, {"A2A-Version": "1.0"}], ids=["union", "1.0"])
def test_the_served_card_verifies_with_the_sdk_and_the_published_keys(
    client: Client, headers: dict[str, str]
) -> None:
    make_agent("signed", skills=2, **SECURED)
    seen: KeyLookups = []

    card = card_of(client, "signed", **headers)
    card_verifier(client, seen)(card)

    assert len(card.signatures) == 1
    assert seen == [(signing.current_key().kid, "http://testserver/.well-known/jwks.json")]


def test_keys_read_before_the_first_card_verify_it(client: Client) -> None:
    make_agent("signed")
    verify = card_verifier(client)  # a new hub: no card or delivery has been signed yet

    verify(card_of(client, "signed"))


@pytest.mark.parametrize(
    "change",
    [
        lambda card: setattr(card, "description", card.description + "!"),
        lambda card: card.skills.pop(),
        lambda card: setattr(card.supported_interfaces[0], "url", "https://evil.example/"),
    ],
    ids=["description", "a skill removed", "an endpoint moved"],
)
def test_a_changed_card_fails_verification(client: Client, change: Any) -> None:
    make_agent("signed", skills=2)
    card = card_of(client, "signed")

    change(card)

    with pytest.raises(InvalidSignaturesError):
        card_verifier(client)(card)


def test_a_card_signed_before_a_rotation_still_verifies_after_it(client: Client) -> None:
    make_agent("signed")
    before = card_of(client, "signed")
    old_tag = client.get(CARD.format(slug="signed"))["ETag"]

    new_key = signing.rotate()
    after = card_of(client, "signed")

    card_verifier(client)(before)  # the retired key is still published
    card_verifier(client)(after)
    assert after.signatures[0].protected != before.signatures[0].protected  # the new kid
    assert client.get(CARD.format(slug="signed"))["ETag"] != old_tag
    published = client.get("/.well-known/jwks.json").json()["keys"]
    assert new_key.kid in {key["kid"] for key in published}


def test_reading_a_card_again_gives_the_same_document_and_a_304(client: Client) -> None:
    make_agent("signed")
    first = client.get(CARD.format(slug="signed"))
    second = client.get(CARD.format(slug="signed"))

    assert first.json() == second.json()
    again = client.get(CARD.format(slug="signed"), headers={"If-None-Match": first["ETag"]})
    assert again.status_code == 304
    # "*" matches any current representation (RFC 9110 13.1.2).
    assert client.get(CARD.format(slug="signed"), headers={"If-None-Match": "*"}).status_code == 304


def test_a_card_written_to_is_a_405_naming_get() -> None:
    make_agent("signed")
    # Django's test client skips the CSRF check unless asked: this one makes it, as a browser's
    # or a script's POST would meet it.
    posted = Client(enforce_csrf_checks=True).post(CARD.format(slug="signed"), {})

    assert posted.status_code == 405
    assert posted["Allow"] == "GET"


def test_an_agent_that_opts_out_serves_an_unsigned_card(client: Client) -> None:
    make_agent("plain", sign_card=False)

    card = card_of(client, "plain")

    assert not card.signatures
    with pytest.raises(NoSignatureError):
        card_verifier(client)(card)
