"""The largest request body each URL takes, and the 413 answer to a larger one, given before
the body is read.

A body that declares a larger `Content-Length` is answered at once; one that arrives in
chunks is answered, and no longer read, once it passes the limit. The web server enforces
this as it parses the request (`a2ahub.daphne`), since daphne would otherwise read the whole
body before the application sees it (a declared 600 MB grew the process by as much), and
`guarded` enforces it again in front of the site's application for servers that hand the
body over as it comes (uvicorn).

The site's limit is Django's `DATA_UPLOAD_MAX_MEMORY_SIZE`. Apps whose URLs have limits of
their own, or answer in their own shape (the A2A doors: a JSON-RPC envelope or a
`google.rpc.Status`; the registry: REGISTRY_MAX_BODY_BYTES), add a finder to `FINDERS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from a2ahub import numerals

Scope = dict[str, Any]
Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class Refusal:
    """A 413 answer, as the server writes it."""

    status: int
    headers: Headers
    body: bytes


@dataclass(frozen=True)
class Limit:
    size: int  # bytes
    refusal: Callable[[], Refusal]


# The limit at a scope, or None when the URL is not the finder's.
FINDERS: list[Callable[[Scope], Limit | None]] = []


def limit_at(scope: Scope) -> Limit:
    for find in FINDERS:
        found = find(scope)
        if found is not None:
            return found
    return Limit(site_limit(), site_refusal)


def site_limit() -> int:
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or settings.A2A_MAX_REQUEST_BYTES)


def site_refusal() -> Refusal:
    """A `google.rpc.Status` body, the shape of the hub's other refusals before any API."""
    message = f"The request body is over {site_limit()} bytes."
    body = json.dumps({"error": {"code": 413, "status": "INVALID_ARGUMENT", "message": message}})
    return Refusal(413, [(b"content-type", b"application/json")], body.encode())


def declared_length(scope: Scope) -> str:
    """The request's `Content-Length` as sent ("" when it sends none)."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            return str(value.decode("latin1").strip())
    return ""


async def send_refusal(refusal: Refusal, send: Any) -> None:
    headers = [*refusal.headers, (b"connection", b"close")]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": refusal.body})


def guarded(application: Any) -> Any:
    """`application` behind the limit: a body over it never reaches the application (it
    reads a disconnect where the rest of the body would be)."""

    async def guard(scope: Scope, receive: Any, send: Any) -> None:
        limit = limit_at(scope)
        if numerals.is_over(declared_length(scope), limit.size):
            await send_refusal(limit.refusal(), send)
            return
        await application(scope, Counted(receive, send, limit), send)

    return guard


class Counted:
    """An ASGI `receive` that counts the body's bytes, and past the limit answers 413 and
    tells the application the client left."""

    def __init__(self, receive: Any, send: Any, limit: Limit) -> None:
        self.receive, self.send, self.limit = receive, send, limit
        self.size = 0
        self.refused = False

    async def __call__(self) -> dict[str, Any]:
        if self.refused:
            return {"type": "http.disconnect"}
        message: dict[str, Any] = await self.receive()
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            if self.size > self.limit.size:
                self.refused = True
                await send_refusal(self.limit.refusal(), self.send)
                return {"type": "http.disconnect"}
        return message
