"""daphne, as the hub runs it: `python -m a2ahub.daphne` takes daphne's own arguments.

One change: every connection gets TCP_NODELAY. Twisted leaves Nagle's algorithm on, so a
stream's small frames waited for the client's delayed ACK (about 40 ms) whenever one went out
while the previous one was unacknowledged: a stream's first event came 50 ms late on an idle
server. asyncio servers (uvicorn) set the option by default.
"""

from __future__ import annotations

import contextlib
import sys

from daphne.cli import CommandLineInterface
from twisted.web import http

_connection_made = http.HTTPChannel.connectionMade


def connection_made(self: http.HTTPChannel) -> None:
    _connection_made(self)
    with contextlib.suppress(Exception):  # not a TCP transport (a UNIX socket, say)
        self.transport.setTcpNoDelay(True)  # type: ignore[union-attr]


def main() -> None:
    http.HTTPChannel.connectionMade = connection_made  # type: ignore[method-assign]
    sys.argv[0] = "daphne"
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
