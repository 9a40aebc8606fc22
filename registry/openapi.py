"""The registry's OpenAPI 3 schema (served by `registry.docs`): drf-spectacular generates it
from the views, and this module gives it what the views cannot show (they read JSON by hand
and judge cards with the SDK's models): the bodies a registration may be, and the answers.

A card is described loosely, by the fields the registry needs of it; the SDK's models judge
the rest, and an answer of 400 names what they refused.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from agents.scopes import REGISTRY

STRING: dict[str, Any] = {"type": "string"}
STRINGS: dict[str, Any] = {"type": "array", "items": STRING}
SKILL = {
    "type": "object",
    "required": ["id", "name", "description", "tags"],
    "properties": {"id": STRING, "name": STRING, "description": STRING, "tags": STRINGS},
}
# What a card of either version has, and must have, beside its version's own fields.
CARD_REQUIRED = ["name", "description", "version", "capabilities", "defaultInputModes",
                 "defaultOutputModes", "skills"]  # fmt: skip
CARD_PROPERTIES = {
    "name": STRING, "description": STRING, "version": STRING,
    "defaultInputModes": STRINGS, "defaultOutputModes": STRINGS,
    "skills": {"type": "array", "items": SKILL},
}  # fmt: skip
CARD_V1 = {
    "title": "Agent Card (A2A 1.0)",
    "type": "object",
    "required": [*CARD_REQUIRED, "supportedInterfaces"],
    "properties": {
        **CARD_PROPERTIES,
        "supportedInterfaces": {"type": "array", "items": {
            "type": "object", "required": ["url", "protocolBinding", "protocolVersion"],
            "properties": {"url": STRING, "protocolBinding": STRING, "protocolVersion": STRING},
        }},
        "capabilities": {"type": "object", "properties": {
            "streaming": {"type": "boolean"}, "pushNotifications": {"type": "boolean"}}},
    },
}  # fmt: skip
CARD_V03 = {
    "title": "Agent Card (A2A 0.3)",
    "type": "object",
    "required": [*CARD_REQUIRED, "url", "protocolVersion"],
    "properties": {
        **CARD_PROPERTIES,
        "url": STRING, "protocolVersion": STRING, "preferredTransport": STRING,
        "capabilities": {"type": "object", "properties": {"streaming": {"type": "boolean"}}},
    },
}  # fmt: skip
SEED = {
    "title": "Registration (seed 003's shape)",
    "type": "object",
    "required": ["id", "name", "capabilities", "endpoints"],
    "properties": {
        "id": STRING, "name": STRING, "version": STRING, "description": STRING,
        "capabilities": {"type": "array", "items": {"type": "object", "properties": {
            "name": STRING, "inputTypes": STRINGS, "outputTypes": STRINGS}}},
        "endpoints": {"type": "array", "items": {"type": "object", "properties": {
            "type": STRING, "url": STRING}}},
        "supportedProtocols": STRINGS, "tags": STRINGS, "category": STRING,
    },
}  # fmt: skip
BY_URL = {
    "title": "A card to fetch",
    "type": "object",
    "required": ["cardUrl"],
    "properties": {
        "cardUrl": {**STRING, "format": "uri", "description": "Read through the outbound guard."},
        "agentId": STRING,
        "identifier": STRING,
        "ttl": {"type": "integer"},
    },
}
SUBMISSION = {"oneOf": [CARD_V1, CARD_V03, SEED, BY_URL]}

CARD_SIGNATURE: dict[str, Any] = {
    "type": "object",
    "description": "Whether the card is signed by a key the hub trusts, checked when it came in.",
    "required": ["status", "kid", "keySource", "reason", "checkedAt"],
    "properties": {
        "status": {"type": "string", "enum": ["verified", "unsigned", "invalid", "unchecked"]},
        "kid": {**STRING, "description": "the key that verified it"},
        "keySource": {"type": "string", "enum": ["trusted", "origin", ""],
                      "description": "TRUSTED_CARD_KEYS, or the JWKS at the card's origin"},
        "reason": {**STRING, "description": "why it is not verified"},
        "checkedAt": {**STRING, "format": "date-time", "nullable": True},
    },
}  # fmt: skip
RECEIPT: dict[str, Any] = {
    "type": "object",
    "required": ["status", "agentId", "registrationId", "expiresAt", "discoveryUrl", "ttl"],
    "properties": {
        "status": {"type": "string", "enum": ["registered"]},
        "agentId": STRING, "registrationId": STRING,
        "expiresAt": {**STRING, "format": "date-time"},
        "discoveryUrl": {**STRING, "format": "uri"}, "ttl": {"type": "integer"},
        "cardSignature": CARD_SIGNATURE,
    },
}  # fmt: skip
HEARTBEAT = {**RECEIPT, "properties": {**RECEIPT["properties"], "health": STRING}}
ENTRY = {
    "type": "object",
    "required": ["agentId", "registrationId", "status", "name", "expiresAt", "discoveryUrl",
                 "url"],
    "properties": {
        "agentId": STRING, "registrationId": STRING,
        "status": {"type": "string", "enum": ["registered", "expired"]},
        "name": STRING, "description": STRING, "version": STRING,
        "expiresAt": {**STRING, "format": "date-time"},
        "discoveryUrl": {**STRING, "format": "uri"}, "url": {**STRING, "format": "uri"},
        "protocols": STRINGS, "tags": STRINGS, "category": STRING, "identifier": STRING,
        "skills": {"type": "array", "items": {"type": "object", "properties": {
            "id": STRING, "name": STRING, "tags": STRINGS}}},
        "cardSignature": CARD_SIGNATURE,
        # Only for the registering principal and operators:
        "ttl": {"type": "integer"}, "cardUrl": STRING, "health": STRING, "lastError": STRING,
    },
}  # fmt: skip
PAGE = {
    "type": "object",
    "required": ["agents", "nextCursor"],
    "properties": {"agents": {"type": "array", "items": ENTRY},
                   "nextCursor": {**STRING, "nullable": True}},
}  # fmt: skip
ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object", "required": ["code", "status", "message"],
        "properties": {"code": {"type": "integer"}, "status": STRING, "message": STRING,
                       "field": STRING},
    }},
}  # fmt: skip


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=ERROR, description=description)


BAD = {400: error("a body or parameter the registry refuses; `field` names it")}
NEEDS_CREDENTIAL = {
    401: error("no credential, or one the hub does not know"),
    403: error(f"the credential lacks the `{REGISTRY}` scope, or is not the registration's owner"),
}
UNKNOWN = {404: error("no agent of this id is registered here")}
BODY_LIMITS = {413: error("the body is over REGISTRY_MAX_BODY_BYTES"),
               415: error("the body is not JSON")}  # fmt: skip
# Registering, replacing, renewing and deregistering take one of these (no anonymous call).
# (drf-spectacular takes security requirements, though its hint says names.)
CREDENTIALS: Any = [{"hubApiKey": []}, {"hubOAuth2": [REGISTRY]}, {"cookieAuth": []}]
TTL = OpenApiParameter("ttl", int, description="seconds until the registration expires")
AGENT_ID = OpenApiParameter("agentId", str, description="the agent id (slug) to register under")
IDENTIFIER = OpenApiParameter(
    "identifier", str, description="the agent's AI Catalog identifier (urn:air:...), kept as given"
)
SEARCH = [
    OpenApiParameter("q", str, description="words in the name, description, skills or tags"),
    OpenApiParameter("tag", str), OpenApiParameter("skill", str),
    OpenApiParameter("category", str),
    OpenApiParameter("protocol", str, description="`1.0` or `0.3` (`a2a-` may lead)"),
    OpenApiParameter("pageSize", int, description="1 to 100 (20)"),
    OpenApiParameter("cursor", str, description="the `nextCursor` of the page before"),
]  # fmt: skip

search = extend_schema(
    operation_id="registry_search", summary="Search the live registrations",
    parameters=SEARCH, responses={200: PAGE, **BAD},
)  # fmt: skip
register = extend_schema(
    operation_id="registry_register", summary="Register an agent (or renew its registration)",
    parameters=[TTL, AGENT_ID, IDENTIFIER], request={"application/json": SUBMISSION},
    auth=CREDENTIALS, responses={201: RECEIPT, 200: RECEIPT, **BAD, **NEEDS_CREDENTIAL,
                                 409: error("the agent id or identifier is taken"),
                                 **BODY_LIMITS},
)  # fmt: skip
read = extend_schema(
    operation_id="registry_read", summary="Read a registration",
    responses={200: ENTRY, **UNKNOWN,
               410: error("the registration expired (its owner and operators still read it)")},
)  # fmt: skip
replace = extend_schema(
    operation_id="registry_replace", summary="Replace the card (and renew)",
    parameters=[TTL], request={"application/json": SUBMISSION}, auth=CREDENTIALS,
    responses={200: RECEIPT, **BAD, **NEEDS_CREDENTIAL, **UNKNOWN, **BODY_LIMITS},
)  # fmt: skip
deregister = extend_schema(
    operation_id="registry_deregister", summary="Deregister: the agent and its tasks go",
    auth=CREDENTIALS,
    responses={204: None, **NEEDS_CREDENTIAL, **UNKNOWN},
)  # fmt: skip
heartbeat = extend_schema(
    operation_id="registry_heartbeat", summary="Renew a registration",
    parameters=[TTL], request=None, auth=CREDENTIALS,
    responses={200: HEARTBEAT, **BAD, **NEEDS_CREDENTIAL, **UNKNOWN},
)  # fmt: skip
