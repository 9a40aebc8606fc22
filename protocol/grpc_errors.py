"""A2A errors as gRPC statuses (v1.0.1 §10): the status code of the SDK's error table, and a
`google.rpc.Status` in the `grpc-status-details-bin` trailer whose details are the same
ErrorInfo (reason, domain `a2a-protocol.org`, metadata) and BadRequest the other bindings
send, so the SDK's gRPC client raises the same typed error it raises over JSON-RPC.

Refusals before the protocol (no credential, not allowed, over a limit) have no A2A error of
their own: UNAUTHENTICATED, PERMISSION_DENIED and RESOURCE_EXHAUSTED, with the challenge
and the wait in trailers as HTTP's headers would carry them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import grpc
from a2a.utils.error_handlers import A2A_DOMAIN, build_error_details
from a2a.utils.errors import A2A_ERROR_MAPPING
from a2a.utils.grpc_status import status_to_grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.json_format import ParseDict
from google.rpc import error_details_pb2, status_pb2

from a2ahub.errors import A2AError, AccessDenied, AuthenticationRequired

# The hop limit is an invalid request in JSON-RPC and HTTP+JSON, but over gRPC the request is
# well formed and refused for where it has been (docs PROTOCOL.md §12).
HOP_LIMIT = "HOP_LIMIT"


@dataclass(frozen=True)
class Refusal:
    """A status to end a call with: its code, message, and trailing metadata (the status's
    details, a challenge)."""

    code: grpc.StatusCode
    message: str
    trailers: tuple[tuple[str, str | bytes], ...] = ()


def code_of(error: A2AError) -> grpc.StatusCode:
    data = error.data if isinstance(error.data, dict) else {}
    if data.get("reason") == HOP_LIMIT:
        return grpc.StatusCode.FAILED_PRECONDITION
    mapping = A2A_ERROR_MAPPING.get(type(error))
    return grpc.StatusCode[mapping.grpc_status] if mapping else grpc.StatusCode.INTERNAL


def text_metadata(metadata: dict[str, Any]) -> dict[str, str]:
    """ErrorInfo's metadata is a map of strings: other values go as their JSON."""
    return {
        str(key): value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for key, value in metadata.items()
    }


def detail_of(detail: dict[str, Any]) -> any_pb2.Any:
    if "metadata" in detail:
        detail = {**detail, "metadata": text_metadata(detail["metadata"])}
    packed = any_pb2.Any()
    ParseDict(detail, packed)
    return packed


# A status travels in the trailers, which clients cap (16 KB by default in gRPC's C core): a
# longer message made the client see RESOURCE_EXHAUSTED instead of the error.
MAX_MESSAGE = 4096


def refusal_of(
    error: A2AError, extra: tuple[Any, ...] = (), code: grpc.StatusCode | None = None
) -> Refusal:
    """The status of an A2A error: the details the SDK builds for every binding, and any
    `extra` detail messages (a RetryInfo)."""
    chosen = code or code_of(error)
    status = status_pb2.Status(code=chosen.value[0], message=error.message[:MAX_MESSAGE])
    status.details.extend(detail_of(detail) for detail in build_error_details(error))
    for message in extra:
        packed = status.details.add()
        packed.Pack(message)
    rich = status_to_grpc(status)
    return Refusal(rich.code, rich.details, tuple(rich.trailing_metadata))


def refused_caller(exc: AuthenticationRequired | AccessDenied) -> Refusal:
    """No usable credentials (UNAUTHENTICATED) or a caller who may not (PERMISSION_DENIED):
    an ErrorInfo whose reason is the code's name, and the challenge when there is one."""
    denied = isinstance(exc, AccessDenied)
    code = grpc.StatusCode.PERMISSION_DENIED if denied else grpc.StatusCode.UNAUTHENTICATED
    info = error_details_pb2.ErrorInfo(reason=code.name, domain=A2A_DOMAIN)
    status = status_pb2.Status(code=code.value[0], message=exc.message)
    status.details.add().Pack(info)
    rich = status_to_grpc(status)
    trailers: tuple[tuple[str, str | bytes], ...] = tuple(rich.trailing_metadata)
    if exc.challenge:
        trailers += (("www-authenticate", exc.challenge),)
    return Refusal(rich.code, rich.details, trailers)


def over_limit(error: A2AError, retry_after: int | None) -> Refusal:
    """A limit (rate, concurrency, size): RESOURCE_EXHAUSTED, with a RetryInfo saying when to
    try again where HTTP would send Retry-After."""
    extra: tuple[Any, ...] = ()
    if retry_after is not None:
        delay = duration_pb2.Duration(seconds=retry_after)
        extra = (error_details_pb2.RetryInfo(retry_delay=delay),)
    refusal = refusal_of(error, extra, grpc.StatusCode.RESOURCE_EXHAUSTED)
    if retry_after is None:
        return refusal
    return Refusal(
        refusal.code, refusal.message, (*refusal.trailers, ("retry-after", str(retry_after)))
    )
