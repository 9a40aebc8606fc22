"""The HTTP+JSON (REST) binding of one agent, in both versions, in front of the same handlers
as JSON-RPC.

1.0 paths (`message:send`, `tasks/{id}`, ...) follow v1.0.1 §11: `application/a2a+json`
answers (`application/json` to a client that spoke that), `google.rpc.Status` errors with an
ErrorInfo and the v1.0.1 status codes, camelCase query parameters. The 0.3 paths
(`v1/message:send`, `v1/card`, ...) carry the 0.3 protobuf JSON, and their errors also the
JSON-RPC `code` and `message` at the top. Streams are SSE whose `data:` is a bare
StreamResponse, with the same event ids and `Last-Event-ID` replay as JSON-RPC. A path names
its version: a 1.0 path asked without `A2A-Version` is served as 1.0, since no 0.3 operation
lives there.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

from a2a.types import a2a_pb2 as pb
from a2a.utils import proto_utils
from a2a.utils.error_handlers import build_rest_error_payload
from asgiref.sync import sync_to_async
from django.http import JsonResponse
from django.http.response import HttpResponseBase
from google.protobuf.json_format import ParseError

from a2ahub import big_bodies, jsonbytes, numerals, request_id, tracing
from a2ahub.errors import (
    A2AError,
    AccessDenied,
    AuthenticationRequired,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    VersionNotSupportedError,
    internal_error,
    invalid_params,
)
from a2ahub.request import Request
from agents.models import Agent
from protocol import bulk, door, limits, request_caps, rest_v03, strings, v03
from protocol.calls import Call
from protocol.method_table import V1_METHODS, Method, resolve
from protocol.results import v1_result
from protocol.sse import Framing, data_frame, sse_response
from tasks.models import Binding
from tasks.wire import V03, V1

MEDIA_TYPE = "application/a2a+json"
PLAIN_JSON = "application/json"
BODILESS = frozenset({"GET", "HEAD", "DELETE"})
TASK = r"tasks/(?P<task>[^/:]+)"
CONFIG = r"(?P<config>[^/:]+)"


@dataclass(frozen=True)
class Found:
    """A matched request: its path's parts and its body's JSON (empty when it has none)."""

    request: Request
    path: dict[str, str]
    body: dict[str, Any]

    @property
    def task(self) -> str:
        return self.path["task"]


@dataclass(frozen=True)
class Operation:
    method: str  # its 1.0 JSON-RPC name: the handler and request type behind it
    build: Callable[[Found], Any]
    render: Callable[[Any], Any] | None = None  # None: the 1.0 JSON of the result
    has_body: bool = False

    @property
    def entry(self) -> Method:
        return V1_METHODS[self.method]


@dataclass(frozen=True)
class Route:
    pattern: re.Pattern[str]
    version: str
    verbs: dict[str, Operation]


def query(found: Found, message: Any) -> Any:
    try:
        proto_utils.parse_params(cast(Any, found.request.query), message)
    except ParseError as exc:
        raise invalid_params(door.failed_field(str(exc)), str(exc)) from None
    return message


def body(found: Found, message: Any) -> Any:
    return door.parse_message(found.body, message)


def get_task(found: Found) -> pb.GetTaskRequest:
    request = query(found, pb.GetTaskRequest())
    request.id = found.task
    return request


def push_config(found: Found) -> pb.TaskPushNotificationConfig:
    config = body(found, pb.TaskPushNotificationConfig())
    config.task_id = found.task
    return config


def list_configs(found: Found) -> pb.ListTaskPushNotificationConfigsRequest:
    request = query(found, pb.ListTaskPushNotificationConfigsRequest())
    request.task_id = found.task
    return request


def config_of(found: Found, message: Any) -> Any:
    message.task_id, message.id = found.task, found.path["config"]
    return message


def route(path: str, version: str, **verbs: Operation) -> Route:
    return Route(re.compile(path), version, verbs)


SEND = Operation("SendMessage", lambda f: body(f, pb.SendMessageRequest()), has_body=True)
STREAM = replace(SEND, method="SendStreamingMessage")
SUBSCRIBE = Operation("SubscribeToTask", lambda f: pb.SubscribeToTaskRequest(id=f.task))
CANCEL = Operation("CancelTask", lambda f: pb.CancelTaskRequest(id=f.task))
LIST_CONFIGS = Operation("ListTaskPushNotificationConfigs", list_configs)
GET_CONFIG = Operation(
    "GetTaskPushNotificationConfig",
    lambda f: config_of(f, pb.GetTaskPushNotificationConfigRequest()),
)
DELETE_CONFIG = Operation(
    "DeleteTaskPushNotificationConfig",
    lambda f: config_of(f, pb.DeleteTaskPushNotificationConfigRequest()),
)
CARD = Operation("GetExtendedAgentCard", lambda f: pb.GetExtendedAgentCardRequest())

V1_ROUTES = (
    route("message:send", V1, POST=SEND),
    route("message:stream", V1, POST=STREAM),
    route("tasks", V1, GET=Operation("ListTasks", lambda f: query(f, pb.ListTasksRequest()))),
    route(TASK, V1, GET=Operation("GetTask", get_task)),
    route(f"{TASK}:cancel", V1, POST=CANCEL),
    # Both verbs: the spec's text says POST, its proto GET (A2A issue #1574).
    route(f"{TASK}:subscribe", V1, GET=SUBSCRIBE, POST=SUBSCRIBE),
    route(
        f"{TASK}/pushNotificationConfigs",
        V1,
        POST=Operation("CreateTaskPushNotificationConfig", push_config, has_body=True),
        GET=LIST_CONFIGS,
    ),
    route(f"{TASK}/pushNotificationConfigs/{CONFIG}", V1, GET=GET_CONFIG, DELETE=DELETE_CONFIG),
    route("extendedAgentCard", V1, GET=CARD),
)


def v03_get_task(found: Found) -> pb.GetTaskRequest:
    request = pb.GetTaskRequest(id=found.task)
    # 0.3's HTTP mapping is gRPC transcoding, whose query takes a field's proto name as well
    # as its JSON name; 0.3 clients send either.
    asked = found.request.query
    raw = asked.get("historyLength", "") or asked.get("history_length", "")
    if raw:
        length = numerals.whole_number(raw, numerals.INT32_MAX)
        if length is None:
            raise invalid_params(
                "historyLength", f"must be a whole number up to {numerals.INT32_MAX}"
            )
        request.history_length = length
    return request


# Where 0.3 reads the same request as 1.0, its route takes the 1.0 operation with 0.3's answer.
V03_ROUTES = (
    route("v1/message:send", V03, POST=Operation(
        "SendMessage", lambda f: rest_v03.send_in(f.body), rest_v03.send_out, has_body=True)),
    route("v1/message:stream", V03, POST=Operation(
        "SendStreamingMessage", lambda f: rest_v03.send_in(f.body), has_body=True)),
    route(f"v1/{TASK}", V03, GET=Operation("GetTask", v03_get_task, rest_v03.task_out)),
    route(f"v1/{TASK}:cancel", V03, POST=replace(CANCEL, render=rest_v03.task_out)),
    route(f"v1/{TASK}:subscribe", V03, GET=SUBSCRIBE, POST=SUBSCRIBE),
    route(
        f"v1/{TASK}/pushNotificationConfigs",
        V03,
        POST=Operation(
            "CreateTaskPushNotificationConfig",
            lambda f: rest_v03.push_set_in(f.body, f.task),
            rest_v03.push_config_out,
            has_body=True,
        ),
        GET=replace(LIST_CONFIGS, render=rest_v03.push_list_out),
    ),
    route(
        f"v1/{TASK}/pushNotificationConfigs/{CONFIG}",
        V03,
        GET=replace(GET_CONFIG, render=rest_v03.push_config_out),
        DELETE=replace(DELETE_CONFIG, render=lambda result: {}),
    ),
    route("v1/card", V03, GET=replace(CARD, render=v03.card_out)),
)  # fmt: skip

ROUTES = V1_ROUTES + V03_ROUTES
SENDING = {"SendMessage", "SendStreamingMessage"}


class NoRoute(Exception):
    def __init__(self, status: int, message: str, allow: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.allow = status, message, allow


def match(verb: str, tail: str) -> tuple[Route, Operation, dict[str, str]]:
    tail = tail.strip("/")
    for candidate in ROUTES:
        found = candidate.pattern.fullmatch(tail)
        if found is None:
            continue
        operation = candidate.verbs.get(verb)
        if operation is None:
            raise NoRoute(405, f"{verb} is not allowed here.", ", ".join(candidate.verbs))
        return candidate, operation, found.groupdict()
    raise NoRoute(404, f"No A2A operation at {tail!r}.")


def version_of(request: Request, route_version: str) -> str:
    version = door.parse_version(door.raw_version(request), default=route_version)
    if version != route_version:
        where = "the /v1/ paths" if version == V03 else "the paths without /v1/"
        raise VersionNotSupportedError(f"A2A {version} over HTTP+JSON is served at {where}.")
    return version


def answer_media(request: Request) -> str:
    """The media type of an answer: the one the client spoke. v1.0.1 §11.1 says
    `application/a2a+json` SHOULD be used, but clients that send plain JSON (the SDKs, the
    conformance kit) also check for it on the way back. A body's Content-Type says which;
    without a body, Accept does, and a client that names neither (`*/*`: the kit's GETs, curl)
    gets plain JSON, which every JSON client reads."""
    if request.method not in BODILESS:
        said = request.content_type.lower()
        return PLAIN_JSON if said == PLAIN_JSON else MEDIA_TYPE
    accepted = {
        part.split(";")[0].strip().lower() for part in request.headers.get("Accept", "").split(",")
    }
    return MEDIA_TYPE if MEDIA_TYPE in accepted else PLAIN_JSON


def negotiated(request: Request, response: HttpResponseBase) -> HttpResponseBase:
    """`response` in the client's JSON media type (a stream keeps `text/event-stream`)."""
    media = response.get("Content-Type", "")
    if media == PLAIN_JSON or media.endswith("+json"):
        response["Content-Type"] = answer_media(request)
    return response


def refused(request: Request, error: A2AError, status: int | None) -> HttpResponseBase:
    """An error met before the binding runs (a body too large), in its shape."""
    version = V03 if "/v1/" in request.path else V1
    return negotiated(request, rest_error(error, version, status))


def rest_error(error: A2AError, version: str, status: int | None = None) -> JsonResponse:
    payload = error_payload(error, version)
    if status is not None:
        payload["error"]["code"] = status
    return json_answer(payload, payload["error"]["code"])


def error_payload(error: A2AError, version: str) -> dict[str, Any]:
    """A `google.rpc.Status` with its ErrorInfo; for 0.3, the JSON-RPC fields beside it."""
    payload = build_rest_error_payload(error)
    if version == V03:
        payload |= rest_v03.error_fields(error)
    return payload


def json_answer(content: Any, status: int = 200) -> JsonResponse:
    return JsonResponse(
        content,
        status=status,
        safe=False,
        content_type=MEDIA_TYPE,
        json_dumps_params={"ensure_ascii": False},
    )


def stream_framing(version: str) -> Framing:
    def event(sequence: int | None, body: dict[str, Any]) -> bytes:
        shaped = body if version == V1 else rest_v03.stream_event_out(body)
        return data_frame(sequence, jsonbytes.dumps(shaped))

    def error(exc: A2AError) -> bytes:
        return data_frame(None, jsonbytes.dumps(error_payload(exc, version)), event="error")

    return Framing(event, error)


def json_object(raw: bytes) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        content = door.decode_json(raw)
    except JSONParseError as exc:
        # HTTP+JSON has no parse-error code of its own: a body that is not JSON is a bad
        # request (400 INVALID_REQUEST), as in the SDK's server.
        raise InvalidRequestError(exc.message) from None
    if not isinstance(content, dict):
        raise InvalidRequestError("The body must be a JSON object.")
    return content


def check_strings(found: Found, raw: bytes) -> None:
    if strings.may_hold_uncarriable(raw):
        strings.check_params(found.body)
    texts = {**found.path, **found.request.query.dict()}
    if any("\x00" in text or not strings.is_unicode(text) for text in texts.values()):
        strings.check_params(texts)


@dataclass
class Exchange:
    version: str = V1
    # What the request metrics name: known as the request is read, empty until then.
    agent: str = ""
    method: str = ""


async def handle(
    request: Request, agent: Agent | None, tail: str, ex: Exchange, tenant: str = ""
) -> HttpResponseBase:
    if agent is None:
        agent = await door.tenant_agent(tenant)
    ex.agent = agent.slug
    found_route, operation, path = match(request.method, tail)
    ex.method = operation.method
    ex.version = found_route.version
    ex.version = version_of(request, found_route.version)
    if operation.has_body:
        door.check_media(request, f"Send {MEDIA_TYPE} or application/json.")
    raw = request.body if operation.has_body else b""
    principal = await door.authenticate_caller(request, agent)
    content = await big_bodies.off_loop(len(raw), json_object, raw)
    await big_bodies.off_loop(len(raw), request_caps.check, raw, content)
    sending = operation.method in SENDING
    if door.has_limits(agent):
        await sync_to_async(door.check_limits)(agent, principal, len(raw), sending)
    extensions = door.check_extensions(request.headers, agent, sending)
    call = Call(agent, principal, ex.version, request.base_url, extensions,
                door.last_event_id(request), binding=Binding.HTTP_JSON,
                hops=door.check_hops(request))  # fmt: skip
    method = operation.entry
    door.start_call(call, method)
    found = Found(request, path, content)
    read = await big_bodies.off_loop(len(raw), read_operation, operation, found, raw)
    result = await resolve(method.handler)(call, read)
    tracing.note_result(result)
    if method.streaming:
        return sse_response(result, stream_framing(ex.version))
    size = max(len(raw), big_bodies.size_of(result))
    return await big_bodies.off_loop(size, answer_of, operation, result)


def read_operation(operation: Operation, found: Found, raw: bytes) -> Any:
    check_strings(found, raw)
    return operation.build(found)


def answer_of(operation: Operation, result: Any) -> JsonResponse:
    render = operation.render or partial(v1_result, operation.entry)
    return json_answer(render(result))


async def answer(
    request: Request, agent: Agent | None, tail: str, tenant: str = ""
) -> HttpResponseBase:
    ex = Exchange(V03 if tail.lstrip("/").startswith("v1/") else V1)
    request_id.describe(ex, "rest")
    started = time.perf_counter()
    door_span = tracing.open_door(request.headers, "rest") if tracing.enabled else None
    response = await respond(request, agent, tail, ex, tenant)
    bulk.count(response, (ex.agent, ex.method, ex.version, "rest", str(response.status_code)),
               time.perf_counter() - started)  # fmt: skip
    if door_span is not None:
        status = response.status_code
        door_span.finish(ex.agent, ex.method, ex.version, "rest",
                         {"http.response.status_code": status})  # fmt: skip
        door_span.close(response, failed=status >= 400)
    return response


async def respond(
    request: Request, agent: Agent | None, tail: str, ex: Exchange, tenant: str
) -> HttpResponseBase:
    try:
        return await handle(request, agent, tail, ex, tenant)
    except NoRoute as exc:
        return no_route(exc, ex.version)
    except (AuthenticationRequired, AccessDenied) as exc:
        return door.refused_caller(exc)
    except door.Rejection as exc:
        return rest_error(exc.error, ex.version, exc.status)
    except limits.LimitExceeded as exc:
        response = rest_error(exc.error, ex.version, exc.status)
        if exc.retry_after is not None:
            response["Retry-After"] = str(exc.retry_after)
        return response
    except A2AError as exc:
        return rest_error(exc, ex.version)
    except Exception as exc:
        return rest_error(internal_error(exc), ex.version)


def no_route(exc: NoRoute, version: str) -> JsonResponse:
    # The shape of every other error, details (an ErrorInfo naming METHOD_NOT_FOUND) included;
    # to a 0.3 client, what its JSON-RPC would have met: a method not found.
    response = rest_error(MethodNotFoundError(exc.message), version, exc.status)
    if exc.allow:
        response["Allow"] = exc.allow
    return response


async def endpoint(request: Request, slug: str, tail: str = "") -> HttpResponseBase:
    return negotiated(request, await agent_endpoint(request, slug, tail))


async def agent_endpoint(request: Request, slug: str, tail: str) -> HttpResponseBase:
    agent = await door.agent_named(slug)
    if agent is None:
        absent = await door.absence(slug)
        if absent is not None:
            return rest_error(absent, V03 if tail.lstrip("/").startswith("v1/") else V1)
        error = {"code": 404, "status": "NOT_FOUND", "message": f"No agent named {slug!r}."}
        return json_answer({"error": error}, 404)
    return await answer(request, agent, tail)


async def shared_endpoint(request: Request, tenant: str = "", tail: str = "") -> HttpResponseBase:
    """`/a2a/rest/{tenant}/...`: every hosted agent behind one base, chosen by the path."""
    return negotiated(request, await answer(request, None, tail, tenant))
