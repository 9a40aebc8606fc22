"""Whether a card that comes into the hub (a registration, an import, an `a2a-remote` agent) is
signed by a key the hub may trust (spec v1.0.1 section 8.4; the official SDK's verifier checks
the detached JWS over the RFC 8785 form of the card without `signatures`).

A signature's key is looked up by its `kid`: first among the keys the operator trusts
(TRUSTED_CARD_KEYS), then in the JWKS at the card's own origin (the URL it was fetched from,
or for a card sent in a registration body, its first interface URL): at the header's `jku`
when that is on the same origin, else at /.well-known/jwks.json there. A `jku` elsewhere is
never fetched: whoever wrote the card could name any keys there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import (
    InvalidSignaturesError,
    NoSignatureError,
    create_signature_verifier,
)
from django.conf import settings
from django.utils import timezone
from jwt import PyJWK
from jwt.exceptions import PyJWKError, PyJWTError

from a2ahub import outbound
from agents.models import Agent, CardKeySource, CardSignature

# Asymmetric algorithms only: an HMAC "key" from a JWKS would be public, so anyone could sign.
ALGORITHMS = ["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
              "EdDSA"]  # fmt: skip
JWKS_PATH = "/.well-known/jwks.json"
JWKS_TIMEOUT = 10.0
MAX_JWKS_BYTES = 64 * 1024
# Key sets read for one card at most: a card with many signatures cannot make many requests.
MAX_JWKS_READS = 3
REASON_LENGTH = 500
# The Agent fields a check writes (the entrances save them with the card's own fields).
TRUST_FIELDS = ["card_signature", "card_signature_kid", "card_signature_key_source",
                "card_signature_reason", "card_checked_at"]  # fmt: skip


@dataclass(frozen=True)
class CardTrust:
    """What a check found; `kid` and `key_source` name the key that verified the card."""

    status: str
    kid: str = ""
    key_source: str = ""
    reason: str = ""

    @property
    def verified(self) -> bool:
        return self.status == CardSignature.VERIFIED

    def as_document(self) -> dict[str, str]:
        return {"status": self.status or "unchecked", "kid": self.kid,
                "keySource": self.key_source, "reason": self.reason}  # fmt: skip


class UntrustedCard(Exception):
    """CARD_SIGNATURES_REQUIRED is on and the card is not verified; the message says why."""


class _KeyMissing(PyJWKError):
    """No key to try for one signature (the SDK's verifier then tries the next one)."""


class _Keys:
    """The SDK verifier's key provider for one card, noting what it found for each signature
    (the SDK says only that none verified)."""

    def __init__(self, origin_url: str) -> None:
        self.origin = outbound.origin_of(origin_url)
        self.jwks: dict[str, dict[str, dict[str, Any]]] = {}
        self.problems: list[str] = []
        self.tried: tuple[str, str] | None = None  # the key handed out last: (kid, source)

    def __call__(self, kid: str | None, jku: str | None) -> PyJWK:
        self.note_mismatch()
        kid = kid if isinstance(kid, str) else ""
        trusted = {str(k["kid"]): k for k in settings.TRUSTED_CARD_KEYS}
        if kid in trusted:
            return self.hand_out(trusted[kid], kid, CardKeySource.TRUSTED)
        url = self.jwks_url(jku)
        key = self.read_jwks(url).get(kid)
        if key is None:
            raise self.missing(f"no trusted key and no key at {url} has the kid {kid!r}")
        return self.hand_out(key, kid, CardKeySource.ORIGIN)

    def hand_out(self, jwk: dict[str, Any], kid: str, source: str) -> PyJWK:
        try:
            key = PyJWK(jwk)
        except (PyJWTError, ValueError, TypeError, KeyError) as exc:
            raise self.missing(f"the key {kid!r} ({source}) cannot be used: {exc}") from None
        self.tried = (kid, source)
        return key

    def note_mismatch(self) -> None:
        """The key handed out last did not verify its signature."""
        if self.tried is not None:
            kid, source = self.tried
            self.problems.append(
                f"the signature by key {kid!r} ({source}) does not match the card: it was "
                "changed after signing, or signed with another key"
            )
            self.tried = None

    def missing(self, problem: str) -> _KeyMissing:
        self.problems.append(problem)
        return _KeyMissing(problem)

    def jwks_url(self, jku: Any) -> str:
        if not self.origin:
            raise self.missing("the card has no http(s) origin to read keys from")
        if not jku:
            return self.origin + JWKS_PATH
        if not isinstance(jku, str) or outbound.origin_of(jku) != self.origin:
            raise self.missing(
                f"the signature's jku {jku!r} is not on the card's origin {self.origin}; "
                "the hub reads keys only from there or from TRUSTED_CARD_KEYS"
            )
        return jku

    def read_jwks(self, url: str) -> dict[str, dict[str, Any]]:
        if url not in self.jwks and len(self.jwks) >= MAX_JWKS_READS:
            raise self.missing(
                f"the card names more than {MAX_JWKS_READS} key sets; {url} is not read"
            )
        if url not in self.jwks:
            try:
                self.jwks[url] = fetch_jwks(url)
            except _KeyMissing as exc:
                self.jwks[url] = {}  # read once per card, whatever it answered
                raise self.missing(str(exc)) from None
        return self.jwks[url]


def fetch_jwks(url: str) -> dict[str, dict[str, Any]]:
    """The keys at `url` by kid, through the hub's guarded HTTP seam; _KeyMissing says why not."""
    try:
        response = outbound.get(
            url, headers={"Accept": "application/json"}, timeout=JWKS_TIMEOUT,
            max_bytes=MAX_JWKS_BYTES,
        )  # fmt: skip
    except (outbound.UnsafeURL, outbound.ResponseTooLarge, httpx.HTTPError) as exc:
        problem = f"the JWKS at {url} could not be read: {exc or type(exc).__name__}"
        raise _KeyMissing(problem) from None
    if not response.is_success:
        raise _KeyMissing(f"the JWKS at {url} answered HTTP {response.status_code}")
    try:
        keys = response.json().get("keys")
    except (ValueError, UnicodeDecodeError, AttributeError):
        keys = None
    if not isinstance(keys, list):
        raise _KeyMissing(f'the document at {url} is not a JWKS ({{"keys": [...]}})')
    return {str(k["kid"]): k for k in keys if isinstance(k, dict) and k.get("kid")}


def verify(card: pb.AgentCard, origin_url: str) -> CardTrust:
    """Check `card`'s signatures; `origin_url` is where it came from (see the module's doc)."""
    keys = _Keys(origin_url)
    try:
        create_signature_verifier(keys.__call__, ALGORITHMS)(card)
    except NoSignatureError:
        return CardTrust(CardSignature.UNSIGNED, reason="The card has no signatures.")
    except InvalidSignaturesError:
        keys.note_mismatch()
        return invalid(keys.problems or ["no signature has a readable protected header"])
    kid, source = keys.tried or ("", "")
    return CardTrust(CardSignature.VERIFIED, kid=kid, key_source=source)


def invalid(problems: list[str]) -> CardTrust:
    reason = "No signature verifies: " + "; ".join(dict.fromkeys(problems)) + "."
    return CardTrust(CardSignature.INVALID, reason=reason[:REASON_LENGTH])


def unchecked(problem: str) -> CardTrust:
    """The card could not be read, so its signature was not checked."""
    return CardTrust(CardSignature.NOT_CHECKED, reason=problem[:REASON_LENGTH])


def require(trust: CardTrust) -> None:
    """Refuse a card that is not verified, when CARD_SIGNATURES_REQUIRED is on."""
    if settings.CARD_SIGNATURES_REQUIRED and not trust.verified:
        raise UntrustedCard(refusal(trust))


def must_check_again(agent: Agent) -> bool:
    """A card checked before and not verified, now that signatures are required."""
    return settings.CARD_SIGNATURES_REQUIRED and agent.card_signature != CardSignature.VERIFIED


def refusal(trust: CardTrust) -> str:
    what = {
        CardSignature.UNSIGNED: "the card is not signed",
        CardSignature.INVALID: "the card's signature is invalid",
    }.get(CardSignature(trust.status), "the card's signature could not be checked")
    return (
        f"This hub registers only signed cards (CARD_SIGNATURES_REQUIRED), and {what}. "
        f"{trust.reason}"
    ).strip()


def record(agent: Agent, trust: CardTrust) -> None:
    """Keep the result on the agent (unsaved; TRUST_FIELDS are what to save)."""
    agent.card_signature = trust.status
    agent.card_signature_kid = trust.kid
    agent.card_signature_key_source = trust.key_source
    agent.card_signature_reason = trust.reason
    agent.card_checked_at = timezone.now()


def recorded(agent: Agent) -> CardTrust:
    return CardTrust(agent.card_signature, agent.card_signature_kid,
                     agent.card_signature_key_source, agent.card_signature_reason)  # fmt: skip
