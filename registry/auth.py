"""Who calls the registry API (and, with the same classes, the operators' API): a hub-wide API
key (one not bound to an agent) as a bearer token or in X-API-Key, an OAuth2 access token of
the hub's own authorization server as a bearer token (django-oauth-toolkit's DRF
authentication), or a signed-in session. Registering takes the `registry` scope: keys and
tokens must hold it; a session is its user acting in person and needs none."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from oauth2_provider.contrib.rest_framework import OAuth2Authentication
from oauth2_provider.models import AccessToken
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from agents.credential_rows import is_api_key
from agents.models import ApiKey
from agents.principals import DEFAULT_KEY_HEADER, find_key
from agents.scopes import OPERATOR
from registry.actions import Caller
from registry.errors import CHALLENGE


def bearer_of(request: Request) -> str:
    method, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if method.lower() == "bearer" else ""


def presented_key(request: Request) -> str:
    """An API key: in X-API-Key, or as a bearer token (the hub's keys start with `a2a_`)."""
    raw = bearer_of(request)
    if raw and is_api_key(raw):
        return raw
    return (request.headers.get(DEFAULT_KEY_HEADER) or "").strip()


def challenge(request: Request) -> str:
    """RFC 6750's challenge; a request that sent a credential is told it is not valid."""
    if bearer_of(request) or request.headers.get(DEFAULT_KEY_HEADER):
        return f'{CHALLENGE}, error="invalid_token"'
    return CHALLENGE


LAST_USE_GRANULARITY = timedelta(minutes=1)


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        raw = presented_key(request)
        if not raw:
            return None
        key = find_key(raw, None)  # type: ignore[arg-type]  # None: hub-wide keys only
        if key is None or key.agent_id is not None:
            raise AuthenticationFailed(
                "The API key is not valid here (or it is bound to one agent)."
            )
        now = timezone.now()
        # At most once a minute, as the A2A doors' batched writes keep it: not a write a call.
        if key.last_used_at is None or now - key.last_used_at > LAST_USE_GRANULARITY:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return (key.owner or AnonymousUser(), key)

    def authenticate_header(self, request: Request) -> str:
        return challenge(request)


class HubTokenAuthentication(OAuth2Authentication):
    """django-oauth-toolkit's check of the hub's own access tokens, made strict: a bearer token
    that is not valid (unknown, expired, revoked, its user inactive) is refused with 401
    rather than passed over, and a client-credentials token (no user) is anonymous as a user
    but still authenticated as its application."""

    www_authenticate_realm = "a2a-hub"

    def authenticate(self, request: Request) -> tuple[Any, AccessToken] | None:
        raw = bearer_of(request)
        if not raw or is_api_key(raw):
            return None
        found = super().authenticate(request)
        if found is None:
            raise AuthenticationFailed(
                "The access token is not valid (unknown, expired or revoked)."
            )
        user, token = found
        if user is not None and not user.is_active:
            raise AuthenticationFailed("The access token's user is not active.")
        return (user or AnonymousUser(), token)

    def authenticate_header(self, request: Request) -> str:
        return challenge(request)


def token_scopes(token: AccessToken) -> frozenset[str]:
    return frozenset(token.scope.split())


def caller_of(request: Request) -> Caller | None:
    """The caller's principal, or None when the request carries no credentials."""
    auth = request.auth
    if isinstance(auth, ApiKey):
        return Caller(auth.principal, auth.owner, scopes=frozenset(auth.scopes or []))
    if isinstance(auth, AccessToken):
        granted = token_scopes(auth)
        if auth.user_id is None:
            return Caller(f"app:{auth.application_id}", None, scopes=granted)
        staff = bool(auth.user.is_staff) and OPERATOR in granted
        return Caller(f"user:{auth.user_id}", auth.user, operator=staff, scopes=granted)
    user = request.user
    if user is not None and user.is_authenticated:
        return Caller(f"user:{user.pk}", user, operator=bool(user.is_staff))
    return None


AUTHENTICATION = [ApiKeyAuthentication, HubTokenAuthentication, SessionAuthentication]
