"""The A2A doors as a bare ASGI app, in front of the views of the route table
(`protocol.routes`): the one door production runs and the tests call.

Django's ASGI handler spends two thread hops per request on its request signals, and with
them a thread of its own; the doors use no middleware, sessions, cookies or signals, so they
are served here instead: read the body (refusing it once it passes the size limit; a big one
goes to the bulk process, `protocol.bulk`), hand the view our own request (`a2ahub.request`),
send its answer. Sync work the view does still gets one thread per request, and that
thread's database connection goes back to the pool at the end, as Django's
`request_finished` signal would do. Writes on the hot path skip threads
altogether (`a2ahub.asyncdb`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx
from django.conf import settings
from django.http import HttpResponse
from django.http.response import HttpResponseBase

from a2ahub import body_limit, metrics, numerals, request_id
from a2ahub.errors import InvalidRequestError, internal_error
from a2ahub.request import Request
from protocol import bulk, door
from protocol.routes import Route, route_at

logger = logging.getLogger(__name__)

Scope = dict[str, Any]


class Disconnected(Exception):
    """The client went away before its request was read."""


class TooLarge(Exception):
    """The body passed the size limit while it arrived."""


async def serve(scope: Scope, receive: Any, send: Any, route: Route) -> None:
    if settings.BULK_PROCESS:
        scope = bulk.as_handed_over(scope)
    request_id.begin_asgi(scope.get("headers", []))
    body = Body(receive, settings.A2A_MAX_REQUEST_BYTES)
    try:
        if numerals.is_over(body_limit.declared_length(scope), body.limit):
            raise TooLarge
        big = bulk.enabled() and await body.passes(settings.A2A_THREAD_BODY_BYTES)
        if big and await hand_over(scope, body, send, receive, route):
            return
        whole = await body.read()
    except Disconnected:
        return
    except TooLarge:
        await send_plain(too_large(scope, route), send)
        return
    async with door.request_context():
        response = await respond(scope, whole, route)
    # Answered outside the request's thread context: a stream may stay open for hours, and
    # the thread would stay with it (a thousand streams, a thousand idle threads).
    if response.streaming:
        await send_streaming(response, send, receive)
    else:
        await send_plain(response, send)


async def hand_over(scope: Scope, body: Body, send: Any, receive: Any, route: Route) -> bool:
    """Whether the bulk process (`protocol.bulk`) answered the request; when it cannot be
    reached, the request is this process's to serve."""
    started = time.perf_counter()
    try:
        upstream = await bulk.hand_over(scope, body.stream())
    except httpx.HTTPError as exc:
        logger.error("the bulk process failed a request to %s: %r", scope["path"], exc)
        await send_plain(route.refuse(Request.of(scope), internal_error(exc), None), send)
        return True
    if upstream is None:
        return False
    bulk.count_relayed(upstream, time.perf_counter() - started)
    answer = bulk.Relayed(upstream)
    try:
        if answer.streaming:
            await send_streaming(answer, send, receive)
        else:
            await pump(answer, send)
    except httpx.HTTPError as exc:
        logger.error("the bulk process broke off its answer to %s: %r", scope["path"], exc)
    finally:
        await upstream.aclose()
    return True


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


class Body:
    """A request's body as it arrives, refused (TooLarge) once more than `limit` bytes came."""

    def __init__(self, receive: Any, limit: int) -> None:
        self.receive = receive
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.done = False

    async def passes(self, size: int) -> bool:
        """Whether the body is longer than `size`, read until that is known (what came is
        kept for `stream` or `read`)."""
        while not self.done and self.size <= size:
            await self.next_chunk()
        return self.size > size

    async def read(self) -> bytes:
        while not self.done:
            await self.next_chunk()
        return b"".join(self.chunks)

    async def stream(self) -> AsyncIterator[bytes]:
        """What came so far, then the rest as it comes."""
        for chunk in list(self.chunks):
            yield chunk
        while not self.done:
            yield await self.next_chunk()

    async def next_chunk(self) -> bytes:
        message = await self.receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk: bytes = message.get("body", b"")
        self.size += len(chunk)
        if self.size > self.limit:
            raise TooLarge
        self.chunks.append(chunk)
        self.done = not message.get("more_body", False)
        return chunk


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
