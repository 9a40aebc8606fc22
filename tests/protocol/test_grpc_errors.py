"""What a gRPC caller reads when the hub refuses a call: the status code of v1.0.1 §10 and a
`google.rpc.Status` whose ErrorInfo names the A2A reason, as the SDK's client decodes it;
and how the gRPC door reads metadata and bytes that are no request."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    ExtensionSupportRequiredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from a2a.utils.grpc_status import GRPC_STATUS_DETAILS_BIN_KEY
from google.rpc import error_details_pb2, status_pb2

from a2ahub.errors import AccessDenied, AuthenticationRequired
from protocol import grpc_door, grpc_errors
from protocol.grpc_errors import Refusal


def status_of(refusal: Refusal) -> status_pb2.Status:
    raw = dict(refusal.trailers)[GRPC_STATUS_DETAILS_BIN_KEY]
    assert isinstance(raw, bytes)
    return status_pb2.Status.FromString(raw)


def error_info(refusal: Refusal) -> error_details_pb2.ErrorInfo:
    info = error_details_pb2.ErrorInfo()
    assert status_of(refusal).details[0].Unpack(info)
    return info


@pytest.mark.parametrize(
    ("error", "code", "reason"),
    [
        (TaskNotFoundError("no such task"), grpc.StatusCode.NOT_FOUND, "TASK_NOT_FOUND"),
        (TaskNotCancelableError("done"), grpc.StatusCode.FAILED_PRECONDITION,
         "TASK_NOT_CANCELABLE"),
        (InvalidParamsError("bad"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PARAMS"),
        (InvalidRequestError("bad"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"),
        (UnsupportedOperationError("no"), grpc.StatusCode.FAILED_PRECONDITION,
         "UNSUPPORTED_OPERATION"),
        (VersionNotSupportedError("no"), grpc.StatusCode.FAILED_PRECONDITION,
         "VERSION_NOT_SUPPORTED"),
        (ExtensionSupportRequiredError("x"), grpc.StatusCode.FAILED_PRECONDITION,
         "EXTENSION_SUPPORT_REQUIRED"),
        (InternalError("oops"), grpc.StatusCode.INTERNAL, "INTERNAL_ERROR"),
    ],
)  # fmt: skip
def test_each_a2a_error_has_its_status_code_and_error_info(
    error: Any, code: grpc.StatusCode, reason: str
) -> None:
    refusal = grpc_errors.refusal_of(error)
    assert refusal.code == code
    assert refusal.message == error.message
    status = status_of(refusal)
    # The SDK's client checks that the trailer's status repeats the call's code and message.
    assert (status.code, status.message) == (code.value[0], error.message)
    info = error_info(refusal)
    assert (info.reason, info.domain) == (reason, "a2a-protocol.org")


def test_error_data_travels_as_error_info_metadata_of_strings() -> None:
    error = InvalidRequestError("too many hops", data={"reason": "HOP_LIMIT", "hops": 9})
    refusal = grpc_errors.refusal_of(error)
    # A request refused for the hubs it passed through is well formed: FAILED_PRECONDITION.
    assert refusal.code == grpc.StatusCode.FAILED_PRECONDITION
    assert dict(error_info(refusal).metadata) == {"reason": "HOP_LIMIT", "hops": "9"}


def test_invalid_params_with_field_errors_add_a_bad_request() -> None:
    errors = [{"field": "message.parts", "message": "required"}]
    refusal = grpc_errors.refusal_of(InvalidParamsError("missing", data={"errors": errors}))
    bad = error_details_pb2.BadRequest()
    assert status_of(refusal).details[1].Unpack(bad)
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("message.parts", "required")
    ]


def test_missing_credentials_are_unauthenticated_with_the_challenge() -> None:
    refusal = grpc_errors.refused_caller(
        AuthenticationRequired("This agent needs credentials.", 'ApiKey realm="a2a-hub"')
    )
    assert refusal.code == grpc.StatusCode.UNAUTHENTICATED
    assert dict(refusal.trailers)["www-authenticate"] == 'ApiKey realm="a2a-hub"'
    assert error_info(refusal).reason == "UNAUTHENTICATED"


def test_a_caller_not_allowed_is_permission_denied() -> None:
    refusal = grpc_errors.refused_caller(AccessDenied("This agent is not open to you."))
    assert refusal.code == grpc.StatusCode.PERMISSION_DENIED
    assert "www-authenticate" not in dict(refusal.trailers)


def test_a_rate_limit_is_resource_exhausted_saying_when_to_retry() -> None:
    refusal = grpc_errors.over_limit(UnsupportedOperationError("slow down"), retry_after=12)
    assert refusal.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    retry = error_details_pb2.RetryInfo()
    assert status_of(refusal).details[1].Unpack(retry)
    assert retry.retry_delay.seconds == 12
    assert dict(refusal.trailers)["retry-after"] == "12"


def test_metadata_reads_as_case_insensitive_headers_without_binary_entries() -> None:
    headers = grpc_door.metadata_headers(
        [("x-api-key", "a2a_k"), ("a2a-version", "1.0"), ("trace-bin", b"\x00\x01")]
    )
    assert headers["X-API-Key"] == "a2a_k"
    assert headers.get("A2A-Version") == "1.0"
    assert "trace-bin" not in headers


def test_bytes_that_are_no_request_are_an_invalid_request_not_a_crash() -> None:
    parsed = grpc_door.safe_parser(pb.GetTaskRequest)(b"\xff\xff\xff")
    assert isinstance(parsed, grpc_door.Malformed)
    assert "GetTaskRequest" in parsed.problem
    assert grpc_door.safe_parser(pb.GetTaskRequest)(pb.GetTaskRequest(id="t").SerializeToString())


def test_a_03_version_is_refused_on_the_10_service() -> None:
    request = grpc_door.Request(
        "POST", "/", grpc_door.metadata_headers([("a2a-version", "0.3")]), "application/grpc"
    )
    with pytest.raises(VersionNotSupportedError):
        grpc_door.version_of(request)


def test_each_grpc_service_takes_its_own_version_only() -> None:
    def asking(version: str) -> grpc_door.Request:
        headers = grpc_door.metadata_headers([("a2a-version", version)] if version else [])
        return grpc_door.Request("POST", "/", headers, "application/grpc")

    assert grpc_door.version_of(asking(""), served="0.3") == "0.3"
    assert grpc_door.version_of(asking("0.3"), served="0.3") == "0.3"
    with pytest.raises(VersionNotSupportedError, match=r"lf\.a2a\.v1\.A2AService"):
        grpc_door.version_of(asking("1.0"), served="0.3")


def test_a_long_message_is_cut_to_fit_the_trailers_a_client_reads() -> None:
    # A 100 KB message made clients fail with RESOURCE_EXHAUSTED ("received metadata size
    # exceeds hard limit", 16 KB by default) instead of reading the error.
    refusal = grpc_errors.refusal_of(TaskNotFoundError("x" * 100_000))

    size = sum(len(key) + len(value) for key, value in refusal.trailers)
    assert size < 16 * 1024
    assert refusal.code == grpc.StatusCode.NOT_FOUND
    assert status_of(refusal).message == refusal.message == "x" * grpc_errors.MAX_MESSAGE
