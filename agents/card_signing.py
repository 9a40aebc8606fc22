"""Agent Cards signed with the hub's keys (PROTOCOL.md section 9, spec v1.0.1 section 8.4).

A card served to clients carries one signature: a detached JWS (ES256) over the RFC 8785
canonical form of the card without `signatures`, made by the official SDK's signer, with the
current key's `kid` and `jku` naming the hub's JWKS (the keys that sign push deliveries too).
The SDK leaves out empty values before it canonicalizes, where the spec's example keeps them
(A2A issue #2122); we sign what the SDK's verifier checks, since that is what clients run.

A retired key stays published until the push retry horizon has passed (`a2ahub.signing`), so
a card a client cached before a rotation still verifies. ECDSA signatures differ on every
signing, so each process keeps the signature it made for a card and key: a card read twice
is the same document, and its ETag (`card_tag`) does not depend on the signature at all.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import ProtectedHeader, create_agent_card_signer

from a2ahub.signing import current_key
from agents.models import Agent

ALGORITHM = "ES256"
_KEPT = 256
_signatures: OrderedDict[tuple[bytes, str, str], pb.AgentCardSignature] = OrderedDict()
_lock = threading.Lock()


def jwks_url(base_url: str) -> str:
    return f"{base_url}/.well-known/jwks.json"


def sign(agent: Agent, card: pb.AgentCard, base_url: str) -> str:
    """Add the hub's signature to `card` unless the agent opted out; the signing key's id
    ("" when unsigned), which a cache of the card must tell apart."""
    if not agent.sign_card:
        return ""
    key = current_key()
    jku = jwks_url(base_url)
    wanted = (hashlib.sha256(card.SerializeToString(deterministic=True)).digest(), key.kid, jku)
    with _lock:
        signature = _signatures.get(wanted)
        if signature is not None:
            _signatures.move_to_end(wanted)
    if signature is None:
        header: ProtectedHeader = {"alg": ALGORITHM, "kid": key.kid, "jku": jku, "typ": "JOSE"}
        signer = create_agent_card_signer(key.private_pem, header)
        unsigned = pb.AgentCard()
        unsigned.CopyFrom(card)
        signature = signer(unsigned).signatures[-1]
        with _lock:
            _signatures[wanted] = signature
            while len(_signatures) > _KEPT:
                _signatures.popitem(last=False)
    card.signatures.append(signature)
    return key.kid
