"""The A2A doors' one route table: every URL they serve (per agent and shared, JSON-RPC and
HTTP+JSON), its view, and the shape of its refusals. Every other path is the site's.

Each URL in both spellings, with and without the trailing slash: a POST never meets an
APPEND_SLASH redirect. An HTTP+JSON tail takes any characters, line breaks included: a path
the binding does not know gets its JSON 404 from the binding."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from django.http.response import HttpResponseBase

from a2ahub.errors import A2AError
from a2ahub.request import Request
from protocol import jsonrpc, rest


@dataclass(frozen=True)
class Route:
    """A door matched: its view, the URL's parts it takes, and how it refuses."""

    view: Callable[..., Awaitable[HttpResponseBase]]
    # Its answer to an error met before the view runs (or that escaped it), in its binding's
    # shape; the status is the error's own when None.
    refuse: Callable[[Request, A2AError, int | None], HttpResponseBase]
    kwargs: dict[str, str]


def rpc_refusal(request: Request, error: A2AError, status: int | None) -> HttpResponseBase:
    version = jsonrpc.error_version(request)
    return jsonrpc.rpc_response(None, version, error=error, status=status or 200)


TABLE = (
    (re.compile(r"/agents/(?P<slug>[^/]+)/jsonrpc/?"), jsonrpc.endpoint, rpc_refusal),
    (
        re.compile(r"/agents/(?P<slug>[^/]+)/rest(?:/(?P<tail>.*))?", re.DOTALL),
        rest.endpoint,
        rest.refused,
    ),
    (re.compile(r"/a2a/jsonrpc/?"), jsonrpc.shared_endpoint, rpc_refusal),
    (
        re.compile(r"/a2a/rest(?:/(?P<tenant>[^/]*)(?:/(?P<tail>.*))?)?", re.DOTALL),
        rest.shared_endpoint,
        rest.refused,
    ),
)


def route_at(path: str) -> Route | None:
    """The A2A door at `path`, if one is there."""
    for pattern, view, refuse in TABLE:
        found = pattern.fullmatch(path)
        if found is not None:
            kwargs = {name: value for name, value in found.groupdict().items() if value}
            return Route(view, refuse, kwargs)
    return None
