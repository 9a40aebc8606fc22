"""The official SDK's card signature verifier, taking keys from the hub's JWKS as a client
would (by the `kid` of each signature)."""

from __future__ import annotations

from collections.abc import Callable

from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import create_signature_verifier
from django.test import Client
from jwt import PyJWK

KeyLookups = list[tuple[str | None, str | None]]


def card_verifier(client: Client, seen: KeyLookups | None = None) -> Callable[[pb.AgentCard], None]:
    """Raises the SDK's SignatureVerificationError unless a signature is the hub's; `seen`
    collects the (kid, jku) of each key asked for."""
    keys = {key["kid"]: key for key in client.get("/.well-known/jwks.json").json()["keys"]}

    def key_for(kid: str | None, jku: str | None) -> PyJWK:
        if seen is not None:
            seen.append((kid, jku))
        return PyJWK(keys[kid])

    return create_signature_verifier(key_for, ["ES256"])
