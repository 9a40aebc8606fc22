"""Server-sent events for the streaming methods: each event one JSON-RPC response frame.

Frames of stored events carry `id: <sequence>` so a client can re-attach with Last-Event-ID;
idle streams get a comment line now and then so proxies keep them open. When the client goes
away the stream's generator is closed, which releases its subscription.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse

from agents.errors import A2AError, error_object, internal_error
from tasks.wire import stream_event_json

StreamItem = tuple[int | None, dict[str, Any]]


def frame(request_id: Any, sequence: int | None, body: dict[str, Any]) -> bytes:
    message = json.dumps({"jsonrpc": "2.0", "id": request_id, **body}, ensure_ascii=False)
    prefix = f"id: {sequence}\n" if sequence is not None else ""
    return f"{prefix}data: {message}\n\n".encode()


async def frames(
    items: AsyncIterator[StreamItem], request_id: Any, version: str
) -> AsyncIterator[bytes]:
    # One task reads the stream's items into a queue, so that waiting for the next one with a
    # heartbeat timeout costs something only when the queue is empty; events that come in a
    # burst (a fast agent's whole turn) go out without a task and a timer each.
    queue: asyncio.Queue[Any] = asyncio.Queue()
    reader = asyncio.ensure_future(read_into(items, queue))
    try:
        while True:
            if queue.empty():
                try:
                    item = await asyncio.wait_for(queue.get(), settings.SSE_HEARTBEAT_SECONDS)
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
            else:
                item = queue.get_nowait()
            if item is END:
                return
            if isinstance(item, BaseException):
                raise item
            sequence, event = item
            yield frame(request_id, sequence, {"result": stream_event_json(event, version)})
    except A2AError as exc:
        yield frame(request_id, None, {"error": error_object(exc, version)})
    except Exception as exc:
        yield frame(request_id, None, {"error": error_object(internal_error(exc), version)})
    finally:
        # Stopping the reader closes the items' generator where it waits, which releases
        # what the stream held (its subscription, say).
        reader.cancel()
        with contextlib.suppress(BaseException):
            await reader
        with contextlib.suppress(Exception):
            await items.aclose()  # type: ignore[attr-defined]


END = object()


async def read_into(items: AsyncIterator[StreamItem], queue: asyncio.Queue[Any]) -> None:
    try:
        async for item in items:
            queue.put_nowait(item)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        queue.put_nowait(exc)
    else:
        queue.put_nowait(END)


def sse_response(
    items: AsyncIterator[StreamItem], request_id: Any, version: str
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        frames(items, request_id, version), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def sse_error(request_id: Any, error: A2AError, version: str) -> StreamingHttpResponse:
    """A stream of one frame: the error, for clients that only read streams."""
    body = frame(request_id, None, {"error": error_object(error, version)})

    async def single() -> AsyncIterator[bytes]:
        yield body

    response = StreamingHttpResponse(single(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    return response
