"""How big a message is, for `a2ahub.big_bodies`: counted without serializing it, and only as
far as the threshold, so the count itself never holds the event loop long."""

from __future__ import annotations

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format
from pytest_django.fixtures import Settings

from a2ahub.big_bodies import MAX_FIELDS, is_big, size_of, size_of_all

THRESHOLD = 1000


@pytest.fixture(autouse=True)
def threshold(settings: Settings) -> None:
    settings.A2A_THREAD_BODY_BYTES = THRESHOLD


def message(*parts: dict[str, object], **fields: object) -> pb.Message:
    body = {"messageId": "m-1", "role": "ROLE_USER", "parts": list(parts), **fields}
    return json_format.ParseDict(body, pb.Message())


def test_a_small_message_is_counted_near_its_serialized_size() -> None:
    small = message({"text": "hello"}, {"data": {"city": "Lyon", "days": [1, 2]}},
                    metadata={"trace": "abc"})  # fmt: skip

    size = size_of(small)

    assert not is_big(size)
    assert 0.5 * small.ByteSize() <= size <= 1.5 * small.ByteSize()


@pytest.mark.parametrize(
    "big",
    [
        message({"text": "x" * 5000}),
        message({"raw": "eHh4" * 2000}),
        message({"text": "hi"}, metadata={"note": "y" * 5000}),
        message({"data": {"deep": {"deeper": ["z" * 5000]}}}),
        message(*({"text": "t" * 100} for _ in range(20))),
    ],
    ids=["text", "raw", "metadata", "nested-data", "many-parts"],
)
def test_a_message_past_the_threshold_anywhere_in_it_is_big(big: pb.Message) -> None:
    assert big.ByteSize() > THRESHOLD
    assert is_big(size_of(big))


def test_a_message_of_more_fields_than_the_walk_takes_is_big_whatever_its_bytes(
    settings: Settings,
) -> None:
    settings.A2A_THREAD_BODY_BYTES = 10**9
    wide = message({"data": list(range(MAX_FIELDS + 1))})

    assert is_big(size_of(wide))


def test_parts_counted_together_are_big_when_their_sum_is() -> None:
    parts = [pb.Part(text="p" * 400) for _ in range(3)]

    assert not is_big(size_of_all(parts[:2]))
    assert is_big(size_of_all(parts))


def test_anything_but_a_message_counts_nothing() -> None:
    assert size_of({"text": "x" * 5000}) == 0
    assert size_of(None) == 0


def test_an_agent_card_with_maps_of_strings_and_of_messages_is_counted() -> None:
    # An extended card holds both kinds of map: OAuth scopes (name to description) and
    # security schemes (name to a message).
    card = json_format.ParseDict(
        {
            "name": "Card",
            "securitySchemes": {
                "oauth": {
                    "oauth2SecurityScheme": {
                        "flows": {
                            "clientCredentials": {
                                "tokenUrl": "https://hub.example/o/token/",
                                "scopes": {"agents:read": "d" * 600, "agents:call": "c" * 600},
                            }
                        }
                    }
                }
            },
            "securityRequirements": [{"schemes": {"oauth": {"list": ["agents:read"]}}}],
        },
        pb.AgentCard(),
    )

    assert is_big(size_of(card))
    card.security_schemes["oauth"].oauth2_security_scheme.flows.client_credentials.scopes.clear()
    assert not is_big(size_of(card))
