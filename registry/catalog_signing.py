"""The AI Catalog's own signature (the ai-catalog draft's top-level `signature`): a detached
JWS (RFC 7515 appendix F: the payload, base64url-encoded as usual, left out of the compact
form) over the RFC 8785 canonical form of the catalog without `signature`, made with the
hub's current key (ES256, the one that signs cards and push deliveries) and verifiable with
the JWKS it names in `jku`.

ECDSA signatures differ on every signing, so the last few are kept: a catalog that has not
changed is the same document each time it is read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

# The SDK's RFC 8785 canonicalization, the one its card signer and verifier use.
from a2a.utils._jcs import canonicalize
from jwt import api_jws

from a2ahub.signing import current_key
from agents.card_signing import ALGORITHM, jwks_url


def canonical(document: dict[str, Any]) -> bytes:
    """The bytes a catalog's signature covers: its JCS form without `signature`."""
    unsigned = {name: value for name, value in document.items() if name != "signature"}
    return canonicalize(unsigned).encode()


def signed(document: dict[str, Any], base_url: str) -> dict[str, Any]:
    key = current_key()
    signature = detached_jws(canonical(document), key.kid, key.private_pem, jwks_url(base_url))
    return document | {"signature": signature}


@lru_cache(maxsize=8)
def detached_jws(payload: bytes, kid: str, private_pem: str, jku: str) -> str:
    header = {"alg": ALGORITHM, "kid": kid, "jku": jku, "typ": "JOSE"}
    token = api_jws.encode(payload, private_pem, algorithm=ALGORITHM, headers=header)
    protected, _, signature = token.split(".")
    return f"{protected}..{signature}"
