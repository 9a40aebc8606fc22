"""A test client of the A2A doors that calls the ASGI application production serves
(`a2ahub.asgi.application`), so the tests run the door's own routes, request and writes.

The application runs on an event loop in a thread of its own, one per test (the `door`
fixture): a test reads a stream while the agent still works, and an inline executor keeps
working after a non-blocking send was answered. Django's test clients go through Django's
handler instead, and httpx's ASGI transport reads whole responses (no stream would end).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import contextmanager
from functools import cached_property
from http.cookies import SimpleCookie
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlencode

from asgiref.sync import SyncToAsync
from django.db import connections
from django.test import Client as DjangoClient
from django.utils.datastructures import CaseInsensitiveMapping

from a2ahub import asyncdb

T = TypeVar("T")
WAIT = 30.0  # seconds one step of a request may take before the test fails rather than hangs
HOST = "testserver"  # the host Django's test client names, which the test settings allow
JSON = "application/json"


class DoorLoop:
    """An event loop running on a thread of its own, where the application serves requests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="door", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the loop and wait for its result (from the test's thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(WAIT)

    async def wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """The same, awaited from another event loop (an async test's)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return await asyncio.wait_for(asyncio.wrap_future(future), WAIT)

    def close(self) -> None:
        self.run(self.settle())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)
        self.loop.close()
        # Work the application handed to asgiref's shared thread (outside any request) left
        # that thread's connection open, and PostgreSQL drops no database with one open.
        SyncToAsync.single_thread_executor.submit(connections.close_all).result(WAIT)

    async def settle(self) -> None:
        """Cancel what the test left running (an agent's turn, a stream nobody closed) and
        close the loop's database pool."""
        left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        await asyncdb.close()
        await self.loop.shutdown_asyncgens()


# The loop of the running test (the `door` fixture); clients made during the test use it.
current: DoorLoop | None = None


@contextmanager
def running() -> Iterator[DoorLoop]:
    global current
    current = DoorLoop()
    try:
        yield current
    finally:
        loop, current = current, None
        loop.close()


def door_loop() -> DoorLoop:
    if current is None:
        raise RuntimeError("the A2A door needs the `door` fixture (tests/conftest.py)")
    return current


class Exchange:
    """One request in flight, on the loop: the application's messages as they come, and the
    client leaving (a stream closed early)."""

    def __init__(self, scope: dict[str, Any], body: bytes) -> None:
        self.body: bytes | None = body
        self.messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.left = asyncio.Event()
        self.ended = False
        self.serving = asyncio.create_task(self.serve(scope))

    async def serve(self, scope: dict[str, Any]) -> None:
        from a2ahub.asgi import application  # starts the hub's web process on first use

        try:
            await application(scope, self.receive, self.messages.put)
        except Exception as exc:
            await self.messages.put({"type": "failed", "error": exc})
        else:
            await self.messages.put({"type": "served"})

    async def receive(self) -> dict[str, Any]:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def next(self, expected: str) -> dict[str, Any]:
        message = await self.messages.get()
        if message["type"] == "failed":
            raise message["error"]
        assert message["type"] == expected, f"the application sent {message}, not {expected}"
        return message

    async def start(self) -> dict[str, Any]:
        return await self.next("http.response.start")

    async def chunk(self) -> bytes | None:
        """The next part of the body; None once the whole body has come and the application
        has returned."""
        if self.ended:
            return None
        message = await self.next("http.response.body")
        if not message.get("more_body", False):
            self.ended = True
            await self.next("served")
        return bytes(message.get("body", b""))

    async def leave(self) -> None:
        """Disconnect, as a client closing a stream does, and wait for the application."""
        self.left.set()
        await asyncio.wait_for(asyncio.shield(self.serving), WAIT)


async def opened(scope: dict[str, Any], body: bytes) -> tuple[Exchange, dict[str, Any]]:
    exchange = Exchange(scope, body)
    return exchange, await exchange.start()


class DoorResponse:
    """An answer, read as Django's test responses are: `status_code`, headers by name,
    `content` and `json()`; an event stream (`streaming`) is read part by part from
    `streaming_content`, which a sync client gives as an iterator and an async one as an
    async iterator."""

    def __init__(self, start: dict[str, Any], content: Any, close: Any) -> None:
        self.status_code: int = start["status"]
        self.headers = CaseInsensitiveMapping(
            {k.decode("latin1"): v.decode("latin1") for k, v in start.get("headers", [])}
        )
        self.streaming = self.headers.get("Content-Type", "").startswith("text/event-stream")
        self.cookies = SimpleCookie()  # every Set-Cookie, as Django's test responses keep them
        for name, value in start.get("headers", []):
            if name.lower() == b"set-cookie":
                self.cookies.load(value.decode("latin1"))
        self.streaming_content = content
        self.close = close

    @cached_property
    def content(self) -> bytes:
        return b"".join(self.streaming_content)

    @property
    def text(self) -> str:
        return self.content.decode()

    def json(self) -> Any:
        return json.loads(self.content)

    def __getitem__(self, name: str) -> str:
        return str(self.headers[name])

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)

    def has_header(self, name: str) -> bool:
        return name in self.headers

    def __enter__(self) -> DoorResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def scope_of(method: str, path: str, query: dict[str, Any] | None, headers: dict[str, str],
             body: bytes) -> dict[str, Any]:  # fmt: skip
    """The HTTP scope a server hands the application for this request."""
    path, _, query_string = path.partition("?")
    if query:
        query_string = "&".join(filter(None, [query_string, urlencode(query, doseq=True)]))
    if body or method in {"POST", "PUT", "PATCH"}:
        headers = {"Content-Length": str(len(body))} | headers
    given = [(name.lower().encode("latin1"), value.encode()) for name, value in headers.items()]
    raw = given if any(name == b"host" for name, _ in given) else [(b"host", HOST.encode()), *given]
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "method": method, "scheme": "http",
        "path": unquote(path), "raw_path": quote(path, safe="/:@!$&'()*+,;=%").encode(),
        "query_string": query_string.encode(), "root_path": "", "headers": raw,
        "client": ("127.0.0.1", 50000), "server": (HOST, 80),
    }  # fmt: skip


def encoded(data: Any, content_type: str) -> bytes:
    """A body as Django's test client encodes it: text as UTF-8, anything else as JSON."""
    if data is None:
        return b""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    assert "json" in content_type, f"only JSON bodies are encoded here, not {content_type}"
    return json.dumps(data).encode()


def header_fields(headers: dict[str, str] | None, content_type: str | None,
                  extra: dict[str, str]) -> dict[str, str]:  # fmt: skip
    """Request headers, taken from `headers` and from Django's `HTTP_*` keywords (and
    `REMOTE_ADDR`, taken out before: the caller's address)."""
    fields = {"Content-Type": content_type} if content_type else {}
    for name, value in extra.items():
        assert name.startswith("HTTP_"), f"{name}: only HTTP_* keywords name headers"
        fields[name.removeprefix("HTTP_").replace("_", "-")] = value
    return fields | (headers or {})


class Client:
    """What both door clients hold: the test's loop, and the session a test signed in."""

    def __init__(self) -> None:
        self.loop = door_loop()
        self.cookies = ""

    def force_login(self, user: Any) -> None:
        """Sign `user` in: their session's cookie goes with every request from now on."""
        browser = DjangoClient()
        browser.force_login(user)
        self.cookies = "; ".join(f"{c.key}={c.value}" for c in browser.cookies.values())

    def prepared(self, method: str, path: str, data: Any, content_type: str | None,
                 headers: dict[str, str] | None, query: dict[str, Any] | None,
                 extra: dict[str, str]) -> tuple[dict[str, Any], bytes]:  # fmt: skip
        """The scope and body of a request given in the shapes of Django's test client."""
        body = encoded(data, content_type or "")
        address = extra.pop("REMOTE_ADDR", None)
        fields = header_fields(headers, content_type, extra)
        if self.cookies:
            fields["Cookie"] = self.cookies
        scope = scope_of(method, path, query, fields, body)
        if address is not None:
            scope["client"] = (address, 50000)
        return scope, body


class Door(Client):
    """A client of the A2A doors with the call shapes of Django's test `Client`: `post(path,
    data, content_type=..., headers=...)`, `get(path, query)`, `delete`, `generic`."""

    def generic(self, method: str, path: str, data: Any = None, content_type: str | None = JSON,
                headers: dict[str, str] | None = None, *, query: dict[str, Any] | None = None,
                **extra: Any) -> DoorResponse:  # fmt: skip
        scope, body = self.prepared(method, path, data, content_type, headers, query, extra)
        exchange, start = self.loop.run(opened(scope, body))
        response = DoorResponse(start, self.chunks(exchange), lambda: self.leave(exchange))
        if not response.streaming:
            response.content  # noqa: B018 (read whole, as Django's client does)
        return response

    def chunks(self, exchange: Exchange) -> Iterator[bytes]:
        try:
            while (chunk := self.loop.run(exchange.chunk())) is not None:
                if chunk:
                    yield chunk
        finally:
            self.leave(exchange)

    def leave(self, exchange: Exchange) -> None:
        # (A stream's generator may be collected on the loop's thread, or after the test.)
        if threading.current_thread() is not self.loop.thread and not self.loop.loop.is_closed():
            self.loop.run(exchange.leave())

    def post(self, path: str, data: Any = None, content_type: str = JSON,
             headers: dict[str, str] | None = None, **extra: Any) -> DoorResponse:  # fmt: skip
        return self.generic("POST", path, data, content_type, headers, **extra)

    def get(self, path: str, data: dict[str, Any] | None = None,
            headers: dict[str, str] | None = None, **extra: Any) -> DoorResponse:  # fmt: skip
        return self.generic("GET", path, None, None, headers, query=data, **extra)

    def delete(self, path: str, data: Any = None, content_type: str | None = None,
               headers: dict[str, str] | None = None, **extra: Any) -> DoorResponse:  # fmt: skip
        return self.generic("DELETE", path, data, content_type, headers, **extra)


class AsyncDoor(Client):
    """The same for async tests: each call is awaited, and a stream's `streaming_content` is
    an async iterator. The application still runs on the door's loop, not the test's."""

    async def generic(self, method: str, path: str, data: Any = None,
                      content_type: str | None = JSON, headers: dict[str, str] | None = None,
                      *, query: dict[str, Any] | None = None, **extra: Any,
                      ) -> DoorResponse:  # fmt: skip
        scope, body = self.prepared(method, path, data, content_type, headers, query, extra)
        exchange, start = await self.loop.wait(opened(scope, body))
        response = DoorResponse(start, self.chunks(exchange), None)
        if not response.streaming:
            response.content = b"".join([chunk async for chunk in response.streaming_content])
        return response

    async def chunks(self, exchange: Exchange) -> AsyncIterator[bytes]:
        try:
            while (chunk := await self.loop.wait(exchange.chunk())) is not None:
                if chunk:
                    yield chunk
        finally:
            await self.loop.wait(exchange.leave())

    async def post(self, path: str, data: Any = None, content_type: str = JSON,
                   headers: dict[str, str] | None = None, **extra: Any,
                   ) -> DoorResponse:  # fmt: skip
        return await self.generic("POST", path, data, content_type, headers, **extra)

    async def get(self, path: str, data: dict[str, Any] | None = None,
                  headers: dict[str, str] | None = None, **extra: Any,
                  ) -> DoorResponse:  # fmt: skip
        return await self.generic("GET", path, None, None, headers, query=data, **extra)
