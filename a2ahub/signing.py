"""The hub's identity: its signing keys (ES256), the issuer it names, and the JWT it signs.

The JWT binds the delivery to its exact body (`request_body_sha256`), its task, its time and its
recipient (`aud`: the backend's or the webhook's URL, and a webhook's `config_id`), so a body
signed for one receiver is no good at another; receivers verify it with the keys published at
/.well-known/jwks.json and check that `aud` is their own URL. A retired key stays
published until every delivery it may have signed is past the retry horizon.

Signing is on the path of every webhook: the current key is kept for KEY_CACHE_SECONDS (a
rotation in another process takes effect within that; in this one at once), and the JWS is
put together here over `cryptography`'s ECDSA, a fifth of jwcrypto's cost per token (which
parses the key and builds its objects again for each one). jwcrypto still makes and reads
the keys, and checks signatures.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from datetime import timedelta
from functools import lru_cache
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from jwcrypto import jwk, jwt

from a2ahub.models import SigningKey

TOKEN_LIFETIME_SECONDS = 300
KEY_CACHE_SECONDS = 5.0


def issuer() -> str:
    """Who signs: the hub's public URL, from configuration (never from a request)."""
    return settings.PUBLIC_BASE_URL or f"http://{settings.HOST}:{settings.PORT}"


def current_key() -> SigningKey:
    key = SigningKey.objects.filter(retired_at__isnull=True).first()
    return key if key is not None else rotate()


def rotate() -> SigningKey:
    """Make a new signing key and retire the others (they stay published for a while)."""
    private = jwk.JWK.generate(kty="EC", crv="P-256")
    kid = private.thumbprint()
    public = json.loads(private.export_public()) | {"kid": kid, "use": "sig", "alg": "ES256"}
    with transaction.atomic():
        SigningKey.objects.filter(retired_at__isnull=True).update(retired_at=timezone.now())
        key = SigningKey.objects.create(
            kid=kid, private_pem=private.export_to_pem(private_key=True, password=None).decode(),
            public_jwk=public,
        )  # fmt: skip
        transaction.on_commit(forget_current_signer)  # the next delivery reads the new key
    return key


def published_keys() -> list[dict[str, Any]]:
    # The hub's first key is made by whoever needs it first: a client that reads the keys
    # before its first card must find the key that card will be signed with.
    current_key()
    horizon = timezone.now() - timedelta(seconds=settings.PUSH_RETRY_HORIZON_SECONDS + 3600)
    keys = SigningKey.objects.filter(Q(retired_at__isnull=True) | Q(retired_at__gt=horizon))
    return [key.public_jwk for key in keys]


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def sign_with(
    key: SigningKey, body: bytes, delivery_id: str, task_id: str, issuer: str, audience: str = ""
) -> str:
    """A delivery's token signed with a key already loaded (for callers that cannot query then)."""
    return signer_for(key.kid, key.private_pem).sign(body, delivery_id, task_id, issuer, audience)


def b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


class Signer:
    """Makes ES256 JWTs (compact JWS, RFC 7515/7518) with one key, parsed once."""

    def __init__(self, kid: str, private_pem: str) -> None:
        self.kid = kid
        private = serialization.load_pem_private_key(private_pem.encode(), password=None)
        if not isinstance(private, ec.EllipticCurvePrivateKey):
            raise ValueError(f"signing key {kid} is not an EC key")
        self._private = private
        header = {"alg": "ES256", "kid": kid, "typ": "JWT"}
        self._header = b64url(json.dumps(header, separators=(",", ":")).encode())

    def sign(
        self,
        body: bytes,
        delivery_id: str,
        task_id: str,
        issuer: str,
        audience: str = "",
        config_id: str = "",
    ) -> str:
        """`audience`: the URL the body is sent to; `config_id`: the push config's id."""
        now = int(time.time())
        claims = {
            "iss": issuer,
            "iat": now,
            "exp": now + TOKEN_LIFETIME_SECONDS,
            "jti": delivery_id,
            "task_id": task_id,
            "request_body_sha256": body_digest(body),
        }
        if audience:
            claims["aud"] = audience
        if config_id:
            claims["config_id"] = config_id
        signed = self._header + b"." + b64url(json.dumps(claims, separators=(",", ":")).encode())
        r, s = utils.decode_dss_signature(self._private.sign(signed, ec.ECDSA(hashes.SHA256())))
        # JWS wants the two integers side by side, 32 bytes each, not DER (RFC 7518 3.4).
        return (signed + b"." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))).decode()


@lru_cache(maxsize=16)
def signer_for(kid: str, private_pem: str) -> Signer:
    return Signer(kid, private_pem)


# The current key's signer and until when (monotonic) it may be used without asking again;
# `_generation` tells a lookup that raced a rotation not to keep what it read.
_current: tuple[float, Signer] | None = None
_generation = 0
_current_lock = threading.Lock()


def cached_signer() -> Signer | None:
    """The current key's signer if it was read less than KEY_CACHE_SECONDS ago (no query: for
    an event loop, which asks `current_signer` on a thread of its own when this is None)."""
    cached = _current
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    return None


def current_signer() -> Signer:
    """The signer of the current key, read from the database at most every KEY_CACHE_SECONDS."""
    global _current
    cached = cached_signer()
    if cached is not None:
        return cached
    generation = _generation
    key = current_key()
    signer = signer_for(key.kid, key.private_pem)
    with _current_lock:
        if generation == _generation:
            _current = (time.monotonic() + KEY_CACHE_SECONDS, signer)
    return signer


def forget_current_signer() -> None:
    """A rotation in this process: the next delivery reads the new key."""
    global _current, _generation
    with _current_lock:
        _generation += 1
        _current = None


class SignatureInvalid(Exception):
    """The token does not verify, or was not made for this body or this recipient."""


def verify_delivery(
    token: str, body: bytes, keys: list[dict[str, Any]], audience: str | None = None
) -> dict[str, Any]:
    """The claims of a valid signature for this body (and, given `audience`, made for that
    recipient); SignatureInvalid otherwise."""
    keyset = jwk.JWKSet()
    for key in keys:
        keyset.add(jwk.JWK(**key))
    try:
        checked = jwt.JWT(jwt=token, key=keyset, algs=["ES256"])
    except Exception as exc:  # jwcrypto's errors for a bad signature, key or token
        raise SignatureInvalid(f"signature does not verify: {exc}") from exc
    claims: dict[str, Any] = json.loads(checked.claims)
    if claims.get("request_body_sha256") != body_digest(body):
        raise SignatureInvalid("the body is not the one that was signed")
    if audience is not None and not is_audience(claims.get("aud"), audience):
        raise SignatureInvalid(f"the signature is for {claims.get('aud')!r}, not {audience!r}")
    return claims


def is_audience(aud: Any, expected: str) -> bool:
    """RFC 7519 4.1.3: `aud` is one string or a list of them."""
    return aud == expected or (isinstance(aud, list) and expected in aud)
