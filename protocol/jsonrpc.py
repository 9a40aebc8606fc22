"""The JSON-RPC 2.0 binding of one agent: checks at the door, the envelope, the version, then
the method table. Both protocol versions share this endpoint and the handlers behind it.

Strings the hub cannot carry (a lone surrogate anywhere, U+0000 in params) are refused before
any handler runs (`protocol.strings`), and every answer is a JSON-RPC envelope, even when its
result cannot be encoded."""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from functools import partial
from typing import Any

from a2a.types import a2a_pb2 as pb
from a2a.utils.proto_utils import validate_proto_required_fields
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from google.protobuf.json_format import ParseDict, ParseError

from a2ahub.errors import (
    A2AError,
    AuthenticationRequired,
    ContentTypeNotSupportedError,
    ExtensionSupportRequiredError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
    error_object,
    internal_error,
    invalid_params,
)
from agents import cards
from agents.lookup import cached_agent, find_agent
from agents.models import Agent
from agents.principals import ANONYMOUS, DEFAULT_KEY_HEADER, Principal, authenticate
from agents.views import json_not_found, public_base_url, requested_version
from protocol import limits, strings
from protocol.calls import Call
from protocol.method_table import V03_METHODS, V1_METHODS, Method, resolve
from protocol.sse import sse_error, sse_response
from protocol.v03 import PARAMS_IN, RESULT_OUT
from tasks.wire import V03, V1, to_json

SUPPORTED_VERSIONS = (V03, V1)
SEND_METHODS = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}


class Rejection(Exception):
    """A request refused before JSON-RPC begins, with its own HTTP status."""

    def __init__(self, status: int, error: A2AError) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error


def rpc_response(request_id: Any, version: str, result: Any = None,
                 error: A2AError | None = None, status: int = 200) -> JsonResponse:  # fmt: skip
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        body["error"] = error_object(error, version)
    else:
        body["result"] = result
    try:
        return JsonResponse(body, status=status, json_dumps_params={"ensure_ascii": False})
    except UnicodeEncodeError as exc:
        # A lone surrogate no UTF-8 can carry, from somewhere the request's checks do not
        # reach (an agent's own output, say): still a JSON-RPC answer.
        if isinstance(request_id, str) and not strings.is_unicode(request_id):
            request_id = None
        return rpc_response(request_id, version, error=internal_error(exc), status=status)


def answer_version(requested: str) -> str:
    """The version an error's shape follows before (or when) the version itself is checked:
    0.3 without the header or with 0.3; else 1.0. The header is a 1.0-era parameter (0.3
    clients send none, or 0.3), so a client naming another version reads 1.0's ErrorInfo, and
    a 0.3 client would take it too (its `data` is free-form)."""
    return V03 if requested in ("", V03) else V1


def request_version(request: HttpRequest) -> str:
    raw = (request.headers.get("A2A-Version") or request.GET.get("A2A-Version") or "").strip()
    if not raw:
        return V03
    version = ".".join(raw.split(".")[:2])
    if version not in SUPPORTED_VERSIONS:
        raise VersionNotSupportedError(
            f"A2A version {raw!r} is not served here; use one of {', '.join(SUPPORTED_VERSIONS)}."
        )
    return version


def check_door(request: HttpRequest) -> bytes:
    """Size and media type come before anything is parsed."""
    declared = request.headers.get("Content-Length", "")
    limit = settings.A2A_MAX_REQUEST_BYTES
    if declared.isdigit() and int(declared) > limit:
        raise Rejection(413, InvalidRequestError(f"The request body is over {limit} bytes."))
    media = (request.content_type or "").lower()
    if media != "application/json" and not media.endswith("+json"):
        raise Rejection(415, ContentTypeNotSupportedError("Send JSON-RPC as application/json."))
    try:
        body = request.body
    except RequestDataTooBig:
        raise Rejection(
            413, InvalidRequestError(f"The request body is over {limit} bytes.")
        ) from None
    if len(body) > limit:
        raise Rejection(413, InvalidRequestError(f"The request body is over {limit} bytes."))
    return body


def parse_json(body: bytes) -> dict[str, Any]:
    try:
        # Strict UTF-8, JSON's encoding (RFC 8259 8.1): json.loads(bytes) would let bytes that
        # spell a surrogate through. A byte order mark is ignored, as json.loads did.
        envelope = json.loads(body.removeprefix(codecs.BOM_UTF8).decode())
    except (ValueError, UnicodeDecodeError):
        raise JSONParseError("The body is not valid JSON.") from None
    except RecursionError:
        raise JSONParseError("The body is nested too deeply.") from None
    if isinstance(envelope, list):
        raise InvalidRequestError("Batch requests are not supported.")
    if not isinstance(envelope, dict):
        raise InvalidRequestError("A request must be a JSON object.")
    return envelope


def envelope_id(envelope: dict[str, Any]) -> Any:
    """The id to answer with; a request without one still gets an answer (with a null id),
    and so does one whose id cannot be echoed."""
    request_id = envelope.get("id")
    if isinstance(request_id, str):
        if not strings.is_unicode(request_id):
            raise InvalidRequestError(f'The request "id" holds {strings.LONE_SURROGATE}.')
        return request_id
    if request_id is None or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return request_id
    raise InvalidRequestError('A request "id" must be a string, a number or null.')


def parse_envelope(envelope: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if envelope.get("jsonrpc") != "2.0":
        raise InvalidRequestError('A request must say "jsonrpc": "2.0".')
    method = envelope.get("method")
    if not isinstance(method, str) or not method:
        raise InvalidRequestError('A request needs a "method" string.')
    if not strings.is_unicode(method):
        raise InvalidRequestError(f'The request "method" holds {strings.LONE_SURROGATE}.')
    params = envelope.get("params", {})
    if not isinstance(params, dict):
        raise invalid_params("params", "must be an object")
    return method, params


def find_method(method: str, version: str) -> Method:
    table = V1_METHODS if version == V1 else V03_METHODS
    if method in table:
        return table[method]
    if version == V03 and method in V1_METHODS:
        raise VersionNotSupportedError(
            f"{method} is an A2A 1.0 method: send the header A2A-Version: 1.0."
        )
    raise MethodNotFoundError(f"Method {method!r} is not available.")


def check_extensions(request: HttpRequest, agent: Agent, method: str) -> frozenset[str]:
    raw = request.headers.get("A2A-Extensions") or request.headers.get("X-A2A-Extensions") or ""
    declared = frozenset(uri.strip() for uri in raw.split(",") if uri.strip())
    if method in SEND_METHODS:
        for ext in agent.declared_extensions():
            if ext.get("required") and ext.get("uri") not in declared:
                raise ExtensionSupportRequiredError(
                    f"This agent requires the extension {ext.get('uri')}; "
                    "declare it in the A2A-Extensions header."
                )
    return declared


def parse_params(method: Method, params: dict[str, Any], version: str) -> Any:
    if version == V03:
        return PARAMS_IN[method.adapter](params)
    try:
        request = ParseDict(params, method.request())
    except ParseError as exc:
        if "has no field named" not in str(exc):
            raise invalid_params(failed_field(str(exc)), str(exc)) from None
        # Fields this version does not know are ignored; bad values never are.
        try:
            request = ParseDict(params, method.request(), ignore_unknown_fields=True)
        except ParseError as again:
            raise invalid_params(failed_field(str(again)), str(again)) from None
    validate_proto_required_fields(request)
    return request


def failed_field(problem: str) -> str:
    """The JSON name of the field a protobuf parse error names ("params" when none)."""
    match = re.search(r"Failed to parse (\w+) field", problem)
    if match is None:
        return "params"
    head, *rest = match.group(1).split("_")
    return head + "".join(part.title() for part in rest)


def render_result(method: Method, result: Any, version: str, call: Call) -> Any:
    if version == V03:
        return RESULT_OUT[method.adapter](result)
    if method.handler == "protocol.handlers.tasks.send_message":
        from tasks.wire import send_result_json

        return send_result_json(result, V1)
    if method.handler == "protocol.handlers.cards.get_extended_card":
        return cards.card_document(result, cards.V1_0)
    if isinstance(result, pb.ListTasksResponse):
        # nextPageToken and totalSize are required even when empty or zero.
        listed = to_json(result)
        listed.setdefault("tasks", [])
        listed.setdefault("nextPageToken", "")
        listed.setdefault("totalSize", 0)
        listed.setdefault("pageSize", result.page_size)
        return listed
    return to_json(result)


def last_event_id(request: HttpRequest) -> int | None:
    raw = request.headers.get("Last-Event-ID", "").strip()
    return int(raw) if raw.isdigit() else None


def unauthorized(exc: AuthenticationRequired) -> JsonResponse:
    response = JsonResponse({"error": {"code": 401, "status": "UNAUTHENTICATED",
                                       "message": exc.message}}, status=401)  # fmt: skip
    response["WWW-Authenticate"] = exc.challenge
    return response


@dataclass
class Exchange:
    """What is known of a request so far, so that any error is answered in its terms."""

    request_id: Any = None
    version: str = V03
    # 0.3 clients read a streaming method's answer as a stream, errors included.
    stream_errors: bool = False

    def failure(self, error: A2AError) -> HttpResponseBase:
        if self.stream_errors:
            return sse_error(self.request_id, error, self.version)
        return rpc_response(self.request_id, self.version, error=error)


async def authenticate_caller(request: HttpRequest, agent: Agent) -> Principal:
    # An open agent asked without credentials needs no database, so no thread hop either.
    open_agent = not agent.security_schemes and not agent.security_requirements
    if open_agent and DEFAULT_KEY_HEADER not in request.headers:
        return ANONYMOUS
    return await sync_to_async(authenticate)(request, agent)


def has_limits(agent: Agent) -> bool:
    return bool(agent.requests_per_minute or agent.max_concurrent_tasks or agent.max_message_bytes)


def check_limits(agent: Agent, principal: Principal, size: int, method_name: str) -> None:
    limits.check_size(agent, size)
    limits.check_rate(agent, principal.id)
    if method_name in SEND_METHODS:
        limits.check_concurrency(agent)


async def handle(request: HttpRequest, agent: Agent, ex: Exchange) -> HttpResponseBase:
    # Errors met before the version is checked (and that check's own) go out in the shape of
    # the version the header names.
    ex.version = answer_version(requested_version(request))
    body = check_door(request)
    principal = await authenticate_caller(request, agent)
    envelope = parse_json(body)
    ex.request_id = envelope_id(envelope)
    method_name, params = parse_envelope(envelope)
    ex.version = request_version(request)
    method = find_method(method_name, ex.version)
    if has_limits(agent):
        await sync_to_async(check_limits)(agent, principal, len(body), method_name)
    ex.stream_errors = method.streaming and ex.version == V03
    extensions = check_extensions(request, agent, method_name)
    call = Call(agent, principal, ex.version, partial(public_base_url, request), extensions,
                last_event_id(request))  # fmt: skip
    if method.streaming and not agent.streaming:
        raise UnsupportedOperationError("This agent does not stream.")
    if strings.may_hold_uncarriable(body):
        strings.check_params(params)
    result = await resolve(method.handler)(call, parse_params(method, params, ex.version))
    if method.streaming:
        return sse_response(result, ex.request_id, ex.version)
    return rpc_response(ex.request_id, ex.version, render_result(method, result, ex.version, call))


@csrf_exempt
async def endpoint(request: HttpRequest, slug: str) -> HttpResponseBase:
    if request.method != "POST":
        response = JsonResponse(
            {"error": {"code": 405, "message": "POST JSON-RPC here."}}, status=405
        )
        response["Allow"] = "POST"
        return response
    agent = cached_agent(slug)
    if agent is False:
        agent = await sync_to_async(find_agent)(slug)
    if not isinstance(agent, Agent):
        return json_not_found(f"No agent named {slug!r} is served here.")
    ex = Exchange()
    try:
        return await handle(request, agent, ex)
    except AuthenticationRequired as exc:
        return unauthorized(exc)
    except Rejection as exc:
        return rpc_response(None, ex.version, error=exc.error, status=exc.status)
    except limits.LimitExceeded as exc:
        response = rpc_response(ex.request_id, ex.version, error=exc.error, status=exc.status)
        if exc.retry_after is not None:
            response["Retry-After"] = str(exc.retry_after)
        return response
    except A2AError as exc:
        return ex.failure(exc)
    except Exception as exc:
        return ex.failure(internal_error(exc))
