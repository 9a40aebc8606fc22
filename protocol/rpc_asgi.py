"""The A2A JSON-RPC endpoints as a bare ASGI app in front of the same view.

Django's ASGI handler spends two thread hops per request on its request signals, and with
them a thread of its own; these endpoints use no middleware, sessions, cookies or signals, so
they are served here instead: read the body (refusing it once it passes the size limit), hand
the view the parts of the request it reads, send its answer. Sync work the view does still
gets one thread per request, and that thread's database connection goes back to the pool at
the end, as Django's `request_finished` signal would do. Writes on the hot path skip threads
altogether (`a2ahub.asyncdb`).
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, cast

from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse, QueryDict
from django.http.response import HttpResponseBase

from a2ahub import asyncdb, body_limit, metrics, numerals, request_id
from a2ahub.errors import A2AError, InvalidRequestError, internal_error
from protocol import jsonrpc, rest
from protocol.jsonrpc import answer_version, endpoint, rpc_response
from tasks.wire import V03, V1

logger = logging.getLogger(__name__)

Scope = dict[str, Any]


class Disconnected(Exception):
    """The client went away before its request was read."""


class TooLarge(Exception):
    """The body passed the size limit while it arrived."""


@dataclass(frozen=True)
class Endpoint:
    """One A2A door served here: its view, and how it refuses a body over the limit."""

    view: Callable[..., Awaitable[HttpResponseBase]]
    # Its answer to an error met before the view runs (or that escaped it), in its binding's
    # shape; the status is the error's own when None.
    refuse: Callable[[Scope, A2AError, int | None], HttpResponseBase]
    kwargs: dict[str, str]


def rpc_refusal(scope: Scope, error: A2AError, status: int | None) -> HttpResponseBase:
    return rpc_response(None, header_version(scope), error=error, status=status or 200)


def rest_refusal(scope: Scope, error: A2AError, status: int | None) -> HttpResponseBase:
    return rest.rest_error(error, V03 if "/v1/" in scope["path"] else V1, status)


ENDPOINTS = (
    (re.compile(r"/agents/(?P<slug>[^/]+)/jsonrpc/?"), endpoint, rpc_refusal),
    (
        re.compile(r"/agents/(?P<slug>[^/]+)/rest(?:/(?P<tail>.*))?", re.DOTALL),
        rest.endpoint,
        rest_refusal,
    ),
    (re.compile(r"/a2a/jsonrpc/?"), jsonrpc.shared_endpoint, rpc_refusal),
    (
        re.compile(r"/a2a/rest/(?P<tenant>[^/]+)(?:/(?P<tail>.*))?", re.DOTALL),
        rest.shared_endpoint,
        rest_refusal,
    ),
)


def endpoint_for(path: str) -> Endpoint | None:
    """The A2A door at `path`, if one is there; every other path is the site's."""
    for pattern, view, refuse in ENDPOINTS:
        found = pattern.fullmatch(path)
        if found is not None:
            kwargs = {name: value for name, value in found.groupdict().items() if value}
            return Endpoint(view, refuse, kwargs)
    return None


async def serve(scope: Scope, receive: Any, send: Any, door: Endpoint) -> None:
    request_id.begin_asgi(scope.get("headers", []))
    try:
        declared = body_limit.declared_length(scope)
        body = await read_body(receive, settings.A2A_MAX_REQUEST_BYTES, declared)
    except Disconnected:
        return
    except TooLarge:
        await send_plain(too_large(scope, door), send)
        return
    asyncdb.enabled.set(True)
    async with ThreadSensitiveContext() as context:
        try:
            response = await respond(scope, body, door)
        finally:
            if context in SyncToAsync.context_to_thread_executor:
                await sync_to_async(close_old_connections)()
    # Answered outside the request's thread context: a stream may stay open for hours, and
    # the thread would stay with it (a thousand streams, a thousand idle threads).
    if response.streaming:
        await send_streaming(response, send, receive)
    else:
        await send_plain(response, send)


async def respond(scope: Scope, body: bytes, door: Endpoint) -> HttpResponseBase:
    try:
        return await door.view(cast(HttpRequest, RpcRequest(scope, body)), **door.kwargs)
    except Exception as exc:
        # The views answer every A2A error themselves; this is the last resort.
        logger.error("the A2A endpoint at %s failed", scope["path"])
        return door.refuse(scope, internal_error(exc), None)


class Headers:
    """Request headers by case-insensitive name, as `HttpRequest.headers` reads them."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.values: dict[str, str] = {}
        for name, value in raw:
            key, text = name.decode("latin1").lower(), value.decode("latin1")
            self.values[key] = f"{self.values[key]},{text}" if key in self.values else text

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self.values[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self.values


class RpcRequest:
    """What the JSON-RPC view reads of a request (method, headers, query, media type, body),
    taken straight from the ASGI scope. Building Django's request (its META, header parsing
    and lazy objects) was a tenth of a fast send's CPU; anything else the view may ask for
    (cookies, the absolute URL) comes from one built on first use."""

    def __init__(self, scope: Scope, body: bytes) -> None:
        self.scope = scope
        self.body = body
        self.method = scope["method"]
        self.headers = Headers(scope.get("headers", []))
        self.content_type = self.headers.get("Content-Type", "").split(";")[0].strip()

    @cached_property
    def GET(self) -> QueryDict:
        query = self.scope.get("query_string", b"")
        return QueryDict(query.decode("latin1")) if query else no_query()

    @cached_property
    def django_request(self) -> ASGIRequest:
        return ASGIRequest(self.scope, io.BytesIO(self.body))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.django_request, name)


@cache
def no_query() -> QueryDict:
    """The (immutable) query of a request without one, made once."""
    return QueryDict()


def too_large(scope: Scope, door: Endpoint) -> HttpResponseBase:
    limit = settings.A2A_MAX_REQUEST_BYTES
    return door.refuse(scope, InvalidRequestError(f"The request body is over {limit} bytes."), 413)


def body_limit_at(scope: Scope) -> body_limit.Limit | None:
    """The body limit of an A2A door, refused in its binding's shape (the web server asks,
    before it reads a body)."""
    door = endpoint_for(scope.get("path", ""))
    if door is None:
        return None

    def refusal() -> body_limit.Refusal:
        response = too_large(scope, door)
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


def header_version(scope: Scope) -> str:
    """The version an answer given before the view runs is shaped in (see `answer_version`)."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"a2a-version":
            return answer_version(".".join(value.decode("latin1").strip().split(".")[:2]))
    return answer_version("")


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
