"""The API's errors in the registry's shape, `{"error": {"code", "status", "message",
"field"}}`; a refused body names its first faulty field and lists every fault in `fields`."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from registry import errors as registry_errors


def first_fault(detail: Any, path: str = "") -> tuple[str, str]:
    """The first (field path, message) of a DRF error tree, e.g. ("skills[0].tags", "...")."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int) or str(key).isdigit():  # an item of a list (skills)
                return first_fault(value, f"{path}[{key}]")
            name = "" if key == "non_field_errors" else str(key)
            inner = f"{path}.{name}" if path and name else (name or path)
            return first_fault(value, inner)
    if isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, (dict, list)) and value:
                return first_fault(value, f"{path}[{index}]")
            if not isinstance(value, (dict, list)):
                return path, str(value)
    return path, str(detail)


def handle(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ValidationError):
        field, message = first_fault(exc.detail)
        response = registry_errors.error_response(400, message, field)
        response.data["error"]["fields"] = exc.detail
        return response
    if isinstance(exc, Conflict):
        response = registry_errors.error_response(409, exc.message, exc.field)
        response.data["error"]["status"] = "FAILED_PRECONDITION"
        return response
    return registry_errors.handle(exc, context)


class Conflict(registry_errors.ApiError):
    """The thing is not in a state that allows the action (a finished task is not canceled)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(409, message, field)
