"""daphne, as the hub runs it: `python -m a2ahub.daphne` takes daphne's own arguments.

Two changes, both for streams' small frames:
- Every connection gets TCP_NODELAY. Twisted leaves Nagle's algorithm on, so a frame waited
  for the client's delayed ACK (about 40 ms) whenever one went out while the previous one was
  unacknowledged: a stream's first event came 50 ms late on an idle server.
- A part of a streamed body is written to the socket at once. Twisted buffers writes until the
  reactor's next turn, and in that turn everything else that was ready runs first (for a new
  stream, the whole agent turn it just started): its first event waited for all of it.
asyncio servers (uvicorn) do both by default.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from daphne.cli import CommandLineInterface
from daphne.http_protocol import WebRequest
from twisted.web import http

_connection_made = http.HTTPChannel.connectionMade


def connection_made(self: http.HTTPChannel) -> None:
    _connection_made(self)
    with contextlib.suppress(Exception):  # not a TCP transport (a UNIX socket, say)
        self.transport.setTcpNoDelay(True)  # type: ignore[union-attr]


_handle_reply = WebRequest.handle_reply


def handle_reply(self: WebRequest, message: dict[str, Any]) -> None:
    _handle_reply(self, message)
    if message["type"] == "http.response.body" and message.get("more_body"):
        write_now(self.channel)


def write_now(channel: http.HTTPChannel | None) -> None:
    """What the reactor does once the socket is writable, done now. A write that fails leaves
    the data buffered and the socket watched, so the reactor meets the error and closes."""
    transport = getattr(channel, "transport", None)
    if transport is None or not hasattr(transport, "doWrite"):
        return  # not a plain TCP transport (TLS, say): left to the reactor
    if transport.connected and not transport.disconnecting:
        transport.doWrite()


def main() -> None:
    http.HTTPChannel.connectionMade = connection_made  # type: ignore[method-assign]
    WebRequest.handle_reply = handle_reply  # type: ignore[method-assign]
    sys.argv[0] = "daphne"
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
