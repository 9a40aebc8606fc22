"""Who may call the operators' API: staff, and only staff. Their staff session (the admin's),
or a hub-wide API key whose owner is a staff user, as the registry takes it (a bearer token
or X-API-Key). Anonymous callers get 401 with a challenge, everyone else 403."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from registry.auth import AUTHENTICATION

__all__ = ["AUTHENTICATION", "IsStaff", "operator_name"]


class IsStaff(BasePermission):
    message = "The operators' API is for staff users only."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.is_active and user.is_staff)


def operator_name(request: Request) -> str:
    return str(request.user.get_username())
