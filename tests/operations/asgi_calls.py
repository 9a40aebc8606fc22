"""Requests sent straight to the hub's ASGI application, as daphne sends them: the A2A doors
it serves itself (no Django middleware) and the site behind Django's handler."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.db import connection

from a2ahub.asgi import application


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def http_scope(path: str, method: str = "POST", headers: dict[str, str] | None = None,
               raw_headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:  # fmt: skip
    encoded = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": encoded + (raw_headers or []),
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip


async def call(scope: dict[str, Any], body: bytes = b"") -> Answer:
    """The whole answer (every part of a stream) to one request."""
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": body})
    start = await communicator.receive_output(10)
    content = b""
    while True:
        message = await communicator.receive_output(10)
        content += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(5)
    headers = {k.decode().lower(): v.decode("latin1") for k, v in start["headers"]}
    return Answer(start["status"], headers, content)


async def in_db(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ORM code from the test's loop, then give its connection back: the thread it runs on
    outlives the test, and a connection left checked out there would outlive the test
    database."""

    def run() -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            connection.close()

    return await sync_to_async(run)()
