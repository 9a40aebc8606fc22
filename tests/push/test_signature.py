"""The signature on every delivery, checked as a receiver would: with nothing but the JWT, the
exact body bytes, and the keys the hub publishes at /.well-known/jwks.json."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest
from django.test import Client
from jwcrypto import jws, jwt
from jwcrypto.common import base64url_decode, base64url_encode

from a2ahub import signing
from agents.models import Agent
from push.models import Delivery
from tests.factories.push import webhook
from tests.factories.versions import V1, VERSIONS
from tests.push.callers import Caller
from tests.push.receiver import Received, Receiver, verified_claims

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("push_settings")]

ISSUER = "https://hub.example.com"


def published(client: Client) -> dict[str, Any]:
    response = client.get("/.well-known/jwks.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    keys: dict[str, Any] = response.json()
    return keys


def header_of(token: str) -> dict[str, Any]:
    parsed = jws.JWS()
    parsed.deserialize(token)
    header: dict[str, Any] = parsed.jose_header
    return header


def deliver_one_task(caller: Caller, receiver: Receiver, version: str = V1) -> list[Received]:
    caller.send("pusher", version, push=webhook(version, receiver.url))
    return receiver.wait_for(4)


@pytest.mark.parametrize("version", VERSIONS)
def test_each_delivery_verifies_with_the_published_keys_and_names_itself(
    caller: Caller, pusher: Agent, receiver: Receiver, client: Client, settings: Any, version: str
) -> None:
    settings.PUBLIC_BASE_URL = ISSUER
    started = int(time.time())

    got = deliver_one_task(caller, receiver, version)
    jwks = published(client)

    for request in got:
        token = request.header("A2A-Push-Signature")
        claims = verified_claims(token, request.body, jwks)
        delivery = Delivery.objects.get(id=claims["jti"])
        assert claims["jti"] == request.header("webhook-id")
        assert claims["task_id"] == str(delivery.config.task_id)
        assert claims["iss"] == ISSUER
        assert started - 5 <= claims["iat"] <= int(time.time()) + 5
        assert claims["exp"] == claims["iat"] + 300
        assert claims["request_body_sha256"] == hashlib.sha256(request.body).hexdigest()
        header = header_of(token)
        assert header["alg"] == "ES256"
        assert header["kid"] in {key["kid"] for key in jwks["keys"]}


def test_each_delivery_names_its_webhook_and_config_and_verifies_for_no_other(
    caller: Caller, pusher: Agent, receiver: Receiver, client: Client
) -> None:
    got = deliver_one_task(caller, receiver)
    keys = published(client)["keys"]

    for request in got:
        token = request.header("A2A-Push-Signature")
        claims = signing.verify_delivery(token, request.body, keys, audience=receiver.url)
        assert claims["aud"] == receiver.url
        assert claims["config_id"] == Delivery.objects.get(id=claims["jti"]).config.config_id
        other = receiver.url.replace("/webhook", "/other-webhook")
        with pytest.raises(signing.SignatureInvalid, match="the signature is for"):
            signing.verify_delivery(token, request.body, keys, audience=other)
    # The body the SDK's clients read is the event alone: no audience, no config in it.
    assert all("aud" not in request.json() for request in got)


def test_a_delivery_whose_body_was_altered_does_not_verify(
    caller: Caller, pusher: Agent, receiver: Receiver, client: Client
) -> None:
    request = deliver_one_task(caller, receiver)[-1]
    token = request.header("A2A-Push-Signature")
    altered = request.body.replace(b"TASK_STATE_COMPLETED", b"TASK_STATE_FAILED")
    jwks = published(client)

    assert altered != request.body
    with pytest.raises(ValueError, match="not the one that was signed"):
        verified_claims(token, altered, jwks)
    with pytest.raises(signing.SignatureInvalid):
        signing.verify_delivery(token, altered, jwks["keys"])


def test_a_signature_whose_claims_were_altered_does_not_verify(
    caller: Caller, pusher: Agent, receiver: Receiver, client: Client
) -> None:
    request = deliver_one_task(caller, receiver)[-1]
    head, payload, signature = request.header("A2A-Push-Signature").split(".")
    claims = json.loads(base64url_decode(payload))
    claims["task_id"] = "3f1c2a44-0000-4000-8000-00000000abcd"
    forged = ".".join([head, base64url_encode(json.dumps(claims)), signature])

    # With a key set, jwcrypto reports a signature no key verifies as a missing key.
    with pytest.raises((jws.InvalidJWSSignature, jwt.JWTMissingKey)):
        verified_claims(forged, request.body, published(client))


def test_a_key_rotated_out_stays_published_and_new_deliveries_use_the_new_key(
    caller: Caller, pusher: Agent, receiver: Receiver, client: Client
) -> None:
    before = deliver_one_task(caller, receiver)
    old_kid = header_of(before[0].header("A2A-Push-Signature"))["kid"]

    new_kid = signing.rotate().kid
    caller.send("pusher", V1, push=webhook(V1, receiver.url))
    after = receiver.wait_for(8)[4:]
    jwks = published(client)

    assert new_kid != old_kid
    assert {old_kid, new_kid} <= {key["kid"] for key in jwks["keys"]}
    for request in before + after:
        verified_claims(request.header("A2A-Push-Signature"), request.body, jwks)
    assert {header_of(r.header("A2A-Push-Signature"))["kid"] for r in after} == {new_kid}


def test_the_published_keys_hold_no_private_parts(client: Client) -> None:
    signing.current_key()

    for key in published(client)["keys"]:
        assert key["kty"] == "EC" and key["crv"] == "P-256"
        assert "d" not in key


def test_every_token_the_cached_signer_makes_verifies_with_the_published_keys(
    client: Client,
) -> None:
    # Hundreds of them: an ECDSA number with leading zero bytes (about 1 in 128 signatures)
    # must still be written as 32 bytes.
    key = signing.current_key()
    jwks = published(client)
    for n in range(300):
        body = f'{{"n": {n}}}'.encode()
        token = signing.current_signer().sign(body, f"delivery-{n}", "task-7", ISSUER)

        claims = verified_claims(token, body, jwks)

        assert (claims["jti"], claims["task_id"], claims["iss"]) == (f"delivery-{n}", "task-7",
                                                                    ISSUER)  # fmt: skip
        assert header_of(token) == {"alg": "ES256", "kid": key.kid, "typ": "JWT"}
