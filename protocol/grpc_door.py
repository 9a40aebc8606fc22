"""The gRPC binding (A2A 1.0, v1.0.1 §10) in front of the same handlers as JSON-RPC and
HTTP+JSON: the `A2AService` of the spec's proto, one service for every hosted agent.

The agent is the request's `tenant` (its slug), which the official client copies from the
card's GRPC interface into every request; a request without one goes to HUB_DEFAULT_AGENT,
as the host root's card does. Credentials and service parameters are metadata, read as the
other doors read headers (`authorization`, the API key header the agent declares,
`a2a-version`, `a2a-extensions`, `a2a-hub-hops`), and every check of the door applies:
authentication and access, the agent's limits, required extensions, hops, the audit count.
Errors are statuses with the ErrorInfo the other bindings send (`protocol.grpc_errors`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import grpc
from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.conf import settings
from google.protobuf import empty_pb2
from google.protobuf.json_format import MessageToDict, ParseError
from google.protobuf.message import Message as ProtoMessage
from google.protobuf.message_factory import GetMessageClass

from a2ahub import big_bodies, metrics, request_id, tracing
from a2ahub.errors import (
    A2AError,
    AccessDenied,
    AuthenticationRequired,
    InvalidRequestError,
    VersionNotSupportedError,
    internal_error,
)
from a2ahub.request import Headers, Request
from protocol import (
    door,
    grpc_errors,
    grpc_events,
    limits,
    request_caps,
    required_fields,
    strings,
)
from protocol.calls import Call
from protocol.grpc_errors import Refusal
from protocol.handlers.streams import StreamItem
from protocol.method_table import V1_METHODS, Method, resolve
from tasks.models import Binding
from tasks.wire import V03, V1

BINDING = "grpc"  # as the request metrics and logs name it
SENDING = {"SendMessage", "SendStreamingMessage"}


class Malformed:
    """What a request's bytes became when they are no message of its type (the server's own
    answer would be UNKNOWN): refused as an invalid request."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


def safe_parser(message_type: type[ProtoMessage]) -> Any:
    def parse(raw: bytes) -> ProtoMessage | Malformed:
        try:
            return message_type.FromString(raw)
        except Exception as exc:  # DecodeError, or a RecursionError on a deep Struct
            return Malformed(f"The request is not a valid {message_type.DESCRIPTOR.name}: {exc}")

    return parse


def metadata_headers(metadata: Iterable[Any] | None) -> Headers:
    """gRPC metadata as request headers (case-insensitive; binary `-bin` entries left out)."""
    raw: list[tuple[bytes, bytes]] = []
    for key, value in metadata or ():
        if key.endswith("-bin") or not isinstance(value, str):
            continue
        try:
            raw.append((key.encode("latin1"), value.encode("latin1")))
        except UnicodeEncodeError:
            continue  # gRPC's ASCII metadata cannot hold it: no header of ours either
    return Headers(raw)


def base_url() -> str:
    """The hub's web URL, for the answers that name it (the extended card): gRPC requests
    carry no host of the web server."""
    if settings.PUBLIC_BASE_URL:
        return str(settings.PUBLIC_BASE_URL)
    host = settings.HOST if settings.HOST not in ("0.0.0.0", "::", "") else "127.0.0.1"
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.PORT}"


def metadata_request(context: grpc.aio.ServicerContext, method: str) -> Request:
    """The call as the door's checks read a request: its metadata as headers, and the web
    server's host as its Host (challenges and metadata URLs name the hub's web URL)."""
    headers = metadata_headers(context.invocation_metadata())
    headers.by_name["host"] = urlsplit(base_url()).netloc
    return Request("POST", f"/lf.a2a.v1.A2AService/{method}", headers, "application/grpc")


SERVICES = {V1: "lf.a2a.v1.A2AService", V03: "a2a.v1.A2AService"}


def version_of(request: Request, served: str = V1) -> str:
    """The version a call asks for, which must be its service's (a 0.3 client may send
    none)."""
    version = door.parse_version(door.raw_version(request), default=served)
    if version != served:
        raise VersionNotSupportedError(
            f"A2A {version} over gRPC is the service {SERVICES[version]}; this is "
            f"{SERVICES[served]} (A2A {served})."
        )
    return version


def check_request(message: ProtoMessage) -> None:
    """The caps every binding applies (parts, nesting, metadata size) and the strings no
    database can hold (U+0000), read from the request's JSON as the other doors read theirs;
    then the fields the spec requires."""
    params = MessageToDict(message)
    request_caps.check_parts(params)
    request_caps.walk(params, measure=True)
    strings.check_params(params)
    required_fields.check(message)


@dataclass
class Exchange:
    """What the metrics and log lines name: filled in as the call is read."""

    method: str
    agent: str = ""
    code: str = "OK"
    version: str = V1


async def admit(
    name: str, request: Any, context: grpc.aio.ServicerContext, ex: Exchange, served: str = V1
) -> tuple[Call, Method]:
    """Every check of the door, in the order the other bindings make them; `request` is the
    1.0 request message (a 0.3 one converted)."""
    if isinstance(request, Malformed):
        raise InvalidRequestError(request.problem)
    http = metadata_request(context, name)
    version = version_of(http, served)
    agent = await door.tenant_agent(request.tenant or settings.HUB_DEFAULT_AGENT)
    ex.agent = agent.slug
    principal = await door.authenticate_caller(http, agent)
    size = request.ByteSize()
    await big_bodies.off_loop(size, check_request, request)
    sending = name in SENDING
    if door.has_limits(agent):
        await sync_to_async(door.check_limits)(agent, principal, size, sending)
    extensions = door.check_extensions(http.headers, agent, sending)
    call = Call(agent, principal, version, base_url, extensions, door.last_event_id(http),
                binding=Binding.GRPC, hops=door.check_hops(http))  # fmt: skip
    method = V1_METHODS[name]
    door.start_call(call, method)
    return call, method


def refusal_for(exc: BaseException) -> Refusal:
    if isinstance(exc, AuthenticationRequired | AccessDenied):
        return grpc_errors.refused_caller(exc)
    if isinstance(exc, limits.LimitExceeded):
        return grpc_errors.over_limit(exc.error, exc.retry_after)
    if isinstance(exc, door.Rejection):
        return grpc_errors.refusal_of(exc.error)
    if isinstance(exc, A2AError):
        return grpc_errors.refusal_of(exc)
    return grpc_errors.refusal_of(internal_error(exc))


async def end_with(context: grpc.aio.ServicerContext, refusal: Refusal) -> None:
    context.set_trailing_metadata(refusal.trailers)
    await context.abort(refusal.code, refusal.message)


def answer_of(name: str, result: Any) -> ProtoMessage:
    if name == "SendMessage":
        if isinstance(result, pb.Task):
            return pb.SendMessageResponse(task=result)
        return pb.SendMessageResponse(message=result)
    if result is None:
        return empty_pb2.Empty()
    return result  # type: ignore[no-any-return]


def stream_response(item: StreamItem) -> pb.StreamResponse | None:
    """A stored stream event as its message; None for the SSE door's keep-alives and pauses
    (gRPC keeps its own connection alive, and sends each message as it comes)."""
    _, event = item
    if not event:
        return None
    try:
        return grpc_events.stream_response(event)
    except ParseError as exc:
        raise internal_error(exc) from None


class A2AGrpcDoor:
    """Every method of the 1.0 service, each through `unary` or `streamed` (the server tells
    a streaming method by its kind: an async generator, as `streamed` is)."""

    def __init__(self, service: Any) -> None:
        for rpc in service.methods:
            door = self.streamed if rpc.server_streaming else self.unary
            setattr(self, rpc.name, partial(door, rpc.name))

    async def unary(self, name: str, request: Any, context: grpc.aio.ServicerContext) -> Any:
        ex, started, door_span = begin(context, name)
        refusal: Refusal | None = None
        try:
            async with door.request_context():
                call, method = await admit(name, request, context, ex)
                result = await resolve(method.handler)(call, request)
            if door_span is not None:
                tracing.note_result(result)
            size = big_bodies.size_of(result)
            return await big_bodies.off_loop(size, answer_of, name, result)
        except Exception as exc:
            refusal = refusal_for(exc)
            ex.code = refusal.code.name
        finally:
            record(ex, started)
            if door_span is not None:
                close_door(door_span, ex)
        assert refusal is not None
        await end_with(context, refusal)

    async def streamed(
        self, name: str, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.StreamResponse]:
        ex, started, door_span = begin(context, name)
        refusal: Refusal | None = None
        try:
            # Read outside the call's thread context, as the SSE doors answer: a stream may
            # stay open for hours, and the thread with it.
            async with door.request_context():
                call, method = await admit(name, request, context, ex)
                items = await resolve(method.handler)(call, request)
        except Exception as exc:
            refusal = refusal_for(exc)
            ex.code = refusal.code.name
        record(ex, started)  # as the SSE doors count a stream: at its start
        if door_span is not None:
            # Its attributes now, while the span is current; it ends with the stream.
            close_door(door_span, ex, end=refusal is not None)
        if refusal is not None:
            await end_with(context, refusal)
            return
        metrics.OPEN_STREAMS.inc()
        try:
            async for item in items:
                response = stream_response(item)
                if response is not None:
                    yield response
        except Exception as exc:
            refusal = refusal_for(exc)
        finally:
            metrics.OPEN_STREAMS.dec()
            await items.aclose()
            if door_span is not None:
                door_span.end(refusal is not None)
        if refusal is not None:
            await end_with(context, refusal)


def begin(
    context: grpc.aio.ServicerContext, name: str, version: str = V1
) -> tuple[Exchange, float, tracing.Door | None]:
    """The call's Exchange, the time it began and its server span (when tracing), with its
    request id (the caller's `x-request-id` when sane) for its log lines."""
    ex = Exchange(name, version=version)
    metadata = context.invocation_metadata()
    sent = next((v for k, v in metadata or () if k == "x-request-id"), None)
    request_id.begin(sent if isinstance(sent, str) else None)
    request_id.describe(ex, BINDING)
    started = time.perf_counter()
    if not tracing.enabled:
        return ex, started, None
    return ex, started, tracing.open_door(tracing.metadata_carrier(metadata), BINDING)


def close_door(door_span: tracing.Door, ex: Exchange, end: bool = True) -> None:
    door_span.finish(ex.agent, ex.method, ex.version, BINDING, {"rpc.grpc.status_code": ex.code})
    if end:
        door_span.end(ex.code != "OK")


def record(ex: Exchange, started: float) -> None:
    metrics.record_request(ex.agent, ex.method, ex.version, BINDING, ex.code,
                           time.perf_counter() - started)  # fmt: skip


def method_handlers(servicer: Any, service: Any) -> dict[str, grpc.RpcMethodHandler]:
    """A service's handlers as the SDK's generated `add_..._to_server` makes them, but with
    requests read by `safe_parser`."""
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for rpc in service.methods:
        make = (
            grpc.unary_stream_rpc_method_handler
            if rpc.server_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        handlers[rpc.name] = make(
            getattr(servicer, rpc.name),
            request_deserializer=safe_parser(GetMessageClass(rpc.input_type)),
            response_serializer=GetMessageClass(rpc.output_type).SerializeToString,
        )
    return handlers


def generic_handler(servicer: Any = None, service: Any = None) -> grpc.GenericRpcHandler:
    """The 1.0 service (by default), or another service's `servicer`."""
    service = service or pb.DESCRIPTOR.services_by_name["A2AService"]
    handlers = method_handlers(servicer or A2AGrpcDoor(service), service)
    return grpc.method_handlers_generic_handler(service.full_name, handlers)
