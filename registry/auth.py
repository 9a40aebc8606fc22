"""Who calls the registry API. Until OAuth2 lands, registering takes a hub-wide API key (one
not bound to an agent: those are for calling that agent) as a bearer token or in X-API-Key;
operators may also use their staff session. API keys carry no scopes yet, so any hub-wide
key may register."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from agents.models import ApiKey
from agents.principals import DEFAULT_KEY_HEADER, find_key
from registry.actions import Caller
from registry.errors import CHALLENGE


def presented_key(request: Request) -> str:
    method, _, token = request.headers.get("Authorization", "").partition(" ")
    if method.lower() == "bearer" and token.strip():
        return token.strip()
    return (request.headers.get(DEFAULT_KEY_HEADER) or "").strip()


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
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
        return (key.owner or AnonymousUser(), key)

    def authenticate_header(self, request: Request) -> str:
        return CHALLENGE


def caller_of(request: Request) -> Caller | None:
    """The caller's principal, or None when the request carries no credentials."""
    if isinstance(request.auth, ApiKey):
        return Caller(request.auth.principal, request.auth.owner, operator=False)
    user = request.user
    if user is not None and user.is_authenticated:
        return Caller(f"user:{user.pk}", user, operator=bool(user.is_staff))
    return None


AUTHENTICATION = [ApiKeyAuthentication, SessionAuthentication]
