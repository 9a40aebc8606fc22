"""daphne, as the hub runs it: `python -m a2ahub.daphne` takes daphne's own arguments.

Five changes, for streams' small frames, for the event loop under them, for request bodies
and for crowds of new connections:
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
- The listening socket queues up to LISTEN_BACKLOG connections, not Twisted's 50. Clients come
  in crowds: when a web process dies, every stream it held re-attaches elsewhere at once, and
  a connection past a full queue is dropped by the kernel, then fails on the client's side.
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
from typing import Any

# The kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 2048

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
    patch(WebRequest, "handle_reply", handle_reply)
    patch(WebRequest, "__init__", request_init)
    patch(AccessLogGenerator, "__call__", access_entry)
    endpoints = cli.build_endpoint_description_strings
    cli.build_endpoint_description_strings = lambda **bind: endpoints_of(endpoints, **bind)
    sys.argv[0] = "daphne"
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
