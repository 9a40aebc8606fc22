"""daphne, as the hub runs it: `python -m a2ahub.daphne` takes daphne's own arguments.

Seven changes, for streams' small frames, for the event loop under them, for request bodies,
for crowds of new connections and for status lines:
- Twisted's reactor runs on uvloop's event loop rather than asyncio's own: the same work
  took a tenth less CPU (one loop turn is every stream's ready work, so every wait on the
  loop got shorter too).
- Every connection gets TCP_NODELAY. Twisted leaves Nagle's algorithm on, so a frame waited
  for the client's delayed ACK (about 40 ms) whenever one went out while the previous one was
  unacknowledged: a stream's first event came 50 ms late on an idle server.
- A part of a streamed body is written to the socket at once. Twisted buffers writes until the
  reactor's next turn, and in that turn everything else that was ready runs first (for a new
  stream, the whole agent turn it just started): its first event waited for all of it.
- Twisted does not parse POST bodies as forms (`parsePOSTFormSubmission`): the ASGI app reads
  every body itself, and Twisted's look at each request's Content-Type alone (through an
  email message object) was a twentieth of a streamed turn's CPU.
- A body over its URL's limit (`a2ahub.body_limit`) is refused with 413 as soon as the
  request says so (its `Content-Length`) or its chunks pass the limit, and not read further:
  Twisted reads every body whole before daphne hands the request over, and daphne then
  queues all of it at once, so a request declaring 600 MB grew the process by as much.
  After the answer the connection is half-closed; what the client still sends is dropped
  unread until it stops, or for LINGER_SECONDS at most (closing at once with unread data
  would reset the connection, and the client could lose the answer).
- The listening socket queues up to LISTEN_BACKLOG connections, not Twisted's 50. Clients come
  in crowds: when a web process dies, every stream it held re-attaches elsewhere at once, and
  a connection past a full queue is dropped by the kernel, then fails on the client's side.
- A status line takes HTTP's own reason phrase where Twisted's table has none: a caller over
  an agent's rate read "429 Unknown Status", now "429 Too Many Requests".
uvicorn with its standard extras does the first three by default (and has the same backlog).

With `LOG_FORMAT=json` the access log goes through logging too, so that every line is JSON and
carries the request's id (daphne writes it during the answer's last send, in the request's
task).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from a2ahub import body_limit

# The kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 2048
# How long, and for how many bytes, a refused body is dropped before the connection is cut.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1024 * 1024

access_logger = logging.getLogger("daphne.access")


def install_reactor() -> None:
    """Before daphne is imported: it installs Twisted's asyncio reactor on a loop of its own
    unless one is installed already."""
    import uvloop
    from twisted.internet import asyncioreactor

    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    asyncioreactor.install(loop)


def connection_made(original: Any, channel: Any) -> None:
    original(channel)
    with contextlib.suppress(Exception):  # not a TCP transport (a UNIX socket, say)
        channel.transport.setTcpNoDelay(True)


def handle_reply(original: Any, request: Any, message: dict[str, Any]) -> None:
    original(request, message)
    if message["type"] == "http.response.body" and message.get("more_body"):
        write_now(request.channel)


def write_now(channel: Any) -> None:
    """What the reactor does once the socket is writable, done now. A write that fails leaves
    the data buffered and the socket watched, so the reactor meets the error and closes."""
    transport = getattr(channel, "transport", None)
    if transport is None or not hasattr(transport, "doWrite"):
        return  # not a plain TCP transport (TLS, say): left to the reactor
    if transport.connected and not transport.disconnecting:
        transport.doWrite()


def request_init(original: Any, request: Any, *args: Any, **kwargs: Any) -> None:
    original(request, *args, **kwargs, parsePOSTFormSubmission=False)


def access_entry(
    original: Any, generator: Any, protocol: str, action: str, details: dict[str, Any]
) -> None:
    from django.conf import settings

    if settings.LOG_FORMAT != "json":
        original(generator, protocol, action, details)
    elif protocol == "http" and action == "complete":
        access_logger.info('%s "%s %s" %s %s %.3fs', details["client"], details["method"],
                           details["path"], details["status"], details["size"],
                           details["time_taken"])  # fmt: skip
    elif protocol == "websocket":
        access_logger.info('%s "%s %s"', details.get("client"), action, details.get("path"))


def headers_received(original: Any, channel: Any) -> None:
    """Once the headers are in: the URL's body limit, and the refusal of a body that declares
    more (before Twisted's own work, which answers `Expect: 100-continue` and opens a
    temporary file for a large body)."""
    request = channel.requests[-1]
    request.body_limit = body_limit.limit_at(scope_of(channel, request))
    request.body_size = 0
    if channel.length is not None and channel.length > request.body_limit.size:
        request.gotLength(0)
        refuse(channel, request)
    else:
        original(channel)


def content_chunk(original: Any, request: Any, data: bytes) -> None:
    if getattr(request, "refused", False):
        return
    request.body_size = getattr(request, "body_size", 0) + len(data)
    limit = getattr(request, "body_limit", None)
    if limit is not None and request.body_size > limit.size:
        refuse(request.channel, request)
        return
    original(request, data)


def content_received(original: Any, channel: Any) -> None:
    """The end of a body: no request to run when its body was refused."""
    if not (channel.requests and getattr(channel.requests[-1], "refused", False)):
        original(channel)


def scope_of(channel: Any, request: Any) -> dict[str, Any]:
    """What a limit is chosen by: the path and the headers (the request line is the
    channel's until the body is in)."""
    path = unquote(channel._path.split(b"?", 1)[0].decode("latin1"))
    headers = [(name.lower(), value) for name, values in
               request.requestHeaders.getAllRawHeaders() for value in values]  # fmt: skip
    return {"type": "http", "path": path, "method": channel._command.decode("latin1"),
            "headers": headers}  # fmt: skip


def refuse(channel: Any, request: Any) -> None:
    request.refused = True
    answer = request.body_limit.refusal()
    transport = channel.transport
    transport.write(response_bytes(answer))
    # Half-closed: the answer, then the end of ours, reach the client; what it still sends
    # is dropped unread.
    channel._transferDecoder = Dropped(transport)
    transport.loseWriteConnection()
    channel.callLater(LINGER_SECONDS, transport.abortConnection)


def response_bytes(answer: body_limit.Refusal) -> bytes:
    lines = [b"HTTP/1.1 %d %s" % (answer.status, HTTPStatus(answer.status).phrase.encode())]
    lines += [name + b": " + value for name, value in answer.headers
              if name.lower() not in (b"content-length", b"connection")]  # fmt: skip
    lines += [b"Content-Length: %d" % len(answer.body), b"Connection: close", b"", answer.body]
    return b"\r\n".join(lines)


class Dropped:
    """Where the rest of a refused body goes: nowhere, up to LINGER_BYTES."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.size = 0

    def dataReceived(self, data: bytes) -> None:  # Twisted's name
        self.size += len(data)
        if self.size > LINGER_BYTES:
            self.transport.abortConnection()


def with_backlog(descriptions: list[str]) -> list[str]:
    """Twisted endpoint strings of daphne's --bind/--port, with our listen backlog."""
    return [f"{d}:backlog={LISTEN_BACKLOG}" if d.startswith("tcp:") else d for d in descriptions]


def endpoints_of(original: Any, **bind: Any) -> list[str]:
    """daphne's endpoint strings for --bind/--port, with our backlog; where it listens is the
    hub's own origin (the application is loaded by then), so the outbound guard knows the
    port a test or an operator chose on the command line, not only settings.PORT."""
    listening_at(bind.get("host"), bind.get("port"))
    return with_backlog(original(**bind))


def listening_at(host: str | None, port: int | None) -> None:
    from a2ahub.outbound import register_own_origin

    if not host or port is None:
        return
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host.strip("[]")
    register_own_origin(f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}")
    if shown in ("127.0.0.1", "::1", "localhost"):
        register_own_origin(f"http://localhost:{port}")


def patch(owner: type, name: str, wrapper: Any) -> None:
    original = getattr(owner, name)

    def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
        return wrapper(original, self, *args, **kwargs)

    setattr(owner, name, patched)


def main() -> None:
    install_reactor()
    from daphne import cli
    from daphne.access import AccessLogGenerator
    from daphne.cli import CommandLineInterface
    from daphne.http_protocol import WebRequest
    from twisted.web import http

    patch(http.HTTPChannel, "connectionMade", connection_made)
    patch(http.HTTPChannel, "allHeadersReceived", headers_received)
    patch(http.HTTPChannel, "allContentReceived", content_received)
    patch(http.Request, "handleContentChunk", content_chunk)
    patch(WebRequest, "handle_reply", handle_reply)
    patch(WebRequest, "__init__", request_init)
    patch(AccessLogGenerator, "__call__", access_entry)
    for status in HTTPStatus:  # Twisted knows no reason phrase for 429, 422, 431 and some more
        http.RESPONSES.setdefault(status.value, status.phrase.encode())
    endpoints = cli.build_endpoint_description_strings
    cli.build_endpoint_description_strings = lambda **bind: endpoints_of(endpoints, **bind)
    sys.argv[0] = "daphne"
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
