"""A webhook receiver: an HTTP server on 127.0.0.1 in a thread that records every request and
answers as its `Behaviour` says (the push tests' and the real stack's stand-in for a client),
and the check a receiver makes of a delivery's signature."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jwcrypto import jwk, jwt

WAIT_SECONDS = 10.0


@dataclass
class Received:
    """One request as the receiver saw it, and the status it answered."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    status: int

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")

    def json(self) -> Any:
        return json.loads(self.body)


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a sender that hung up (a killed worker, a timeout) is part of these tests


@dataclass
class Behaviour:
    """How the receiver answers: `fail_first` requests get `fail_status` (with `fail_headers`),
    the rest `status`; each request is recorded when it arrives and answered `delay` s later."""

    fail_first: int = 0
    fail_status: int = 500
    fail_headers: dict[str, str] = field(default_factory=dict)
    status: int = 200
    delay: float = 0.0
    slow_first: int = 0  # only the first `slow_first` requests wait `delay` (0: every request)
    answer_body: bytes = b"ok"


class Receiver:
    """A webhook receiver: an HTTP server on 127.0.0.1 in a thread, recording every request.
    `down()` closes its socket (connections are refused) and `up()` opens it again, same port."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[Received] = []
        self.lock = threading.Condition()
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/webhook"

    def up(self) -> None:
        self.server = QuietServer(("127.0.0.1", self.port), self.handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def answer(
        self, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], float]:
        """Record the request; how to answer it (status, extra headers) and how late."""
        plan = self.behaviour
        with self.lock:
            seen = len(self.requests)
            failing = seen < plan.fail_first
            status = plan.fail_status if failing else plan.status
            self.requests.append(Received(path, headers, body, time.monotonic(), status))
            self.lock.notify_all()
        delay = plan.delay if not plan.slow_first or seen < plan.slow_first else 0.0
        return status, plan.fail_headers if failing else {}, delay

    def handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, delay = receiver.answer(self.path, headers, body)
                time.sleep(delay)
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                answer = receiver.behaviour.answer_body
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                with contextlib.suppress(ConnectionError):  # a client may stop reading
                    self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def accepted(self) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if 200 <= r.status < 300]

    def wait_for(
        self, count: int, accepted: bool = True, timeout: float = WAIT_SECONDS
    ) -> list[Received]:
        """The first `count` requests (only those it accepted, by default), once they came."""

        def seen() -> list[Received]:
            return [r for r in self.requests if not accepted or 200 <= r.status < 300]

        with self.lock:
            self.lock.wait_for(lambda: len(seen()) >= count, timeout=timeout)
            found = seen()
        assert len(found) >= count, f"{len(found)} of {count} requests arrived: {found}"
        return found

    def stays_at(self, count: int, seconds: float = 0.5) -> bool:
        """True when no request beyond `count` arrives within `seconds`."""
        with self.lock:
            return not self.lock.wait_for(lambda: len(self.requests) > count, timeout=seconds)


class HeldReceiver(Receiver):
    """Records each request at once but answers none until `answer_all` is set."""

    def __init__(self) -> None:
        self.answer_all = threading.Event()
        super().__init__()

    def answer(
        self, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], float]:
        planned = super().answer(path, headers, body)
        self.answer_all.wait(60)
        return planned


def verified_claims(token: str, body: bytes, jwks: dict[str, Any]) -> dict[str, Any]:
    """What a receiver does: check the signature with the published keys, then the body."""
    keyset = jwk.JWKSet.from_json(json.dumps(jwks))
    checked = jwt.JWT(jwt=token, key=keyset, algs=["ES256"])
    claims: dict[str, Any] = json.loads(checked.claims)
    if claims["request_body_sha256"] != hashlib.sha256(body).hexdigest():
        raise ValueError("the body is not the one that was signed")
    return claims
