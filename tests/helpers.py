"""Helpers for tests that run the hub as real processes, serve HTTP on 127.0.0.1, or wait for
something another thread does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def wait_for_http(url: str, process: subprocess.Popen[bytes], timeout: float = 90) -> None:
    # Generous: a server that starts slowly on a loaded machine is not what a test measures.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


def wait_for_port(
    address: str, process: subprocess.Popen[bytes] | None = None, timeout: float = 90
) -> None:
    """Until something accepts connections at `host:port` (a gRPC server, say), or at the
    path of a Unix socket."""
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            if address.startswith("/"):
                with socket.socket(socket.AF_UNIX) as unix:
                    unix.settimeout(1)
                    unix.connect(address)
            else:
                socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{address} did not accept connections within {timeout}s")


def embedded_env(data_dir: Path) -> dict[str, str]:
    removed = {
        "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "PUBLIC_BASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE",
    }  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in removed}
    env |= {"DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "a2ahub.settings"}
    # runhub serves gRPC too: on a port of its own, never another hub's default one.
    env["GRPC_PORT"] = str(free_port())
    env["GRPC_METRICS_PORT"] = str(free_port())
    return env


def answering_posts(
    answer: Callable[[dict[str, str], bytes], tuple[str, bytes]],
) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 (a free port), started on a background thread, that hands each
    POST's headers (lowercase names) and body to `answer` and sends back the content type and
    bytes it returns, with 200."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            content_type, content = answer(headers, body)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    """Serve on a background thread until the block ends (tests' webhooks, backends, cards)."""
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def eventually(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05) -> bool:
    """True once `check()` is, polling every `interval` s; False after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def postgresql_only(reason: str) -> pytest.MarkDecorator:
    """Skip where the suite runs on SQLite: `reason` says what only PostgreSQL has."""
    engine = settings.DATABASES["default"]["ENGINE"]
    return pytest.mark.skipif(engine != "django.db.backends.postgresql", reason=reason)
