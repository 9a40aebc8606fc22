"""The hub's identity: its signing keys (ES256), the issuer it names, and the JWT it signs.

The JWT binds the delivery to its exact body (`request_body_sha256`), its task and its time;
receivers verify it with the keys published at /.well-known/jwks.json. A retired key stays
published until every delivery it may have signed is past the retry horizon.
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from jwcrypto import jwk, jws, jwt

from a2ahub.models import SigningKey

TOKEN_LIFETIME_SECONDS = 300


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
        return SigningKey.objects.create(
            kid=kid, private_pem=private.export_to_pem(private_key=True, password=None).decode(),
            public_jwk=public,
        )  # fmt: skip


def published_keys() -> list[dict[str, Any]]:
    horizon = timezone.now() - timedelta(seconds=settings.PUSH_RETRY_HORIZON_SECONDS + 3600)
    keys = SigningKey.objects.filter(Q(retired_at__isnull=True) | Q(retired_at__gt=horizon))
    return [key.public_jwk for key in keys]


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def sign_delivery(body: bytes, delivery_id: str, task_id: str, issuer: str) -> str:
    return sign_with(current_key(), body, delivery_id, task_id, issuer)


def sign_with(key: SigningKey, body: bytes, delivery_id: str, task_id: str, issuer: str) -> str:
    """`sign_delivery` with a key already loaded (for callers that cannot query then)."""
    private = jwk.JWK.from_pem(key.private_pem.encode())
    now = int(time.time())
    claims = {
        "iss": issuer,
        "iat": now,
        "exp": now + TOKEN_LIFETIME_SECONDS,
        "jti": delivery_id,
        "task_id": task_id,
        "request_body_sha256": body_digest(body),
    }
    token = jwt.JWT(header={"alg": "ES256", "kid": key.kid, "typ": "JWT"}, claims=claims)
    token.make_signed_token(private)
    return str(token.serialize())


class SignatureInvalid(Exception):
    pass


def verify_delivery(token: str, body: bytes, keys: list[dict[str, Any]]) -> dict[str, Any]:
    """The claims of a valid signature for this body; SignatureInvalid otherwise."""
    keyset = jwk.JWKSet()
    for key in keys:
        keyset.add(jwk.JWK(**key))
    try:
        checked = jwt.JWT(jwt=token, key=keyset, algs=["ES256"])
    except (jws.InvalidJWSSignature, jwt.JWTExpired, ValueError, Exception) as exc:
        raise SignatureInvalid(f"signature does not verify: {exc}") from exc
    claims: dict[str, Any] = json.loads(checked.claims)
    if claims.get("request_body_sha256") != body_digest(body):
        raise SignatureInvalid("the body is not the one that was signed")
    return claims
