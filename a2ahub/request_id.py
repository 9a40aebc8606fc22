"""Each HTTP request's id: the caller's `X-Request-ID` when it is sane, a new one otherwise,
echoed back in the answer's header and carried by every log line written while the request
is handled (`a2ahub.logs`), by the work it starts on this process's event loop, and by the
Celery jobs it queues (`a2ahub.worker.job_message`, `a2ahub.celery`).

The id lives in a context variable, which asyncio tasks and `sync_to_async` threads copy, so
nothing has to pass it along. Setting it and writing one header is all a request pays; the
agent, method and binding are read from the binding's own record of the request only when a
line is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.signals import request_finished

if TYPE_CHECKING:  # the log formatter imports this module while logging is set up
    from django.http import HttpRequest
    from django.http.response import HttpResponseBase

HEADER = "X-Request-ID"
ASGI_HEADER = b"x-request-id"
# The header of a Celery job's message that names the request that queued it.
JOB_HEADER = "a2ahub_request_id"
# Ids from tracing systems and proxies (UUIDs, hex, base64, `Root=1-...`) fit; a line break,
# a quote or a megabyte of text, which would forge or flood log lines, does not.
SANE = re.compile(r"[A-Za-z0-9._:;=+/@-]{1,128}")


class Described(Protocol):
    """What a binding knows of a request as it reads it (its `Exchange`)."""

    agent: str
    method: str


class RequestContext:
    """The request being handled: its id, and once the binding has read them, its agent,
    method and binding."""

    __slots__ = ("binding", "exchange", "id")

    def __init__(self, request_id: str) -> None:
        self.id = request_id
        self.binding = ""
        self.exchange: Described | None = None

    @property
    def agent(self) -> str:
        return self.exchange.agent if self.exchange is not None else ""

    @property
    def method(self) -> str:
        return self.exchange.method if self.exchange is not None else ""


current: ContextVar[RequestContext | None] = ContextVar("a2ahub_request", default=None)


def accepted(sent: str | None) -> str:
    """The caller's id if it is sane, else a new one."""
    if sent and SANE.fullmatch(sent):
        return sent
    return os.urandom(16).hex()


def begin(sent: str | None) -> RequestContext:
    context = RequestContext(accepted(sent))
    current.set(context)
    return context


def begin_asgi(headers: list[tuple[bytes, bytes]]) -> RequestContext:
    """`begin` with the header as an ASGI scope holds it (names in lower case)."""
    for name, value in headers:
        if name == ASGI_HEADER:
            return begin(value.decode("latin1"))
    return begin(None)


def resume(sent: str | None) -> None:
    """Carry on, in a job, the request that queued it (an id this hub made or accepted)."""
    current.set(RequestContext(sent) if sent and SANE.fullmatch(sent) else None)


def describe(exchange: Described, binding: str) -> None:
    """Name the binding serving the request, and its record of the agent and method, for
    the log lines written from here on."""
    context = current.get()
    if context is not None:
        context.exchange = exchange
        context.binding = binding


def current_id() -> str:
    context = current.get()
    return context.id if context is not None else ""


Handler = Callable[["HttpRequest"], Any]


class RequestIdMiddleware:
    """The id for requests Django serves (pages, probes, the admin); the A2A doors served by
    `protocol.asgi` set theirs there. First in MIDDLEWARE, so that the lines of every
    middleware after it carry the id.

    The id is not reset on the way out: Django logs a 4xx or 5xx answer after the middleware
    has returned, and that line should carry it too. Under ASGI each request has an asyncio
    task of its own, whose context ends with it; served synchronously (the test client, WSGI)
    the id is forgotten once the response is closed."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)
        else:
            request_finished.connect(forget, dispatch_uid="a2ahub.request_id.forget")

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self.answer_async(request)
        context = begin(request.headers.get(HEADER))
        response: HttpResponseBase = self.get_response(request)
        response[HEADER] = context.id
        return response

    async def answer_async(self, request: HttpRequest) -> HttpResponseBase:
        context = begin(request.headers.get(HEADER))
        response: HttpResponseBase = await self.get_response(request)
        response[HEADER] = context.id
        return response


def forget(**_: object) -> None:
    current.set(None)
