"""The JSON-RPC error objects the hub answers with, whole, as each version spells them: 1.0
errors carry a google.rpc.ErrorInfo (reason and metadata), 0.3 errors carry the metadata alone
as `data`, when there is any."""

from __future__ import annotations

from typing import Any

from tests.factories.versions import V1

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
DOMAIN = "a2a-protocol.org"


def hub_error(
    version: str, code: int, message: str, reason: str, **metadata: str
) -> dict[str, Any]:
    """An error the hub itself raised (`a2ahub` errors), in `version`'s shape."""
    if version == V1:
        info = {"@type": ERROR_INFO, "reason": reason, "domain": DOMAIN, "metadata": metadata}
        return {"code": code, "message": message, "data": [info]}
    return {"code": code, "message": message} | ({"data": metadata} if metadata else {})


def invalid_params(version: str, field: str, problem: str) -> dict[str, Any]:
    """The hub's -32602 naming the one field that is wrong, and what is wrong with it."""
    message = f"Invalid params: {field}: {problem}"
    return hub_error(version, -32602, message, "INVALID_PARAMS", field=field)


def validation_failed(field: str, problem: str) -> dict[str, Any]:
    """The -32602 of the SDK's 1.0 request validator: its fields are spelled as in the .proto."""
    return {
        "code": -32602,
        "message": "Validation failed",
        "data": [
            {
                "@type": ERROR_INFO,
                "reason": "INVALID_PARAMS",
                "domain": DOMAIN,
                "metadata": {"errors": [{"field": field, "message": problem}]},
            },
            {"@type": BAD_REQUEST, "fieldViolations": [{"field": field, "description": problem}]},
        ],
    }


def task_not_found(version: str, task_id: str) -> dict[str, Any]:
    return hub_error(version, -32001, f"Task '{task_id}' was not found.", "TASK_NOT_FOUND")
