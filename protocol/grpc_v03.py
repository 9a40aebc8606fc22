"""The 0.3 gRPC service (`a2a.v1.A2AService` of the 0.3 proto) on the same server as 1.0's,
in front of the same handlers: the SDK's `CompatGrpcHandler` reads each 0.3 request, turns it
into the 1.0 request with the SDK's conversions, and the answer back; `HubRequestHandler` is
the SDK's request handler interface over the gRPC door's checks and `V1_METHODS`.

A 0.3 request has no `tenant`, and a gRPC address no path: every 0.3 gRPC call goes to
HUB_DEFAULT_AGENT, and only that agent's card lists the 0.3 GRPC interface. Errors are 0.3's:
status codes without ErrorInfo, as the SDK's 0.3 client reads them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pydantic
from a2a.compat.v0_3 import a2a_v0_3_pb2
from a2a.compat.v0_3.grpc_handler import CompatGrpcHandler
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from google.protobuf.json_format import ParseError

from a2ahub import tracing
from a2ahub.errors import A2AError, InvalidParamsError, internal_error
from protocol import grpc_door
from protocol.grpc_door import Malformed, admit, begin, end_with, record, refusal_for
from protocol.method_table import resolve
from tasks.wire import V03

STREAMED = {"SendStreamingMessage", "SubscribeToTask"}


async def run(name: str, request: Any, context: ServerCallContext) -> Any:
    """One method of the door for a converted 0.3 call: A2A errors go back to the SDK's
    handler (which answers them in 0.3's terms); refusals before the protocol end the call
    here, as on the 1.0 service."""
    grpc_context = context.state["grpc_context"]
    ex, started, door_span = begin(grpc_context, name, V03)
    streamed = name in STREAMED
    try:
        call, method = await admit(name, request, grpc_context, ex, served=V03)
        result = await resolve(method.handler)(call, request)
        if door_span is None:
            return result
        if not streamed:
            tracing.note_result(result)
            return result
        return tracing.ended_with(result, door_span)  # the span ends with the stream
    except A2AError as exc:
        ex.code = refusal_for(exc).code.name
        raise
    except Exception as exc:
        refusal = refusal_for(exc)
        ex.code = refusal.code.name
        if refusal.code == grpc.StatusCode.INTERNAL:
            raise internal_error(exc) from None
        await end_with(grpc_context, refusal)
    finally:
        record(ex, started)
        if door_span is not None:
            grpc_door.close_door(door_span, ex, end=not streamed or ex.code != "OK")


async def events(items: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """A handler's stream as the SDK's 0.3 conversion takes it: each event's own message."""
    try:
        async for item in items:
            response = grpc_door.stream_response(item)
            if response is not None:
                yield getattr(response, str(response.WhichOneof("payload")))
    finally:
        await items.aclose()  # type: ignore[attr-defined]


def unary_method(name: str) -> Any:
    async def method(self: RequestHandler, params: Any, context: Any = None) -> Any:
        return await run(name, params, context)

    return method


def streamed_method(name: str) -> Any:
    async def method(self: RequestHandler, params: Any, context: Any = None) -> Any:
        async for event in events(await run(name, params, context)):
            yield event

    return method


class HubRequestHandler(RequestHandler):
    """The SDK's request handler interface, answered by the hub's handlers."""

    on_message_send = unary_method("SendMessage")
    on_message_send_stream = streamed_method("SendStreamingMessage")
    on_get_task = unary_method("GetTask")
    on_list_tasks = unary_method("ListTasks")
    on_cancel_task = unary_method("CancelTask")
    on_subscribe_to_task = streamed_method("SubscribeToTask")
    on_create_task_push_notification_config = unary_method("CreateTaskPushNotificationConfig")
    on_get_task_push_notification_config = unary_method("GetTaskPushNotificationConfig")
    on_list_task_push_notification_configs = unary_method("ListTaskPushNotificationConfigs")
    on_delete_task_push_notification_config = unary_method("DeleteTaskPushNotificationConfig")

    async def on_get_extended_agent_card(self, params: Any, context: Any = None) -> Any:
        return await run("GetExtendedAgentCard", params, context or ServerCallContext())


# What the SDK's conversions raise on 0.3 input they cannot read: an invalid request, not the
# server's UNKNOWN.
UNREADABLE = (pydantic.ValidationError, ParseError, ValueError, KeyError, TypeError)


def unreadable(exc: Exception) -> InvalidParamsError:
    return InvalidParamsError(f"The 0.3 request cannot be read: {exc}")


def guarded_unary(method: Callable[..., Any], compat: CompatGrpcHandler) -> Any:
    async def unary(request: Any, context: Any) -> Any:
        if isinstance(request, Malformed):
            await compat.abort_context(InvalidParamsError(request.problem), context)
        try:
            return await method(request, context)
        except grpc.aio.AbortError:
            raise
        except UNREADABLE as exc:
            await compat.abort_context(unreadable(exc), context)

    return unary


def guarded_stream(method: Callable[..., Any], compat: CompatGrpcHandler) -> Any:
    async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
        if isinstance(request, Malformed):
            await compat.abort_context(InvalidParamsError(request.problem), context)
        try:
            async for item in method(request, context):
                yield item
        except grpc.aio.AbortError:
            raise
        except UNREADABLE as exc:
            await compat.abort_context(unreadable(exc), context)

    return stream


class Guarded:
    """The SDK's 0.3 handler with each method guarded: bytes that are no request, and input
    its conversions cannot read, refused as invalid, as the 1.0 service does."""

    def __init__(self, compat: CompatGrpcHandler, service: Any) -> None:
        for rpc in service.methods:
            guarded = guarded_stream if rpc.server_streaming else guarded_unary
            setattr(self, rpc.name, guarded(getattr(compat, rpc.name), compat))


def generic_handler() -> grpc.GenericRpcHandler:
    service = a2a_v0_3_pb2.DESCRIPTOR.services_by_name["A2AService"]
    compat = CompatGrpcHandler(HubRequestHandler())
    return grpc_door.generic_handler(Guarded(compat, service), service)
