"""The operator's probes, answered in front of Django: `/healthz` (liveness), `/readyz`
(readiness) and `/metrics` (Prometheus).

Kubernetes' kubelet and Prometheus reach a pod by its address, and that is the Host header they
send: no ALLOWED_HOSTS lists every pod's address, so through Django every probe was a 400 and a
pod never became ready. No probe's answer depends on the host, so none is checked here (the
metrics keep their own rules: `a2ahub.metrics_access`). A liveness probe also must not wait
behind the site's threads: `/healthz` answers on the event loop; `/readyz` and `/metrics`, which
ask the database and Redis, run on a thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import connections
from prometheus_client import CONTENT_TYPE_LATEST

from a2ahub import health, metrics, metrics_access, request_id

logger = logging.getLogger(__name__)

PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

JSON = b"application/json"
TEXT = b"text/plain; charset=utf-8"
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
    request_id.begin_asgi(scope.get("headers", []))
    method, path = scope["method"], scope["path"]
    if method not in ("GET", "HEAD"):
        status, headers, body = 405, [(b"allow", b"GET, HEAD")], b"Only GET and HEAD.\n"
        headers.append((b"content-type", TEXT))
    elif path == "/healthz":
        status, headers, body = 200, [(b"content-type", JSON)], b'{"status": "ok"}'
    else:
        work = readiness if path == "/readyz" else partial(scrape, scope)
        status, headers, body = await asyncio.to_thread(closing_connection, work)
    headers += [
        (b"content-length", str(len(body)).encode("ascii")),
        (b"cache-control", b"no-store"),
        (request_id.ASGI_HEADER, request_id.current_id().encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


def closing_connection(work: Callable[[], Answer]) -> Answer:
    try:
        return work()
    finally:
        connections["default"].close()  # this thread's, if the work opened it


def readiness() -> Answer:
    parts = health.readiness()
    failing = sorted(name for name, state in parts.items()
                     if state not in {health.READY, health.EMBEDDED})  # fmt: skip
    if failing:
        # Not an error of this process: it waits for what it needs (each part's reason is a
        # warning of its own), and the balancer asks every few seconds.
        logger.info("Not ready: %s", ", ".join(failing))
    answer = {"status": "not ready" if failing else "ready", "failing": failing, "parts": parts}
    return 503 if failing else 200, [(b"content-type", JSON)], json.dumps(answer).encode()


def scrape(scope: dict[str, Any]) -> Answer:
    address = (scope.get("client") or ("", 0))[0]
    authorization = ""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            authorization = value.decode("latin1")
    refused = metrics_access.refusal(address, authorization)
    if refused is not None:
        status, extra, text = refused
        headers = [(k.lower().encode("ascii"), v.encode("latin1")) for k, v in extra.items()]
        return status, [*headers, (b"content-type", TEXT)], text.encode()
    content_type = CONTENT_TYPE_LATEST.encode("ascii")
    return 200, [(b"content-type", content_type)], metrics.exposition()
