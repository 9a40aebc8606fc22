"""Reading a served AI Catalog as a consumer would: its signature checked with jwcrypto
against the hub's served JWKS, over the RFC 8785 form (the SDK's canonicalization) of the
catalog without its signature."""

from __future__ import annotations

import json
from typing import Any

from a2a.utils._jcs import canonicalize
from jwcrypto import jwk, jws


def verified(document: dict[str, Any], jwks: dict[str, Any]) -> dict[str, Any]:
    """The signature's protected header; raises jwcrypto's InvalidJWSSignature unless the
    catalog is the one the hub signed."""
    unsigned = {name: value for name, value in document.items() if name != "signature"}
    token = jws.JWS()
    token.deserialize(document["signature"])
    header: dict[str, Any] = token.jose_header
    key = jwk.JWKSet.from_json(json.dumps(jwks)).get_key(header["kid"])
    assert key is not None, f"the hub's JWKS has no key {header['kid']}"
    token.verify(key, alg="ES256", detached_payload=canonicalize(unsigned).encode())
    return header


AGENT_CARD = "application/a2a-agent-card+json"


def agent_entries(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The catalog's agent entries (the MCP door's entry left out)."""
    return [entry for entry in document["entries"] if entry["type"] == AGENT_CARD]
