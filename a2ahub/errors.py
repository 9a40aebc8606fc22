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

logger = logging.getLogger(__name__)

__all__ = [
    "A2AError",
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
]


class AuthenticationRequired(Exception):
    """Raised before JSON-RPC runs: the caller gets HTTP 401 with a WWW-Authenticate header."""

    def __init__(self, message: str, challenge: str) -> None:
        super().__init__(message)
        self.message = message
        self.challenge = challenge


def invalid_params(field: str, problem: str) -> InvalidParamsError:
    return InvalidParamsError(f"Invalid params: {field}: {problem}", data={"field": field})


def internal_error(exc: BaseException) -> InternalError:
    reference = uuid.uuid4().hex[:12]
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
