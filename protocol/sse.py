"""Server-sent events for the streaming methods: each event one JSON-RPC response frame.

Frames of stored events carry `id: <sequence>` so a client can re-attach with Last-Event-ID;
idle streams get a comment line now and then (the stream yields KEEP_ALIVE) so proxies keep
them open. When the client goes away the stream's generator is closed, which releases its
subscription.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from django.http import StreamingHttpResponse

from a2ahub import jsonbytes
from a2ahub.errors import A2AError, error_object, internal_error
from protocol.handlers.streams import KEEP_ALIVE, PAUSE, StreamItem
from tasks.wire import stream_event_json


def frame(request_id: Any, sequence: int | None, body: dict[str, Any]) -> bytes:
    message = jsonbytes.dumps({"jsonrpc": "2.0", "id": request_id, **body})
    prefix = b"id: %d\n" % sequence if sequence is not None else b""
    return prefix + b"data: " + message + b"\n\n"


async def frames(
    items: AsyncIterator[StreamItem], request_id: Any, version: str
) -> AsyncIterator[bytes]:
    # The items' generator waits on its task's subscription alone, which also says when the
    # line has been quiet (KEEP_ALIVE): an event is framed the loop turn after it arrives.
    # Frames go out when the stream pauses (PAUSE), so a burst of events is one write.
    pending: list[bytes] = []
    try:
        async for item in items:
            if item is PAUSE:
                if pending:
                    yield b"".join(pending)
                    pending.clear()
            elif item is KEEP_ALIVE:
                pending.append(b": keep-alive\n\n")
            else:
                sequence, event = item
                result = {"result": stream_event_json(event, version)}
                pending.append(frame(request_id, sequence, result))
    except A2AError as exc:
        pending.append(frame(request_id, None, {"error": error_object(exc, version)}))
    except Exception as exc:
        pending.append(
            frame(request_id, None, {"error": error_object(internal_error(exc), version)})
        )
    finally:
        # Closing the items' generator where it waits releases what the stream held (its
        # subscription, say).
        with contextlib.suppress(Exception):
            await items.aclose()  # type: ignore[attr-defined]
    if pending:
        yield b"".join(pending)


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
