"""Who may read the hub's Prometheus metrics, and `/metrics` on a port of its own for a process
that serves no HTTP (`rungrpc`): its requests are counted in its own memory, which no web
process's `/metrics` shows. Both answer under the same rules (`METRICS_ALLOWED_NETWORKS`,
`METRICS_TOKEN`)."""

from __future__ import annotations

import hmac
import ipaddress
import threading
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from django.conf import settings
from django.db import connections
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.exposition import ThreadingWSGIServer

from a2ahub import metrics

# (HTTP status, headers, body) of a refused scrape.
Refusal = tuple[int, dict[str, str], str]


def refusal(address: str, authorization: str) -> Refusal | None:
    """Why a scrape from `address` with this Authorization header is refused, if it is."""
    if not allowed_address(address):
        return 403, {}, "Metrics are not served to this address.\n"
    if settings.METRICS_TOKEN and not bearer_matches(authorization, settings.METRICS_TOKEN):
        return 401, {"WWW-Authenticate": 'Bearer realm="metrics"'}, (
            "Send the metrics token as a bearer token.\n"
        )  # fmt: skip
    return None


def allowed_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in settings.METRICS_ALLOWED_NETWORKS)


def bearer_matches(authorization: str, token: str) -> bool:
    scheme, _, sent = authorization.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(sent.strip().encode(),
                                                              token.encode())  # fmt: skip


def scrape(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The WSGI app of the metrics port."""
    headers = {"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"}
    if environ.get("PATH_INFO") != "/metrics":
        status, body = 404, b"Metrics are at /metrics.\n"
    elif environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
        status, body = 405, b"GET /metrics.\n"
        headers["Allow"] = "GET, HEAD"
    elif refused := refusal(environ.get("REMOTE_ADDR", ""),
                            environ.get("HTTP_AUTHORIZATION", "")):  # fmt: skip
        status, more, text = refused
        headers |= more
        body = text.encode()
    else:
        try:
            status, body = 200, metrics.exposition()
        finally:
            # Each scrape is a thread of its own: its database connection goes with it.
            connections.close_all()
        headers["Content-Type"] = CONTENT_TYPE_LATEST
    start_response(f"{status} {HTTPStatus(status).phrase}", list(headers.items()))
    return [body]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds are not worth a log line each."""


def serve(host: str, port: int) -> ThreadingWSGIServer:
    """Serve `scrape` on host:port from a daemon thread; the server, to shut down."""
    server = make_server(host, port, scrape, ThreadingWSGIServer, handler_class=QuietHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="a2ahub-metrics", daemon=True).start()
    return server
