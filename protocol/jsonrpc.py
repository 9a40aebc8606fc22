"""The JSON-RPC 2.0 binding of one agent: checks at the door, the envelope, the version, then
the method table. Both protocol versions share this endpoint and the handlers behind it, and
so do the pre-0.2 methods (`protocol.v01`), which come without a version header like 0.3's.

Strings the hub cannot carry (a lone surrogate anywhere, U+0000 in params) are refused before
any handler runs (`protocol.strings`), and every answer is a JSON-RPC envelope, even when its
result cannot be encoded."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from asgiref.sync import sync_to_async
from django.http import HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from google.protobuf.json_format import ParseError

from a2ahub import big_bodies, jsonbytes, request_id, tracing
from a2ahub.errors import (
    A2AError,
    AccessDenied,
    AuthenticationRequired,
    InvalidRequestError,
    MethodNotFoundError,
    TaskNotFoundError,
    VersionNotSupportedError,
    error_object,
    internal_error,
    invalid_params,
)
from a2ahub.request import Request
from agents.models import Agent
from agents.views import json_not_found
from protocol import bulk, door, limits, request_caps, strings, v01
from protocol.calls import Call
from protocol.method_table import V01_METHODS, V03_METHODS, V1_METHODS, Method, resolve
from protocol.results import v1_result
from protocol.sse import Framing, jsonrpc_framing, sse_error, sse_response
from protocol.v03 import PARAMS_IN, RESULT_OUT
from tasks.wire import V01, V03, V1

SEND_METHODS = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream",
                "tasks/send", "tasks/sendSubscribe"}  # fmt: skip


def rpc_response(request_id: Any, version: str, result: Any = None,
                 error: A2AError | None = None, status: int = 200) -> HttpResponse:  # fmt: skip
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        body["error"] = error_object(error, version)
    else:
        body["result"] = result
    try:
        # orjson: several times faster, and one 10 MB answer held the GIL 50 ms less.
        content = jsonbytes.dumps(body)
        return HttpResponse(content, content_type="application/json", status=status)
    except UnicodeEncodeError as exc:
        # A lone surrogate no UTF-8 can carry, from somewhere the request's checks do not
        # reach (an agent's own output, say): still a JSON-RPC answer.
        if isinstance(request_id, str) and not strings.is_unicode(request_id):
            request_id = None
        return rpc_response(request_id, version, error=internal_error(exc), status=status)


def error_version(request: Request) -> str:
    """The version an error's shape follows before (or when) the version itself is checked:
    0.3 without the header or with 0.3; else 1.0. The header is a 1.0-era parameter (0.3
    clients send none, or 0.3), so a client naming another version reads 1.0's ErrorInfo, and
    a 0.3 client would take it too (its `data` is free-form)."""
    return V03 if door.major_minor(door.raw_version(request)) in ("", V03) else V1


def parse_json(body: bytes) -> dict[str, Any]:
    envelope = door.decode_json(body)
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
    table = {V1: V1_METHODS, V01: V01_METHODS}.get(version, V03_METHODS)
    if method in table:
        return table[method]
    if version == V03 and method in V1_METHODS:
        raise VersionNotSupportedError(
            f"{method} is an A2A 1.0 method: send the header A2A-Version: 1.0."
        )
    raise MethodNotFoundError(f"Method {method!r} is not available.")


def parse_params(method: Method, params: dict[str, Any], version: str) -> Any:
    if version == V1:
        return door.parse_message(params, method.request())
    adapters = PARAMS_IN if version == V03 else v01.PARAMS_IN
    try:
        return adapters[method.adapter](params)
    except ParseError as exc:
        # The SDK's conversion to 1.0 meets protobuf's limits (a Struct nested past its
        # depth) after the older version's model accepted the params.
        raise invalid_params("params", str(exc)) from None


def render_result(
    method: Method, result: Any, version: str, params: dict[str, Any] | None = None
) -> Any:
    if version == V03:
        return RESULT_OUT[method.adapter](result)
    if version == V01:
        return v01.render(method, result, params or {})
    if result is None:
        return None
    return v1_result(method, result)


@dataclass
class Exchange:
    """What is known of a request so far, so that any error is answered in its terms."""

    request_id: Any = None
    version: str = V03
    # 0.3 clients read a streaming method's answer as a stream, errors included.
    stream_errors: bool = False
    # What the request metrics name: known as the request is read, empty until then.
    agent: str = ""
    method: str = ""
    code: str = "ok"
    # Why the agent the URL names is away (an expired registration), answered as an error.
    absent: A2AError | None = None

    def failure(self, error: A2AError) -> HttpResponseBase:
        if self.stream_errors:
            return sse_error(error, jsonrpc_framing(self.request_id, self.version))
        return rpc_response(self.request_id, self.version, error=error)


async def handle(request: Request, agent: Agent | None, ex: Exchange) -> HttpResponseBase:
    """One JSON-RPC request to `agent`, or, on the shared endpoint (`agent` None), to the
    agent its 1.0 `params.tenant` names."""
    # Errors met before the version is checked (and that check's own) go out in the shape of
    # the version the header names.
    ex.version = error_version(request)
    door.check_media(request, "Send JSON-RPC as application/json.")
    body = request.body
    if agent is not None:
        ex.agent = agent.slug
        principal = await door.authenticate_caller(request, agent)
    envelope = await big_bodies.off_loop(len(body), parse_json, body)
    ex.request_id = envelope_id(envelope)
    method_name, params = parse_envelope(envelope)
    await big_bodies.off_loop(len(body), request_caps.check, body, params)
    ex.version = v01.version_of(method_name, params, door.parse_version(door.raw_version(request)))
    method = find_method(method_name, ex.version)
    ex.method = method_name
    if agent is None:
        if ex.absent is not None:
            raise ex.absent
        agent = await tenant_agent(params, ex.version)
        ex.agent = agent.slug
        principal = await door.authenticate_caller(request, agent)
    sending = method_name in SEND_METHODS
    if door.has_limits(agent):
        await sync_to_async(door.check_limits)(agent, principal, len(body), sending)
    ex.stream_errors = method.streaming and ex.version != V1
    extensions = door.check_extensions(request.headers, agent, sending)
    call = Call(agent, principal, ex.version, request.base_url, extensions,
                door.last_event_id(request), hops=door.check_hops(request))  # fmt: skip
    door.start_call(call, method)
    read = await big_bodies.off_loop(len(body), read_params, method, params, ex.version, body)
    try:
        result = await resolve(method.handler)(call, read)
    except TaskNotFoundError:
        if not v01.names_client_task(method_name, ex.version):
            raise
        # No task the hub named so: perhaps one a 0.1 caller named so itself.
        ex.version, method, call = V01, V01_METHODS[method_name], replace(call, version=V01)
        result = await resolve(method.handler)(call, parse_params(method, params, ex.version))
    tracing.note_result(result)
    if method.streaming:
        return sse_response(result, stream_framing(ex, params))
    size = max(len(body), big_bodies.size_of(result))
    return await big_bodies.off_loop(size, answer_of, ex, method, result, params)


def read_params(method: Method, params: dict[str, Any], version: str, body: bytes) -> Any:
    """The method's request read from `params`, once no string in it is one the hub cannot
    carry."""
    if strings.may_hold_uncarriable(body):
        strings.check_params(params)
    return parse_params(method, params, version)


def answer_of(ex: Exchange, method: Method, result: Any, params: dict[str, Any]) -> HttpResponse:
    return rpc_response(ex.request_id, ex.version,
                        render_result(method, result, ex.version, params))  # fmt: skip


def stream_framing(ex: Exchange, params: dict[str, Any]) -> Framing:
    if ex.version == V01:
        return v01.framing(ex.request_id, params)
    return jsonrpc_framing(ex.request_id, ex.version)


async def tenant_agent(params: dict[str, Any], version: str) -> Agent:
    """The agent a shared-endpoint request names in `tenant` (a 1.0 field: 0.3 requests
    cannot name one)."""
    tenant = params.get("tenant") if version == V1 else None
    if not isinstance(tenant, str) or not tenant:
        raise invalid_params("tenant", "name the agent (its slug) this request is for")
    return await door.tenant_agent(tenant)


def not_post() -> JsonResponse:
    response = JsonResponse({"error": {"code": 405, "message": "POST JSON-RPC here."}}, status=405)
    response["Allow"] = "POST"
    return response


async def answer(
    request: Request, agent: Agent | None, absent: A2AError | None = None
) -> HttpResponseBase:
    ex = Exchange(absent=absent)
    request_id.describe(ex, "jsonrpc")
    started = time.perf_counter()
    door_span = tracing.open_door(request.headers, "jsonrpc") if tracing.enabled else None
    response = await respond(request, agent, ex)
    bulk.count(response, (ex.agent, ex.method, ex.version, "jsonrpc", ex.code),
               time.perf_counter() - started)  # fmt: skip
    if door_span is not None:
        code = {} if ex.code == "ok" else {"rpc.jsonrpc.error_code": int(ex.code)}
        door_span.finish(ex.agent, ex.method, ex.version, "jsonrpc",
                         code | {"http.response.status_code": response.status_code})  # fmt: skip
        door_span.close(response, failed=ex.code != "ok")
    return response


async def respond(request: Request, agent: Agent | None, ex: Exchange) -> HttpResponseBase:
    try:
        return await handle(request, agent, ex)
    except (AuthenticationRequired, AccessDenied) as exc:
        refused = door.refused_caller(exc)
        ex.code = str(refused.status_code)  # HTTP's: no JSON-RPC answer is given
        return refused
    except door.Rejection as exc:
        ex.code = error_code(exc.error)
        return rpc_response(None, ex.version, error=exc.error, status=exc.status)
    except limits.LimitExceeded as exc:
        ex.code = error_code(exc.error)
        response = rpc_response(ex.request_id, ex.version, error=exc.error, status=exc.status)
        if exc.retry_after is not None:
            response["Retry-After"] = str(exc.retry_after)
        return response
    except A2AError as exc:
        ex.code = error_code(exc)
        return ex.failure(exc)
    except Exception as exc:
        internal = internal_error(exc)
        ex.code = error_code(internal)
        return ex.failure(internal)


def error_code(error: A2AError) -> str:
    return str(JSON_RPC_ERROR_CODE_MAP.get(type(error), -32603))


async def endpoint(request: Request, slug: str) -> HttpResponseBase:
    if request.method != "POST":
        return not_post()
    agent = await door.agent_named(slug)
    if agent is None:
        absent = await door.absence(slug)
        if absent is not None:
            return await answer(request, None, absent)
        return json_not_found(f"No agent named {slug!r} is served here.")
    return await answer(request, agent)


async def shared_endpoint(request: Request) -> HttpResponseBase:
    """`/a2a/jsonrpc/`: every hosted agent behind one URL, chosen by `params.tenant`."""
    if request.method != "POST":
        return not_post()
    return await answer(request, None)
