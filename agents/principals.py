"""Who is calling: every A2A request resolves to a principal before any method runs.

A principal comes from a credential: an API key (sent where the agent's card says: an
`apiKey` scheme's header, query parameter or cookie, or as an HTTP bearer token), an OAuth2
access token of the hub's authorization server (a bearer token), or the session of the
developer pages; without one, `anonymous`. A task belongs to the user behind the credential
(`user:<id>`), so a user's keys, tokens and session see the same tasks; a key without an owner
owns as itself (`apikey:<id>`), a client-credentials token as its application (`app:<id>`).

Then the agent's access rule decides whether that principal may call it (`check_access`):
401 when a credential is missing or not valid, 403 when it is valid but not enough. It is the
one rule of every path to an agent: the A2A doors, and the developer pages' chat console and
"try it" box, which call as the user's session (`session_of`; `may_call` is the rule as a
yes or no). A token whose scopes name single skills of the agent runs only those
(`check_skill`, for each message sent). Nothing
here writes the database: a principal names the credential it came with (`Credential`), and
the audit log (`agents.audit`) counts its uses and writes them, with the key's `last_used_at`,
in batches. The A2A doors call `authenticate_async`, which reads keys and tokens on the event
loop's own connections (`agents/credential_rows.py`); the rules are the same functions.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from importlib import import_module
from types import SimpleNamespace
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from a2ahub import asyncdb
from a2ahub.errors import AccessDenied, AuthenticationRequired
from a2ahub.request import Request
from agents import credential_rows
from agents import scopes as scope_rules
from agents.credential_rows import KeyRow, TokenRow, is_api_key
from agents.models import Access, Agent, ApiKey, CredentialKind, hash_key

DEFAULT_KEY_HEADER = "X-API-Key"


@dataclass(frozen=True)
class Credential:
    """What a principal presented, named for the audit log; never the secret itself."""

    kind: str  # a CredentialKind
    ref: str = ""
    api_key_id: int | None = None
    application_id: int | None = None
    token_id: int | None = None


NO_CREDENTIAL = Credential(CredentialKind.ANONYMOUS)
SESSION = Credential(CredentialKind.SESSION, "session")


@dataclass(frozen=True)
class Principal:
    id: str
    label: str
    user_id: int | None = None
    application_id: int | None = None
    # A token's scopes; None for credentials without scopes (keys, sessions), which reach
    # whatever their principal may call.
    scopes: frozenset[str] | None = None
    # How it came this time; not part of who it is (a user's key and token are one principal).
    credential: Credential = field(default=NO_CREDENTIAL, compare=False)

    @property
    def is_anonymous(self) -> bool:
        return self.id == ANONYMOUS.id

    @property
    def is_token(self) -> bool:
        return self.scopes is not None

    def reaches_skill(self, agent: Agent, skill_id: str) -> bool:
        return self.scopes is None or scope_rules.reaches_skill(self.scopes, agent.slug, skill_id)


ANONYMOUS = Principal("anonymous", "anonymous")


def presented_credentials(request: Request, agent: Agent) -> list[str]:
    """Every credential the request carries in a place the agent's card names."""
    found: list[str] = []
    schemes = agent.security_schemes or {}
    for scheme in schemes.values():
        found.extend(credential_for_scheme(request, scheme))
    if not schemes:
        found.extend(filter(None, [request.headers.get(DEFAULT_KEY_HEADER)]))
    return [c.strip() for c in found if c and c.strip()]


def bearer_token(request: Request) -> list[str]:
    method, _, token = request.headers.get("Authorization", "").partition(" ")
    return [token.strip()] if method.lower() == "bearer" and token.strip() else []


def credential_for_scheme(request: Request, scheme: dict[str, Any]) -> list[str]:
    kind = scheme.get("type")
    if kind == "apiKey":
        name = str(scheme.get("name", DEFAULT_KEY_HEADER))
        place = scheme.get("in", "header")
        value = {
            "header": request.headers.get(name),
            "query": request.query.get(name),
            "cookie": request.cookies.get(name),
        }.get(place)
        return [value] if value else []
    if kind in ("http", "oauth2", "openIdConnect"):
        return bearer_token(request)
    return []


def find_key(raw: str, agent: Agent) -> ApiKey | None:
    prefix = credential_rows.key_prefix(raw)
    if prefix is None:
        return None
    key = (
        ApiKey.objects.filter(prefix=prefix, revoked_at__isnull=True)
        .filter(Q(agent__isnull=True) | Q(agent=agent))
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, hash_key(raw)):
        return None
    return key


def key_principal(key: KeyRow) -> Principal:
    credential = Credential(CredentialKind.API_KEY, f"apikey:{key.pk}", api_key_id=key.pk)
    return Principal(key.principal, key.name, user_id=key.owner_id, credential=credential)


def token_principal(row: TokenRow, agent: Agent, request: Request) -> Principal:
    if row["expires"] <= timezone.now():
        detail = 'error="invalid_token", error_description="The access token expired"'
        raise AuthenticationRequired(
            "The access token has expired.", bearer_challenge(agent, request, detail)
        )
    granted = frozenset(row["scope"].split())
    user_id, app_id = row["user_id"], row["application_id"]
    credential = Credential(
        CredentialKind.OAUTH2_TOKEN, f"app:{app_id}/token:{row['id']}",
        application_id=app_id, token_id=row["id"],
    )  # fmt: skip
    if user_id is not None:
        if not row["user__is_active"]:
            detail = 'error="invalid_token"'
            raise AuthenticationRequired(
                "The credentials are not valid.", bearer_challenge(agent, request, detail)
            )
        return Principal(f"user:{user_id}", f"user {user_id}", user_id, application_id=app_id,
                         scopes=granted, credential=credential)  # fmt: skip
    label = row["application__name"] or "application"
    return Principal(
        f"app:{app_id}", label, application_id=app_id, scopes=granted, credential=credential
    )


def session_principal(request: Request) -> Principal | None:
    """The signed-in user of the developer pages, when the request carries their session."""
    key = request.cookies.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)
    user = get_user(cast(HttpRequest, SimpleNamespace(session=store)))  # all get_user reads
    if not user.is_authenticated:
        return None
    return session_of(user)


def session_of(user: Any) -> Principal:
    """A signed-in user as their session's principal: what the doors make of the developer
    pages' cookie, and what the pages themselves call as."""
    return Principal(f"user:{user.pk}", user.get_username(), user_id=user.pk, credential=SESSION)


def has_session_cookie(request: Request) -> bool:
    return settings.SESSION_COOKIE_NAME in request.headers.get("Cookie", "")


def credentials_to_check(request: Request, agent: Agent) -> list[str]:
    """The presented credentials, in the order they count: first those in the places the
    agent's card names, then bearer tokens (every agent takes the hub's OAuth2 tokens)."""
    return list(dict.fromkeys(presented_credentials(request, agent) + bearer_token(request)))


def resolve(
    request: Request, agent: Agent, presented: list[str], found: dict[str, Any]
) -> Principal | None:
    """The principal of the first valid credential, None when none was presented, or
    AuthenticationRequired (401) when none of those presented is valid."""
    for raw in presented:
        row = found.get(raw)
        if isinstance(row, KeyRow):
            if hmac.compare_digest(row.key_hash, hash_key(raw)):
                return key_principal(row)
        elif row is not None:
            return token_principal(row, agent, request)
    if presented:
        raise AuthenticationRequired(
            "The credentials are not valid.", challenge(agent, request, 'error="invalid_token"')
        )
    return None


def readable(request: Request, agent: Agent, presented: list[str]) -> list[str]:
    """Those of the presented credentials that may be valid here, worth a read: an API key
    counts only in a place the agent's card names."""
    named = presented_credentials(request, agent)
    return [raw for raw in presented if not is_api_key(raw) or raw in named]


def identify(request: Request, agent: Agent) -> Principal:
    """The principal behind the request's credentials, or AuthenticationRequired (401)
    when a credential is presented and is not valid."""
    presented = credentials_to_check(request, agent)
    read = readable(request, agent, presented)
    found = {raw: credential_rows.find(raw, agent.pk) for raw in read}
    # Without a credential, the session's user: no session cookie is no user.
    return resolve(request, agent, presented, found) or session_principal(request) or ANONYMOUS


async def identify_async(request: Request, agent: Agent) -> Principal:
    """`identify` from the event loop: credentials are read on its own connections (a
    session, or a database other than PostgreSQL, takes `identify`'s thread)."""
    presented = credentials_to_check(request, agent)
    if not presented or not asyncdb.available():
        return await sync_to_async(identify)(request, agent)
    found = {
        raw: await credential_rows.find_async(raw, agent.pk)
        for raw in readable(request, agent, presented)
    }
    principal = resolve(request, agent, presented, found)
    assert principal is not None  # credentials were presented: a principal, or a 401 raised
    return principal


async def authenticate_async(request: Request, agent: Agent) -> Principal:
    """The caller's principal, once the agent's access rule lets it in: AuthenticationRequired
    (HTTP 401) without a valid credential it needs, AccessDenied (HTTP 403) when the
    credential is valid but the principal or the token's scopes may not call it."""
    principal = await identify_async(request, agent)
    if agent.access == Access.LISTED and not principal.is_anonymous:
        await sync_to_async(check_access)(agent, principal, request)  # the list is one read
    else:
        check_access(agent, principal, request)
    return principal


def needs_credentials(agent: Agent) -> bool:
    return bool(agent.oauth2 or agent.access != Access.ANYONE or agent.security_requirements)


def check_access(agent: Agent, principal: Principal, request: Request | None = None) -> None:
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


def may_call(agent: Agent, principal: Principal) -> bool:
    """`check_access` as a yes or no, for pages that decide what to offer."""
    try:
        check_access(agent, principal)
    except (AuthenticationRequired, AccessDenied):
        return False
    return True


def check_skill(agent: Agent, principal: Principal, skill_id: str | None) -> None:
    """A message may run the skill it names in `metadata.skillId` only if the caller's scopes
    reach it; a message naming none runs the agent's first skill (as its card lists them), so
    that one must be reached. Keys and sessions have no scopes: every skill of an agent they
    may call. AccessDenied (403, `insufficient_scope`) otherwise. Reads the agent's skills
    when they are not loaded: call it off the event loop."""
    held = principal.scopes
    if held is None or scope_rules.reaches_every_skill(held, agent.slug):
        return
    wanted = skill_id if skill_id is not None else first_skill(agent)
    if wanted is not None and scope_rules.reaches_skill(held, agent.slug, wanted):
        return
    reached = ", ".join(scope_rules.skills_reached(held, agent.slug)) or "none"
    asked = f"skill {wanted!r}" if skill_id is not None else f"the first skill {wanted!r}"
    why = "it names" if skill_id is not None else "it names no skill (metadata.skillId), so"
    needed = scope_rules.needed_for_skill(agent.slug, wanted or "")
    raise AccessDenied(
        f"The token's scopes reach only these skills of this agent: {reached}; the message "
        f"asks for {asked} ({why} that one runs). It needs one of: {needed}.",
        bearer_challenge(agent, None, f'error="insufficient_scope", scope="{needed}"'),
    )


def first_skill(agent: Agent) -> str | None:
    skill = next(iter(agent.skills.all()), None)
    return skill.skill_id if skill is not None else None


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


def resource_metadata_url(agent: Agent, request: Request | None) -> str:
    base = request.base_url() if request is not None else settings.PUBLIC_BASE_URL
    return f"{base}/.well-known/oauth-protected-resource/agents/{agent.slug}"


def bearer_challenge(agent: Agent, request: Request | None, detail: str = "") -> str:
    """RFC 6750's challenge; for an agent that takes the hub's tokens, naming its RFC 9728
    metadata (where clients find the authorization server)."""
    parts = ['Bearer realm="a2a-hub"']
    if detail:
        parts.append(detail)
    if agent.oauth2:
        parts.append(f'resource_metadata="{resource_metadata_url(agent, request)}"')
    return ", ".join(parts)


def challenge(agent: Agent, request: Request | None = None, detail: str = "") -> str:
    """A WWW-Authenticate value naming how this agent wants to be called."""
    if agent.oauth2:
        return bearer_challenge(agent, request, detail)
    for scheme in (agent.security_schemes or {}).values():
        if scheme.get("type") == "apiKey":
            return f'ApiKey realm="a2a-hub", {scheme.get("in", "header")}="{scheme.get("name")}"'
        if scheme.get("type") in ("http", "oauth2", "openIdConnect"):
            return bearer_challenge(agent, request, detail)
    return f'ApiKey realm="a2a-hub", header="{DEFAULT_KEY_HEADER}"'
