"""Serving the gRPC binding: a `grpc.aio` server on GRPC_PORT, on the web server's HOST,
with TLS when GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE name a certificate and its key.

It runs either as a process of its own (`manage.py rungrpc`, which `runhub` starts beside
the web process when the hub is distributed; more of them scale out, on other hosts or on
the same port of one host with `--reuse-port`, where the kernel spreads connections among
them) or, for an embedded hub, inside the one web process (`serve_beside_web`): there, task
events live in that process's memory, and a stream must be served where its turn runs.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import grpc
from django.conf import settings

from protocol import grpc_door, grpc_v03

logger = logging.getLogger(__name__)

# Room for a request's protobuf framing on top of the body limit every door applies.
FRAMING_BYTES = 64 * 1024
GRACE_SECONDS = 5.0


def enabled() -> bool:
    return bool(settings.GRPC_PORT)


def address(host: str | None = None, port: int | None = None) -> str:
    host = settings.HOST if host is None else host
    port = settings.GRPC_PORT if port is None else port
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def options(reuse_port: bool) -> list[tuple[str, int]]:
    """A message may be as large as a request body may be at the other doors, either way;
    SO_REUSEPORT only where several processes are meant to share the port."""
    size = settings.A2A_MAX_REQUEST_BYTES + FRAMING_BYTES
    return [
        ("grpc.max_receive_message_length", size),
        ("grpc.max_send_message_length", max(size, 64 * 1024 * 1024)),
        ("grpc.so_reuseport", 1 if reuse_port else 0),
    ]


def credentials() -> grpc.ServerCredentials | None:
    if not settings.GRPC_TLS_CERT_FILE:
        return None
    chain = Path(settings.GRPC_TLS_CERT_FILE).read_bytes()
    key = Path(settings.GRPC_TLS_KEY_FILE).read_bytes()
    return grpc.ssl_server_credentials([(key, chain)])


def build(bind: str, reuse_port: bool = False) -> tuple[grpc.aio.Server, int]:
    """A server with the A2A service, bound to `bind` (`host:port`; port 0 takes a free one):
    the server, and the port it got."""
    server = grpc.aio.server(options=options(reuse_port))
    # 1.0 and 0.3 side by side: their services' names differ (lf.a2a.v1, a2a.v1).
    server.add_generic_rpc_handlers((grpc_door.generic_handler(), grpc_v03.generic_handler()))
    tls = credentials()
    port = server.add_secure_port(bind, tls) if tls is not None else server.add_insecure_port(bind)
    return server, port


async def serve(bind: str, reuse_port: bool = False) -> None:
    """Serve until cancelled (or the process is told to stop)."""
    server, port = build(bind, reuse_port)
    await server.start()
    scheme = "TLS" if settings.GRPC_TLS_CERT_FILE else "plaintext"
    logger.info("A2A gRPC on %s (port %s, %s)", bind, port, scheme)
    try:
        await server.wait_for_termination()
    finally:
        await server.stop(GRACE_SECONDS)


_beside_web: list[asyncio.Task[None]] = []


def serve_beside_web() -> None:
    """Serve gRPC on this process's event loop once it runs (daphne's, whose reactor runs on
    the loop set before the application is loaded)."""
    if not enabled() or _beside_web:
        return
    loop = asyncio.get_event_loop_policy().get_event_loop()
    serving = loop.create_task(serve(address(), reuse_port=False))
    serving.add_done_callback(ended)
    _beside_web.append(serving)


def ended(serving: asyncio.Task[None]) -> None:
    """The web process goes on serving HTTP if gRPC cannot (its port taken, say)."""
    if not serving.cancelled() and (exc := serving.exception()) is not None:
        logger.error("A2A gRPC stopped: %s", exc)
