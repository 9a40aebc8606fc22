"""Who may call the operators' API: staff, and only staff. Their staff session (the admin's), a
hub-wide API key whose owner is a staff user, or an OAuth2 access token of the hub whose user
is active staff and that holds the `operator` scope, as the registry takes them (a bearer
token, or X-API-Key for keys). Anonymous callers get 401 with a challenge, everyone else 403:
a client-credentials token has no user, so it is never staff."""

from __future__ import annotations

from typing import Any

from oauth2_provider.models import AccessToken
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from agents.scopes import OPERATOR
from registry.auth import AUTHENTICATION, token_scopes
from registry.errors import insufficient_scope

__all__ = ["AUTHENTICATION", "IsOperator", "operator_name"]


class IsOperator(BasePermission):
    message = "The operators' API is for staff users only."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        staff = bool(user and user.is_authenticated and user.is_active and user.is_staff)
        token = request.auth
        if staff and isinstance(token, AccessToken) and OPERATOR not in token_scopes(token):
            raise insufficient_scope(OPERATOR, "The operators' API")
        return staff


def operator_name(request: Request) -> str:
    return str(request.user.get_username())
