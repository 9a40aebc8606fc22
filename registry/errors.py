"""The registry API's errors, in the hub's `google.rpc.Status`-like shape: `{"error": {"code",
"status", "message", "field"}}`, whatever raised them (our refusals or DRF's own)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework.response import Response
from rest_framework.views import exception_handler

from a2ahub.uncarriable import first_uncarriable, problem
from agents.views import public_base_url
from registry.actions import Refused
from registry.shapes import BadSubmission

STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED", 409: "ALREADY_EXISTS", 410: "EXPIRED", 413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}  # fmt: skip


CHALLENGE = 'Bearer realm="a2a-hub"'


class ApiError(Exception):
    def __init__(self, status: int, message: str, field: str = "", challenge: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.challenge = challenge


def insufficient_scope(scope: str, what: str) -> ApiError:
    """RFC 6750's answer to a valid credential whose scopes do not reach the resource."""
    return ApiError(
        403, f"{what} takes a credential holding the {scope!r} scope; this one does not.",
        challenge=f'{CHALLENGE}, error="insufficient_scope", scope="{scope}"',
    )  # fmt: skip


def refuse_uncarriable(document: Any, where: str = "body") -> None:
    """400 naming the first string (of a body, or of the path and query parameters) the hub
    cannot carry: U+0000, which PostgreSQL cannot store or compare, or a lone surrogate.
    Found before any of it reaches a query, so every database gives the same answer."""
    found = first_uncarriable(document)
    if found is not None:
        path, text, is_name = found
        field = path or where
        raise ApiError(400, f"{field} {problem(text, is_name)}.", field)


def error_response(status: int, message: str, field: str = "", challenge: str = "") -> Response:
    error: dict[str, Any] = {"code": status, "status": STATUS_NAMES.get(status, "UNKNOWN"),
                             "message": message}  # fmt: skip
    if field:
        error["field"] = field
    response = Response({"error": error}, status=status)
    if challenge or status == 401:
        response["WWW-Authenticate"] = challenge or CHALLENGE
    return response


def handle(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = answer(exc, context)
    if response is not None and "WWW-Authenticate" in response:
        response["WWW-Authenticate"] = naming_metadata(response["WWW-Authenticate"], context)
    return response


def answer(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.message, exc.field, exc.challenge)
    if isinstance(exc, (BadSubmission, Refused)):
        return error_response(exc.status, exc.message, exc.field)
    response = exception_handler(exc, context)
    if response is not None:
        detail = getattr(exc, "detail", None) or str(exc)
        replaced = error_response(response.status_code, str(detail))
        for header in ("WWW-Authenticate", "Allow", "Retry-After"):
            if header in response:
                replaced[header] = response[header]
        return replaced
    return None


def naming_metadata(challenge: str, context: dict[str, Any]) -> str:
    """The hub's Bearer challenge, naming its RFC 9728 metadata: where a client finds the
    authorization server that issues the scope it lacks."""
    request = context.get("request")
    if not challenge.startswith(CHALLENGE) or request is None or "resource_metadata" in challenge:
        return challenge
    metadata = public_base_url(request._request) + reverse("oauth-resource-metadata")
    return f'{challenge}, resource_metadata="{metadata}"'
