"""The A2A doors as a bare ASGI app, in front of the views of the route table
(`protocol.routes`): the one door production runs and the tests call.

Django's ASGI handler spends two thread hops per request on its request signals, and with
them a thread of its own; the doors use no middleware, sessions, cookies or signals, so they
are served here instead: read the body (refusing it once it passes the size limit), hand the
view our own request (`a2ahub.request`), send its answer. Sync work the view does still gets
one thread per request, and that thread's database connection goes back to the pool at the
end, as Django's `request_finished` signal would do. Writes on the hot path skip threads
altogether (`a2ahub.asyncdb`).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.http.response import HttpResponseBase

from a2ahub import body_limit, metrics, numerals, request_id
from a2ahub.errors import InvalidRequestError, internal_error
from a2ahub.request import Request
from protocol import door
from protocol.routes import Route, route_at

logger = logging.getLogger(__name__)

Scope = dict[str, Any]


class Disconnected(Exception):
    """The client went away before its request was read."""


class TooLarge(Exception):
    """The body passed the size limit while it arrived."""


async def serve(scope: Scope, receive: Any, send: Any, route: Route) -> None:
    request_id.begin_asgi(scope.get("headers", []))
    try:
        declared = body_limit.declared_length(scope)
        body = await read_body(receive, settings.A2A_MAX_REQUEST_BYTES, declared)
    except Disconnected:
        return
    except TooLarge:
        await send_plain(too_large(scope, route), send)
        return
    async with door.request_context():
        response = await respond(scope, body, route)
    # Answered outside the request's thread context: a stream may stay open for hours, and
    # the thread would stay with it (a thousand streams, a thousand idle threads).
    if response.streaming:
        await send_streaming(response, send, receive)
    else:
        await send_plain(response, send)


async def respond(scope: Scope, body: bytes, route: Route) -> HttpResponseBase:
    request = Request.of(scope, body)
    try:
        return await route.view(request, **route.kwargs)
    except Exception as exc:
        # The views answer every A2A error themselves; this is the last resort.
        logger.error("the A2A endpoint at %s failed", request.path)
        return route.refuse(request, internal_error(exc), None)


def too_large(scope: Scope, route: Route) -> HttpResponseBase:
    limit = settings.A2A_MAX_REQUEST_BYTES
    error = InvalidRequestError(f"The request body is over {limit} bytes.")
    return route.refuse(Request.of(scope), error, 413)


def body_limit_at(scope: Scope) -> body_limit.Limit | None:
    """The body limit of an A2A door, refused in its binding's shape (the web server asks,
    before it reads a body)."""
    route = route_at(scope.get("path", ""))
    if route is None:
        return None

    def refusal() -> body_limit.Refusal:
        response = too_large(scope, route)
        headers = [(k.encode("ascii"), v.encode("latin1")) for k, v in response.items()]
        content = response.content if isinstance(response, HttpResponse) else b""
        return body_limit.Refusal(response.status_code, headers, content)

    return body_limit.Limit(settings.A2A_MAX_REQUEST_BYTES, refusal)


async def read_body(receive: Any, limit: int, declared: str = "") -> bytes:
    """The whole body, refused (TooLarge) at once when it declares more than `limit` bytes,
    or as soon as more arrive."""
    if numerals.is_over(declared, limit):
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def headers_of(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
    headers = [(name.encode("ascii"), value.encode("latin1")) for name, value in response.items()]
    headers.append((request_id.ASGI_HEADER, request_id.current_id().encode("ascii")))
    return headers


async def send_plain(response: Any, send: Any) -> None:
    start = {"type": "http.response.start", "status": response.status_code}
    await send(start | {"headers": headers_of(response)})
    await send({"type": "http.response.body", "body": response.content})


async def send_streaming(response: Any, send: Any, receive: Any) -> None:
    """Stream until the content ends or the client leaves; leaving closes the content's
    generator, which releases what the stream held (its subscription, say).

    The content is pumped by the request's own task, not a new one: a stream's first event
    is often ready already, and leaves before the work it set off (the agent's turn) runs."""
    streaming = asyncio.current_task()
    assert streaming is not None
    left = False

    async def disconnected() -> None:
        nonlocal left
        while (await receive())["type"] != "http.disconnect":
            pass
        left = True
        streaming.cancel()

    listening = asyncio.create_task(disconnected())
    metrics.OPEN_STREAMS.inc()
    try:
        await pump(response, send)
    except asyncio.CancelledError:
        if not left:
            raise
        streaming.uncancel()
    except OSError:
        pass  # the connection broke under a write
    finally:
        metrics.OPEN_STREAMS.dec()
        listening.cancel()


async def pump(response: Any, send: Any) -> None:
    start = {"type": "http.response.start", "status": response.status_code}
    await send(start | {"headers": headers_of(response)})
    async with aclosing(aiter(response)) as content:
        async for part in content:
            await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body"})
