"""The request the A2A doors hand their handlers: what they read of an HTTP request, taken
straight from the ASGI scope. Building Django's request (its META, header parsing and lazy
objects) was a tenth of a fast send's CPU, and the doors need none of its middleware."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.http import QueryDict
from django.http.cookie import parse_cookie
from django.http.request import split_domain_port, validate_host

from a2ahub.errors import InvalidRequestError

if TYPE_CHECKING:
    from django.http.request import _ImmutableQueryDict


class Headers(Mapping[str, str]):
    """Request headers by case-insensitive name; a repeated header's values joined by commas."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.by_name: dict[str, str] = {}
        for name, value in raw:
            key, text = name.decode("latin1").lower(), value.decode("latin1")
            self.by_name[key] = f"{self.by_name[key]},{text}" if key in self.by_name else text

    def get(self, name: str, default: Any = None) -> Any:
        return self.by_name.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self.by_name[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self.by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def __len__(self) -> int:
        return len(self.by_name)


# Not frozen: a frozen dataclass sets each field through object.__setattr__, on every request.
@dataclass
class Request:
    method: str
    path: str
    headers: Headers
    content_type: str  # the media type, without parameters (`charset`)
    body: bytes = b""
    query_string: bytes = b""
    scheme: str = "http"
    server: tuple[str, int | None] | None = None  # the ASGI scope's: for a request without Host

    @classmethod
    def of(cls, scope: dict[str, Any], body: bytes = b"") -> Request:
        headers = Headers(scope.get("headers", []))
        media = str(headers.get("Content-Type", "")).split(";")[0].strip()
        return cls(scope["method"], scope["path"], headers, media, body,
                   scope.get("query_string", b""), scope.get("scheme", "http"),
                   scope.get("server"))  # fmt: skip

    @cached_property
    def query(self) -> _ImmutableQueryDict:
        return QueryDict(self.query_string.decode("latin1")) if self.query_string else no_query()

    @cached_property
    def cookies(self) -> dict[str, str]:
        return parse_cookie(self.headers.get("Cookie", ""))

    def base_url(self) -> str:
        """The hub's URL: PUBLIC_BASE_URL, or as this request reached it (its host checked
        against ALLOWED_HOSTS, its scheme the proxy's when TRUST_X_FORWARDED_PROTO, as
        Django's `build_absolute_uri` does)."""
        return settings.PUBLIC_BASE_URL or f"{self.seen_scheme()}://{self.host()}"

    def seen_scheme(self) -> str:
        if settings.SECURE_PROXY_SSL_HEADER:
            header, secure = settings.SECURE_PROXY_SSL_HEADER
            forwarded = self.headers.get(header.removeprefix("HTTP_").replace("_", "-"))
            if forwarded is not None:
                return "https" if forwarded.split(",")[0].strip() == secure else "http"
        return self.scheme

    def host(self) -> str:
        host = self.headers.get("Host") or ("{}:{}".format(*self.server) if self.server else "")
        domain, _ = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            # A client's mistake (or a probe), not the hub's: answered as a bad request.
            raise InvalidRequestError(
                f"The Host header {host!r} names no host this hub serves (ALLOWED_HOSTS)."
            )
        return str(host)


@cache
def no_query() -> _ImmutableQueryDict:
    """The (immutable) query of a request without one, made once."""
    return QueryDict()
