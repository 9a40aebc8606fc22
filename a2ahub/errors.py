"""Protocol errors: the SDK's typed A2A errors, and the one place that turns any of them into
a JSON-RPC error object of either version (1.0 adds a `google.rpc.ErrorInfo` in `data`)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from a2a.utils.error_handlers import build_error_details
from a2a.utils.errors import (
    JSON_RPC_ERROR_CODE_MAP,
    A2AError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)

from a2ahub import outages

logger = logging.getLogger(__name__)

__all__ = [
    "A2AError",
    "AccessDenied",
    "AuthenticationRequired",
    "ContentTypeNotSupportedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "MethodNotFoundError",
    "PushNotificationNotSupportedError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "error_object",
    "internal_error",
    "invalid_params",
    "unavailable",
]


class AuthenticationRequired(Exception):
    """Raised before JSON-RPC runs: the caller gets HTTP 401 with a WWW-Authenticate header."""

    def __init__(self, message: str, challenge: str) -> None:
        super().__init__(message)
        self.message = message
        self.challenge = challenge


class AccessDenied(Exception):
    """Raised before JSON-RPC runs: the caller is known but may not do this; HTTP 403, with a
    WWW-Authenticate header when more token scopes would help (RFC 6750 insufficient_scope)."""

    def __init__(self, message: str, challenge: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.challenge = challenge


def invalid_params(field: str, problem: str) -> InvalidParamsError:
    return InvalidParamsError(f"Invalid params: {field}: {problem}", data={"field": field})


def unavailable(service: str) -> InternalError:
    """A service the hub needs (`service`: "message broker", "database") is away, and the
    request stored nothing: the caller may send it again."""
    return InternalError(
        f"The hub's {service} is unavailable right now; nothing was stored. Try again shortly.",
        data={"unavailable": service},
    )


def internal_error(exc: BaseException) -> InternalError:
    reference = uuid.uuid4().hex[:12]
    if isinstance(exc, outages.DATABASE_AWAY):
        # Every request fails this way while the database restarts: the outage is logged once
        # (and when it ends), each request's reference at INFO; the answer tells the caller
        # to come back rather than that the hub is broken.
        outages.DATABASE.failed(exc)
        logger.info("database unavailable (reference %s): %s", reference, exc)
        return InternalError(
            f"The hub's database is unavailable right now (reference {reference}); "
            "try again shortly.",
            data={"reference": reference, "unavailable": "database"},
        )
    logger.error("internal error %s", reference, exc_info=exc)
    return InternalError(f"Internal error (reference {reference})", data={"reference": reference})


def error_object(exc: A2AError, version: str) -> dict[str, Any]:
    error: dict[str, Any] = {
        "code": JSON_RPC_ERROR_CODE_MAP.get(type(exc), -32603),
        "message": exc.message,
    }
    if version == "1.0":
        error["data"] = build_error_details(exc)
    elif exc.data:
        error["data"] = exc.data
    return error
