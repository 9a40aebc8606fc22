"""The chat console's stream: a turn sent as the signed-in user through the A2A handlers, its
events framed for the page, and served without a thread of its own while it is open.

The page reads each event as the 1.0 StreamResponse, with two changes: a task's history is
left out (the page shows the conversation itself), and the bytes of a stored file part become
a link to the file view, which checks that the task is the user's. An agent's answer that is
a Message alone is stored nowhere, so its bytes stay in the event.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlencode

from a2a.types import a2a_pb2 as pb
from asgiref.sync import SyncToAsync, sync_to_async
from django.db import connection, connections
from django.http import HttpRequest

from a2ahub import jsonbytes, numerals
from a2ahub.errors import A2AError, error_object
from agents.models import Agent
from agents.principals import Principal
from agents.views import public_base_url
from protocol import door, strings
from protocol.calls import Call
from protocol.handlers.streams import StreamItem
from protocol.jsonrpc import find_method, parse_params
from protocol.method_table import Method, resolve
from protocol.sse import Framing, data_frame
from tasks.models import Binding
from tasks.wire import V1, to_json

T = TypeVar("T")


async def page_call(
    request: HttpRequest, agent: Agent, principal: Principal, sending: bool
) -> Call:
    """The call as the A2A doors make it, after their checks (limits, required extensions),
    for the signed-in user: no credentials are asked for, the user is the principal."""
    if door.has_limits(agent):
        # As declared: the form was read as multipart (the page's FormData), which leaves no
        # body to measure.
        size = numerals.whole_number(request.META.get("CONTENT_LENGTH", "")) or 0
        await sync_to_async(door.check_limits)(agent, principal, size, sending)
    extensions = door.check_extensions(request.headers, agent, sending)
    return Call(agent, principal, V1, partial(public_base_url, request), extensions,
                binding=Binding.PAGE)  # fmt: skip


async def start_turn(
    request: HttpRequest, agent: Agent, principal: Principal, params: dict[str, Any]
) -> AsyncGenerator[StreamItem, None]:
    """The streamed send (a blocking one for an agent that does not stream) once the door's
    checks pass; their errors, and the handler's before the stream opens, are raised."""
    strings.check_params(params)
    call = await page_call(request, agent, principal, sending=True)
    method = find_method("SendStreamingMessage" if agent.streaming else "SendMessage", V1)
    result = await apart(send(call, method, parse_params(method, params, V1)))
    return result if method.streaming else single(result)


async def send(call: Call, method: Method, request: pb.SendMessageRequest) -> Any:
    try:
        return await resolve(method.handler)(call, request)
    finally:
        await sync_to_async(release_connection)()


def release_connection() -> None:
    """Close this thread's connection, as the end of a request would: the process-wide thread
    serves every stream. Never inside a transaction (only a test's can be open here)."""
    if not connection.in_atomic_block:
        connection.close()


async def single(result: pb.Task | pb.Message) -> AsyncGenerator[StreamItem, None]:
    yield None, {"message" if isinstance(result, pb.Message) else "task": to_json(result)}


# -- no thread per open stream --------------------------------------------------------------


async def apart(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` in a context of its own. Its sync calls, and those of the tasks it starts
    (an inline agent's writes), go to asgiref's process-wide thread, as the A2A doors'
    streams do, not to the request's thread, which the stream gives back (`detached`); and
    the context variables the handlers set stay theirs."""
    context = contextvars.copy_context()
    context.run(SyncToAsync.thread_sensitive_context.set, None)  # type: ignore[arg-type]
    return await asyncio.create_task(work, context=context)


async def give_back_request_thread() -> None:
    """Django's ASGI handler gives each request a thread, kept until the response ends: an
    open stream would hold one for hours. Once the middleware is done with it (the stream's
    first read comes after), its connections are closed and the thread ends."""
    context = SyncToAsync.thread_sensitive_context.get(None)
    if context is not None and context in SyncToAsync.context_to_thread_executor:
        await sync_to_async(connections.close_all)()
        SyncToAsync.context_to_thread_executor.pop(context).shutdown(wait=False)
    SyncToAsync.thread_sensitive_context.set(None)  # type: ignore[arg-type]


async def detached(items: AsyncGenerator[StreamItem, None]) -> AsyncIterator[StreamItem]:
    await give_back_request_thread()
    try:
        async for item in items:
            yield item
    finally:
        await items.aclose()


# -- the page's frames ------------------------------------------------------------------------


class PageEvents:
    """The frames of one stream. It counts the parts of each artifact as they come, so that a
    file in an appended chunk is linked by its place in the stored artifact."""

    def __init__(self, file_url: str) -> None:
        self.file_url = file_url
        self.parts_seen: dict[str, int] = {}

    def framing(self) -> Framing:
        return Framing(event=self.frame, error=error_frame)

    def frame(self, sequence: int | None, event: dict[str, Any]) -> bytes:
        return data_frame(sequence, jsonbytes.dumps(self.for_page(event)))

    def for_page(self, event: dict[str, Any]) -> dict[str, Any]:
        # Events may be shared with other streams of the task: copied, never changed.
        if "task" in event:
            return {"task": self.task(event["task"])}
        if "artifactUpdate" in event:
            update = event["artifactUpdate"]
            artifact = self.artifact(update["taskId"], update["artifact"], update.get("append"))
            return {"artifactUpdate": update | {"artifact": artifact}}
        if "statusUpdate" in event:
            update = event["statusUpdate"]
            return {"statusUpdate": update | {"status": self.status(update["taskId"],
                                                                    update["status"])}}  # fmt: skip
        return event

    def task(self, task: dict[str, Any]) -> dict[str, Any]:
        shown = {key: value for key, value in task.items() if key != "history"}
        shown["artifacts"] = [self.artifact(task["id"], a) for a in task.get("artifacts", [])]
        shown["status"] = self.status(task["id"], task.get("status", {}))
        return shown

    def status(self, task_id: str, status: dict[str, Any]) -> dict[str, Any]:
        if "message" not in status:
            return status
        message = status["message"]
        where = {"task": task_id, "message": message.get("messageId", "")}
        return status | {"message": message | {"parts": self.parts(message, where, 0)}}

    def artifact(
        self, task_id: str, artifact: dict[str, Any], append: Any = False
    ) -> dict[str, Any]:
        artifact_id = str(artifact.get("artifactId", ""))
        start = self.parts_seen.get(artifact_id, 0) if append else 0
        self.parts_seen[artifact_id] = start + len(artifact.get("parts", []))
        where = {"task": task_id, "artifact": artifact_id}
        return artifact | {"parts": self.parts(artifact, where, start)}

    def parts(self, holder: dict[str, Any], where: dict[str, str], start: int) -> list[Any]:
        return [self.part(part, where, start + n) for n, part in enumerate(holder.get("parts", []))]

    def part(self, part: dict[str, Any], where: dict[str, str], index: int) -> dict[str, Any]:
        if "raw" not in part:
            return part
        shown = {key: value for key, value in part.items() if key != "raw"}
        query = urlencode(where | {"part": str(index)})
        return shown | {"href": f"{self.file_url}?{query}", "size": base64_size(part["raw"])}


def base64_size(text: str) -> int:
    return len(text) * 3 // 4 - text[-2:].count("=")


def error_frame(error: A2AError) -> bytes:
    return data_frame(None, jsonbytes.dumps({"error": error_object(error, V1)}), event="error")
