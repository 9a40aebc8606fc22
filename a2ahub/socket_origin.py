"""The WebSocket handshake's Origin check: a socket is opened only from a page of the hub's
own origin, scheme, host and port alike.

Browsers send cookies to every port of a host, so a page served on the hub's host at another
port (another service, a developer's tool) would otherwise open the console's sockets with
the operator's session. The hub's origin is PUBLIC_BASE_URL's when it is set; a handshake
also passes when its Origin is the origin the request itself names (its scheme, and the Host
header with its port), which is the page's origin when the page came from this hub. Default
ports are the same as none. Channels' allowed-hosts check still runs in front of this one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) origin, the port made explicit; None if it is not
    one."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


def request_scheme(scope: dict[str, Any]) -> str:
    """http or https, as the handshake came (a proxy's word only where the operator trusts
    it, as for the pages: SECURE_PROXY_SSL_HEADER)."""
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy is not None:
        name = proxy[0].removeprefix("HTTP_").replace("_", "-").lower().encode()
        if header(scope, name).split(",")[0].strip() == proxy[1]:
            return "https"
    return "https" if scope.get("scheme") in ("wss", "https") else "http"


def own_origins(scope: dict[str, Any]) -> list[tuple[str, str, int]]:
    found = [origin_of(settings.PUBLIC_BASE_URL)] if settings.PUBLIC_BASE_URL else []
    host = header(scope, b"host")
    if host:
        found.append(origin_of(f"{request_scheme(scope)}://{host}"))
    return [origin for origin in found if origin is not None]


def same_origin(scope: dict[str, Any]) -> bool:
    origin = origin_of(header(scope, b"origin"))
    return origin is not None and origin in own_origins(scope)


class SameOriginValidator:
    """ASGI middleware: a WebSocket handshake from another origin is refused (HTTP 403)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not same_origin(scope):
            denier = WebsocketDenier()
            return await denier(scope, receive, send)
        return await self.application(scope, receive, send)
