"""Big requests served by a process of their own, so that the web process keeps answering.

Reading, checking, storing and answering a 10 MB body takes C calls that each hold the
interpreter for the length of the body (the JSON parse, protobuf's checks, the rows' JSON,
the answer's): tens of milliseconds in which the web process answers nobody, whatever thread
they run on. With `A2A_BULK_SOCKET` set (runhub sets it for a distributed hub), a web process
hands a door request whose body passes `A2A_THREAD_BODY_BYTES` to the bulk process listening
on that Unix socket, as the body arrives, and relays the answer (a stream event by event):
copying bytes holds nothing for long. The bulk process is the same application, given no
socket, so it serves what it is handed; it is the hub's own, so the call is not outbound
(`a2ahub.outbound` guards calls to addresses from the network).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from functools import cache
from typing import Any

import httpx
import orjson
from django.conf import settings
from django.http.response import HttpResponseBase

from a2ahub import metrics, request_id

# They describe one connection, not the request or its answer.
HOP_BY_HOP = {
    b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer",
    b"transfer-encoding", b"upgrade",
}  # fmt: skip


# What a web process tells the bulk process of a request it hands over (the scheme it came
# by: the bulk process sees a Unix socket), and what the bulk process tells it back (the
# request's labels, for the web process to count: nothing scrapes the bulk process). A request
# from the network loses any header of ours before it is handed over.
OURS = b"x-a2ahub-"
SCHEME = OURS + b"scheme"
COUNTED = "x-a2ahub-counted"
SCHEMES = {b"http": "http", b"https": "https"}


def enabled() -> bool:
    return bool(settings.A2A_BULK_SOCKET)


def prepare() -> None:
    """Before a web process serves: its client to the bulk process made (some 10 ms, a TLS
    context among it) and anyio's asyncio backend loaded (some 20 ms), which the first big
    request did on the event loop, holding the process's other requests."""
    if enabled():
        client(settings.A2A_BULK_SOCKET)
        importlib.import_module("anyio._backends._asyncio")


@cache
def client(path: str) -> httpx.AsyncClient:
    # No timeout: the bulk process answers when the agent does, and a stream may last hours;
    # the client that asked bounds its own wait. No TLS on a Unix socket: without `verify`,
    # httpx would load the certificate store (some 100 ms, on the loop, at the first request).
    transport = httpx.AsyncHTTPTransport(uds=path, verify=False)
    return httpx.AsyncClient(transport=transport, timeout=None, base_url="http://bulk")


async def hand_over(scope: dict[str, Any], body: AsyncIterator[bytes]) -> httpx.Response | None:
    """The bulk process's answer (its body still to be read, then closed) to the request, with
    its body from `body`; None when the bulk process cannot be reached (nothing was taken
    from `body`)."""
    headers = [(name, value) for name, value in scope.get("headers", [])
               if name not in HOP_BY_HOP and name != request_id.ASGI_HEADER
               and not name.startswith(OURS)]  # fmt: skip
    # The bulk process logs, and answers, with the id this process gave the request.
    headers.append((request_id.ASGI_HEADER, request_id.current_id().encode("ascii")))
    headers.append((SCHEME, scope.get("scheme", "http").encode("ascii")))
    target = scope.get("raw_path") or scope["path"].encode()
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    http = client(settings.A2A_BULK_SOCKET)
    request = http.build_request(
        scope["method"], target.decode("latin1"), headers=headers, content=body
    )
    try:
        return await http.send(request, stream=True)
    except httpx.ConnectError:
        return None


def as_handed_over(scope: dict[str, Any]) -> dict[str, Any]:
    """In the bulk process: the scope of a request as the web process that handed it over saw
    it (its scheme; without the headers that told it)."""
    headers, scheme = [], "http"
    for name, value in scope.get("headers", []):
        if name == SCHEME:
            scheme = SCHEMES.get(value, scheme)
        else:
            headers.append((name, value))
    return scope | {"headers": headers, "scheme": scheme}


def count(
    response: HttpResponseBase, labels: tuple[str, str, str, str, str], seconds: float
) -> None:
    """Count a request answered (its agent, method, version, binding and code): in this
    process's metrics, or in the bulk process on its answer, for the web process that relays
    it to count (`count_relayed`)."""
    if settings.BULK_PROCESS:
        response[COUNTED] = orjson.dumps(labels).decode("ascii")
    else:
        metrics.record_request(*labels, seconds)


def count_relayed(upstream: httpx.Response, seconds: float) -> None:
    """Count in this process the request the bulk process answered (by the labels it sent)."""
    try:
        labels = orjson.loads(upstream.headers.get(COUNTED, "null"))
    except orjson.JSONDecodeError:
        return
    if isinstance(labels, list) and len(labels) == 5 and all(isinstance(v, str) for v in labels):
        agent, method, version, binding, code = labels
        metrics.record_request(agent, method, version, binding, code, seconds)


class Relayed:
    """The bulk process's answer, in the shape `protocol.asgi` sends an answer."""

    def __init__(self, upstream: httpx.Response) -> None:
        self.upstream = upstream
        self.status_code = upstream.status_code
        self.streaming = upstream.headers.get("content-type", "").startswith("text/event-stream")

    def items(self) -> list[tuple[str, str]]:
        # Without the request id: this process adds it (the same one) as to any answer.
        return [
            (name.decode("latin1"), value.decode("latin1"))
            for name, value in self.upstream.headers.raw
            if name.lower() not in HOP_BY_HOP
            and name.lower() != request_id.ASGI_HEADER
            and not name.lower().startswith(OURS)
        ]

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.upstream.aiter_raw()
