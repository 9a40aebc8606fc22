"""Who is calling: every A2A request resolves to a principal before any method runs.

A principal is an API key (sent where the agent's card says: an `apiKey` scheme's header,
query parameter or cookie, or as an HTTP bearer token) or, where the agent declares no
security requirement, `anonymous`. Tasks belong to the principal that created them.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from a2ahub.errors import AuthenticationRequired
from agents.models import Agent, ApiKey, hash_key

DEFAULT_KEY_HEADER = "X-API-Key"


@dataclass(frozen=True)
class Principal:
    id: str
    label: str

    @property
    def is_anonymous(self) -> bool:
        return self.id == ANONYMOUS.id


ANONYMOUS = Principal("anonymous", "anonymous")


def presented_credentials(request: HttpRequest, agent: Agent) -> list[str]:
    """Every credential the request carries in a place the agent's card names."""
    found: list[str] = []
    schemes = agent.security_schemes or {}
    for scheme in schemes.values():
        found.extend(credential_for_scheme(request, scheme))
    if not schemes:
        found.extend(filter(None, [request.headers.get(DEFAULT_KEY_HEADER)]))
    return [c.strip() for c in found if c and c.strip()]


def credential_for_scheme(request: HttpRequest, scheme: dict[str, Any]) -> list[str]:
    kind = scheme.get("type")
    if kind == "apiKey":
        name = str(scheme.get("name", DEFAULT_KEY_HEADER))
        place = scheme.get("in", "header")
        value = {
            "header": request.headers.get(name),
            "query": request.GET.get(name),
            "cookie": request.COOKIES.get(name),
        }.get(place)
        return [value] if value else []
    if kind in ("http", "oauth2", "openIdConnect"):
        auth = request.headers.get("Authorization", "")
        method, _, token = auth.partition(" ")
        return [token] if method.lower() == "bearer" and token else []
    return []


def find_key(raw: str, agent: Agent) -> ApiKey | None:
    parts = raw.split("_")
    if len(parts) < 3 or parts[0] != "a2a":
        return None
    key = (
        ApiKey.objects.filter(prefix=parts[1], revoked_at__isnull=True)
        .filter(Q(agent__isnull=True) | Q(agent=agent))
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, hash_key(raw)):
        return None
    return key


def authenticate(request: HttpRequest, agent: Agent) -> Principal:
    """The caller's principal, or AuthenticationRequired (HTTP 401) when the agent needs one."""
    credentials = presented_credentials(request, agent)
    for raw in credentials:
        key = find_key(raw, agent)
        if key is not None:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
            return Principal(key.principal, key.name)
    if credentials:
        raise AuthenticationRequired("The credentials are not valid.", challenge(agent))
    if agent.security_requirements:
        raise AuthenticationRequired("This agent needs credentials.", challenge(agent))
    return ANONYMOUS


def challenge(agent: Agent) -> str:
    """A WWW-Authenticate value naming how this agent wants to be called."""
    for scheme in (agent.security_schemes or {}).values():
        if scheme.get("type") == "apiKey":
            return f'ApiKey realm="a2a-hub", {scheme.get("in", "header")}="{scheme.get("name")}"'
        if scheme.get("type") in ("http", "oauth2", "openIdConnect"):
            return 'Bearer realm="a2a-hub"'
    return f'ApiKey realm="a2a-hub", header="{DEFAULT_KEY_HEADER}"'
