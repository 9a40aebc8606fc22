"""Server-sent events for the streaming methods of every binding.

Frames of stored events carry `id: <sequence>` so a client can re-attach with Last-Event-ID;
idle streams get a comment line now and then (the stream yields KEEP_ALIVE) so proxies keep
them open. When the client goes away the stream's generator is closed, which releases its
subscription. What a frame's `data:` holds is the binding's choice (a `Framing`): a JSON-RPC
response per event, or the bare StreamResponse of HTTP+JSON.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from django.http import StreamingHttpResponse

from a2ahub import jsonbytes
from a2ahub.errors import A2AError, error_object, internal_error
from protocol.handlers.streams import KEEP_ALIVE, PAUSE, StreamItem
from tasks.wire import stream_event_json


@dataclass(frozen=True)
class Framing:
    """How one binding writes a stream: an event's frame, and the frame of an error that ends
    it. Both return whole frames (`id:`/`event:` lines included)."""

    event: Callable[[int | None, dict[str, Any]], bytes]
    error: Callable[[A2AError], bytes]


def frame(request_id: Any, sequence: int | None, body: dict[str, Any]) -> bytes:
    message = jsonbytes.dumps({"jsonrpc": "2.0", "id": request_id, **body})
    return data_frame(sequence, message)


def data_frame(sequence: int | None, data: bytes, event: str = "") -> bytes:
    prefix = b"id: %d\n" % sequence if sequence is not None else b""
    if event:
        prefix += b"event: " + event.encode() + b"\n"
    return prefix + b"data: " + data + b"\n\n"


def jsonrpc_framing(request_id: Any, version: str) -> Framing:
    return Framing(
        event=lambda sequence, event: frame(
            request_id, sequence, {"result": stream_event_json(event, version)}
        ),
        error=lambda error: frame(request_id, None, {"error": error_object(error, version)}),
    )


async def frames(items: AsyncIterator[StreamItem], framing: Framing) -> AsyncIterator[bytes]:
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
                pending.append(framing.event(sequence, event))
    except A2AError as exc:
        pending.append(framing.error(exc))
    except Exception as exc:
        pending.append(framing.error(internal_error(exc)))
    finally:
        # Closing the items' generator where it waits releases what the stream held (its
        # subscription, say).
        with contextlib.suppress(Exception):
            await items.aclose()  # type: ignore[attr-defined]
    if pending:
        yield b"".join(pending)


def event_stream(content: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(content, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def sse_response(items: AsyncIterator[StreamItem], framing: Framing) -> StreamingHttpResponse:
    return event_stream(frames(items, framing))


def sse_error(error: A2AError, framing: Framing) -> StreamingHttpResponse:
    """A stream of one frame: the error, for clients that only read streams."""
    body = framing.error(error)

    async def single() -> AsyncIterator[bytes]:
        yield body

    return event_stream(single())
