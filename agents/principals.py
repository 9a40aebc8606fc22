"""Who is calling: every A2A request resolves to a principal before any method runs.

A principal comes from a credential: an API key (sent where the agent's card says: an
`apiKey` scheme's header, query parameter or cookie, or as an HTTP bearer token), an OAuth2
access token of the hub's authorization server (a bearer token), or the session of the
developer pages; without one, `anonymous`. A task belongs to the user behind the credential
(`user:<id>`), so a user's keys, tokens and session see the same tasks; a key without an owner
owns as itself (`apikey:<id>`), a client-credentials token as its application (`app:<id>`).

Then the agent's access rule decides whether that principal may call it (`check_access`):
401 when a credential is missing or not valid, 403 when it is valid but not enough. Nothing
here writes the database on every request: tokens are read, and a key's `last_used_at` is
written at most once a minute.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import timedelta
from importlib import import_module
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from oauth2_provider.models import AccessToken

from a2ahub.errors import AccessDenied, AuthenticationRequired
from agents import scopes as scope_rules
from agents.models import Access, Agent, ApiKey, hash_key

DEFAULT_KEY_HEADER = "X-API-Key"
# A key's last use is recorded when the one on record is older than this.
LAST_USED_GRANULARITY = timedelta(minutes=1)


@dataclass(frozen=True)
class Principal:
    id: str
    label: str
    user_id: int | None = None
    application_id: int | None = None
    # A token's scopes; None for credentials without scopes (keys, sessions), which reach
    # whatever their principal may call.
    scopes: frozenset[str] | None = None

    @property
    def is_anonymous(self) -> bool:
        return self.id == ANONYMOUS.id

    @property
    def is_token(self) -> bool:
        return self.scopes is not None

    def reaches_skill(self, agent: Agent, skill_id: str) -> bool:
        return self.scopes is None or scope_rules.reaches_skill(self.scopes, agent.slug, skill_id)


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


def bearer_token(request: HttpRequest) -> list[str]:
    method, _, token = request.headers.get("Authorization", "").partition(" ")
    return [token.strip()] if method.lower() == "bearer" and token.strip() else []


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
        return bearer_token(request)
    return []


def is_api_key(raw: str) -> bool:
    return raw.startswith("a2a_")


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


def key_principal(key: ApiKey) -> Principal:
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_GRANULARITY:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return Principal(key.principal, key.name, user_id=key.owner_id)


TOKEN_FIELDS = ("user_id", "user__is_active", "application_id", "application__name", "expires",
                "scope")  # fmt: skip


def find_token(raw: str) -> dict[str, Any] | None:
    """The access token's row (one indexed read; tokens are stored by their checksum)."""
    checksum = hashlib.sha256(raw.encode()).hexdigest()
    return AccessToken.objects.filter(token_checksum=checksum).values(*TOKEN_FIELDS).first()


def token_principal(row: dict[str, Any], agent: Agent, request: HttpRequest) -> Principal:
    if row["expires"] <= timezone.now():
        detail = 'error="invalid_token", error_description="The access token expired"'
        raise AuthenticationRequired(
            "The access token has expired.", bearer_challenge(agent, request, detail)
        )
    granted = frozenset(row["scope"].split())
    user_id, app_id = row["user_id"], row["application_id"]
    if user_id is not None:
        if not row["user__is_active"]:
            detail = 'error="invalid_token"'
            raise AuthenticationRequired(
                "The credentials are not valid.", bearer_challenge(agent, request, detail)
            )
        return Principal(
            f"user:{user_id}", f"user {user_id}", user_id, application_id=app_id, scopes=granted
        )
    label = row["application__name"] or "application"
    return Principal(f"app:{app_id}", label, application_id=app_id, scopes=granted)


def session_principal(request: HttpRequest) -> Principal | None:
    """The signed-in user of the developer pages, when the request carries their session."""
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)
    user = get_user(cast(HttpRequest, _SessionCarrier(store)))
    if not user.is_authenticated:
        return None
    return Principal(f"user:{user.pk}", user.get_username(), user_id=user.pk)


class _SessionCarrier:
    """What `django.contrib.auth.get_user` reads of a request: its session."""

    def __init__(self, session: Any) -> None:
        self.session = session


def has_session_cookie(request: HttpRequest) -> bool:
    return settings.SESSION_COOKIE_NAME in request.headers.get("Cookie", "")


def identify(request: HttpRequest, agent: Agent) -> Principal:
    """The principal behind the request's credentials, or AuthenticationRequired (401)
    when a credential is presented and is not valid."""
    named = presented_credentials(request, agent)
    # Every agent takes the hub's OAuth2 tokens as bearer tokens; an API key counts only in a
    # place the agent's card names.
    tokens = [raw for raw in bearer_token(request) if raw not in named]
    for raw in named + tokens:
        if is_api_key(raw):
            key = find_key(raw, agent) if raw in named else None
            if key is not None:
                return key_principal(key)
            continue
        row = find_token(raw)
        if row is not None:
            return token_principal(row, agent, request)
    if named or tokens:
        raise AuthenticationRequired(
            "The credentials are not valid.", challenge(agent, request, 'error="invalid_token"')
        )
    if has_session_cookie(request):
        return session_principal(request) or ANONYMOUS
    return ANONYMOUS


def authenticate(request: HttpRequest, agent: Agent) -> Principal:
    """The caller's principal, once the agent's access rule lets it in: AuthenticationRequired
    (HTTP 401) without a valid credential it needs, AccessDenied (HTTP 403) when the
    credential is valid but the principal or the token's scopes may not call it."""
    principal = identify(request, agent)
    check_access(agent, principal, request)
    return principal


def needs_credentials(agent: Agent) -> bool:
    return bool(agent.oauth2 or agent.access != Access.ANYONE or agent.security_requirements)


def check_access(agent: Agent, principal: Principal, request: HttpRequest | None = None) -> None:
    if principal.is_anonymous:
        if needs_credentials(agent):
            raise AuthenticationRequired("This agent needs credentials.", challenge(agent, request))
        return
    if agent.oauth2 and not principal.is_token:
        raise AuthenticationRequired(
            "This agent takes an OAuth2 bearer token from the hub's token endpoint.",
            bearer_challenge(agent, request),
        )
    if principal.scopes is not None and not scope_rules.reaches_agent(principal.scopes, agent.slug):
        needed = scope_rules.needed_for(agent.slug)
        detail = f'error="insufficient_scope", scope="{needed}"'
        raise AccessDenied(
            f"The token's scopes do not reach this agent; it needs one of: {needed}.",
            bearer_challenge(agent, request, detail),
        )
    if agent.access == Access.LISTED and not is_listed(agent, principal):
        raise AccessDenied("This agent is not open to this caller.")


def is_listed(agent: Agent, principal: Principal) -> bool:
    """Whether the agent's lists (or its ownership) name the principal: one read."""
    reach = Q()
    if principal.user_id is not None:
        uid = principal.user_id
        reach |= Q(owner_id=uid) | Q(allowed_users=uid) | Q(allowed_groups__user=uid)
    if principal.application_id is not None and principal.user_id is None:
        reach |= Q(allowed_applications=principal.application_id)
    if not reach:
        return False
    return Agent.objects.filter(pk=agent.pk).filter(reach).exists()


def resource_metadata_url(agent: Agent, request: HttpRequest | None) -> str:
    base = settings.PUBLIC_BASE_URL
    if not base and request is not None:
        base = request.build_absolute_uri("/").rstrip("/")
    return f"{base}/.well-known/oauth-protected-resource/agents/{agent.slug}"


def bearer_challenge(agent: Agent, request: HttpRequest | None, detail: str = "") -> str:
    """RFC 6750's challenge; for an agent that takes the hub's tokens, naming its RFC 9728
    metadata (where clients find the authorization server)."""
    parts = ['Bearer realm="a2a-hub"']
    if detail:
        parts.append(detail)
    if agent.oauth2:
        parts.append(f'resource_metadata="{resource_metadata_url(agent, request)}"')
    return ", ".join(parts)


def challenge(agent: Agent, request: HttpRequest | None = None, detail: str = "") -> str:
    """A WWW-Authenticate value naming how this agent wants to be called."""
    if agent.oauth2:
        return bearer_challenge(agent, request, detail)
    for scheme in (agent.security_schemes or {}).values():
        if scheme.get("type") == "apiKey":
            return f'ApiKey realm="a2a-hub", {scheme.get("in", "header")}="{scheme.get("name")}"'
        if scheme.get("type") in ("http", "oauth2", "openIdConnect"):
            return bearer_challenge(agent, request, detail)
    return f'ApiKey realm="a2a-hub", header="{DEFAULT_KEY_HEADER}"'
