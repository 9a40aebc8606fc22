"""The hub's only outbound HTTP seam: webhook deliveries and remote agent cards go through here.

Every request is checked twice against private networks (SSRF): `check_url` when a URL is
accepted, and again inside the connection itself, so a name that resolves to a public address
when checked and to a private one later (DNS rebinding) is still refused.

How the connect-time check works: each call builds a fresh httpx client whose transport uses a
connection pool with our own httpcore network backend. httpcore asks that backend to
`connect_tcp(host, port)` with the URL's host name; the backend resolves the name itself (the
module-level `resolve`), refuses the request if any resolved address is not public, and then
opens the socket to the validated IP address, never to the name, so no second lookup can
change the answer. Everything above the socket still uses the URL: httpx writes the `Host`
header from it and httpcore passes the URL's host as TLS `server_hostname`, so SNI and
certificate checks are for the name. Environment proxies and `.netrc` are ignored
(`trust_env=False`), redirects are never followed (a 3xx is returned as is), and a single
deadline per call clamps every connect, read and write, so a server that drips its answer byte
by byte cannot hold a worker past the time limit. Host names and addresses listed in
`settings.OUTBOUND_ALLOWED_HOSTS` skip the address checks.

The hub itself is never a target unless the caller says which of its paths it may reach
(`hub_paths`: the push inbox for webhooks, everything for the orchestrator): a card or backend
naming the hub would make each call call the hub again. The hub is known by its origins
(PUBLIC_BASE_URL, registered origins such as where it listens) and by HOST, ALLOWED_HOSTS and
the loopback names on those ports; a name that resolves to one of those addresses and ports is
refused at connect time too. A path on the hub is judged as a server routes it: percent-decoded,
and refused outright if it holds a dot segment in any spelling (httpx sends `%2e%2e` as is,
aiohttp resolves it; either way the answer must be the same). Host names are judged in their
normal form (lower case, no trailing dot, and the legacy numeric IPv4 forms such as
`2130706433` or `0x7f.1` as the dotted address the socket layer makes of them).

`a2ahub.outbound_pool` sends many small requests at once over kept-alive connections (webhook
deliveries, on aiohttp: see bench/results-2026-11-27-clients-drivers.md) under this same guard,
not a copy of it: `check_target` is the judgement every call here makes of its URL before
connecting (form, the hub itself, a literal address), `connectable` the one every connection
makes of a lookup's answer, pinned to the checked address, and `ssl_context` the one TLS
context of both clients. tests/test_outbound_clients.py holds both clients to the same refusals.

`async_stream_post` is the one call that hands the answer over while it arrives (an HTTP
backend's NDJSON events, applied line by line). It keeps every guarantee above: the same
guarded connect, no redirects, the fixed User-Agent, the size limit counted over the whole
body, and the same single deadline, which starts when the call starts and covers the time the
caller spends between reads too: there is no separate idle timeout, so a stream is over when
its `timeout` is, however steadily it drips.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import metadata
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import httpcore
import httpx
from asgiref.sync import async_to_sync
from django.conf import settings

from a2ahub import numerals

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 1024 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}


try:
    USER_AGENT = f"A2A-Hub/{metadata.version('a2a-hub')}"
except metadata.PackageNotFoundError:
    USER_AGENT = "A2A-Hub/dev"


class UnsafeURL(ValueError):
    """The URL points somewhere the hub must not send requests (or is not an http(s) URL)."""


class ResponseTooLarge(Exception):
    """The answer was longer than the caller's limit; the rest was not read."""


@dataclass(frozen=True)
class Response:
    """A finished answer: the body is already read, and no longer than the limit."""

    status_code: int
    headers: httpx.Headers
    content: bytes

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


# --- Which addresses are refused --------------------------------------------------------------

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_REFUSED_NETWORKS = [
    (ipaddress.ip_network(network), label)
    for network, label in (
        ("0.0.0.0/8", "an unspecified address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "a reserved (IETF protocol) address"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.88.99.0/24", "a reserved (6to4 relay) address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("255.255.255.255/32", "the broadcast address"),
        ("240.0.0.0/4", "a reserved address"),
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/8", "a reserved address"),
        ("64:ff9b:1::/48", "a private (local NAT64) address"),
        ("100::/64", "a discard-only address"),
        ("2001::/23", "a reserved (IETF protocol) address"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("fc00::/7", "a unique local (private) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
]
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def refusal(address: IPAddress) -> str | None:
    """Why the hub must not connect to `address` ("a loopback address"), or None if public."""
    if isinstance(address, ipaddress.IPv6Address):
        for inner in _embedded_ipv4(address):
            reason = refusal(inner)
            if reason:
                return f"an IPv6 form of {inner}, {reason}"
        if address.ipv4_mapped:
            return None
    for network, label in _REFUSED_NETWORKS:
        if address in network:
            return label
    # The list above is explicit; the standard library's view is a second opinion.
    if not address.is_global or address.is_multicast:
        return "not a public address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    # These IPv6 forms carry an IPv4 address that a gateway or the kernel may connect to.
    found = [address.ipv4_mapped, address.sixtofour]
    if address in _NAT64:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [inner for inner in found if inner is not None]


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, in the resolver's order (tests replace this seam)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:  # a name IDNA cannot encode resolves to nothing
        raise socket.gaierror(socket.EAI_NONAME, str(exc)) from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# --- Which URLs are allowed -------------------------------------------------------------------

Origin = tuple[str, str, int]
_own_origins: set[Origin] = set()


# The numeric IPv4 spellings inet_aton accepts (one to four parts, decimal, octal or hex): the
# socket layer connects "2130706433" or "0x7f.1" to 127.0.0.1, so they are judged as that.
_LEGACY_IPV4 = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}")


# The judgements of a host or an address by its spelling alone are kept: every webhook sent and
# every send carrying one asks them several times over (ipaddress parses a string each time).
HOSTS_KEPT = 4096


@lru_cache(maxsize=HOSTS_KEPT)
def _normal_host(host: str) -> str:
    host = host.strip().strip("[]").lower().rstrip(".")
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(host))
    if _LEGACY_IPV4.fullmatch(host):
        with contextlib.suppress(OSError):
            return socket.inet_ntoa(socket.inet_aton(host))
    return host


def _allowed_hosts() -> frozenset[str]:
    return _normal_hosts(tuple(settings.OUTBOUND_ALLOWED_HOSTS))


@lru_cache(maxsize=16)
def _normal_hosts(hosts: tuple[str, ...]) -> frozenset[str]:
    return frozenset(_normal_host(host) for host in hosts)


@lru_cache(maxsize=HOSTS_KEPT)
def _origin(url: str) -> Origin | None:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return None
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.raw_host:
        return None
    host = _normal_host(parsed.raw_host.decode("ascii"))
    return (parsed.scheme, host, parsed.port or _DEFAULT_PORTS[parsed.scheme])


def origin_of(url: str) -> str:
    """The URL's scheme, host (in its normal form) and port, as one string: the receiver a
    webhook reaches ("" for a URL that is not http or https)."""
    key = _origin(url)
    if key is None:
        return ""
    scheme, host, port = key
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def register_own_origin(origin: str) -> None:
    """Let requests reach `origin` ("https://hub.example:8443"), which the hub itself serves.

    Only pass an origin the hub knows is its own (its settings, the port it listens on): a
    registered origin skips the address checks, so one taken from an unchecked `Host` header
    would open any local port to webhooks.
    """
    key = _origin(origin)
    parsed = httpx.URL(origin) if key else None
    if key is None or parsed is None or parsed.userinfo or parsed.raw_path != b"/":
        raise ValueError(f"{origin!r} is not an origin like https://hub.example:8443")
    _own_origins.add(key)


def forget_own_origins() -> None:
    _own_origins.clear()


def _origins() -> set[Origin]:
    public = _origin(settings.PUBLIC_BASE_URL) if settings.PUBLIC_BASE_URL else None
    return {*_own_origins, public} - {None}  # type: ignore[return-value]


# --- Where the hub itself answers -------------------------------------------------------------

_ANY_ADDRESS = {"", "0.0.0.0", "::"}
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


def _plain_hosts(hosts: Iterable[str]) -> set[str]:
    # ALLOWED_HOSTS' patterns (".example.com", "*") name no one host.
    return {_normal_host(h) for h in hosts if h and "*" not in h and not h.startswith(".")}


@lru_cache(maxsize=HOSTS_KEPT)
def _is_loopback(host: str) -> bool:
    if host in _ANY_ADDRESS or host == "localhost":
        return True
    return _is_address(host) and ipaddress.ip_address(host).is_loopback


def own_endpoints() -> frozenset[tuple[str, int]]:
    """Every (host or address, port) where the hub answers: its origins, HOST and Django's
    ALLOWED_HOSTS on the ports its doors are known by and on its other servers' ports (gRPC,
    gRPC's metrics), and each loopback spelling on a port it serves on loopback or on every
    address."""
    names = tuple(settings.ALLOWED_HOSTS)
    return _endpoints_of(frozenset(_origins()), settings.HOST, settings.PORT, names, other_ports())


def other_ports() -> frozenset[int]:
    """The ports of the hub's servers that are not its web doors: no path there is one a
    caller may be let reach."""
    return frozenset({settings.GRPC_PORT, settings.GRPC_METRICS_PORT} - {0, settings.PORT})


@cache
def _endpoints_of(
    origins: frozenset[Origin], host: str, port: int, names: tuple[str, ...], others: frozenset[int]
) -> frozenset[tuple[str, int]]:
    ports = {port} | {origin[2] for origin in origins}
    hosts = _plain_hosts([host, *names])
    found = {origin[1:] for origin in origins} | {(h, p) for h in hosts for p in ports}
    found |= {(h, p) for h, _ in list(found) for p in others}
    found |= {(name, p) for h, p in list(found) if _is_loopback(h) for name in _LOOPBACK}
    return frozenset(found)


def names_the_hub(host: str, port: int) -> bool:
    """Whether a connection to `host` (a name or an address) and `port` reaches the hub."""
    normal = _normal_host(host)
    endpoints = own_endpoints()
    if (normal, port) in endpoints:
        return True
    # A hub on loopback or every address answers on all of 127.0.0.0/8.
    return _is_address(normal) and _is_loopback(normal) and ("127.0.0.1", port) in endpoints


def hub_path(url: str) -> str:
    """The path of `url` as the hub's router will read it (percent-decoded). A dot segment in
    any spelling (`..`, `%2e%2e`, `.%2E`, `..%2f`) is refused: httpx sends some of them as they
    are and aiohttp resolves them, so no one reading of the path is the one that arrives."""
    path = unquote(urlsplit(url).path)
    segments = path.replace("\\", "/").split("/")
    if any(segment in (".", "..") for segment in segments):
        raise UnsafeURL(f"{url!r} has a dot segment in its path, which the hub does not follow")
    return path


def _check_hub_path(url: str, hub_paths: tuple[str, ...]) -> None:
    if not hub_paths:
        raise UnsafeURL(
            f"{url!r} points at this hub itself; the hub does not call its own doors "
            "(a card or backend naming the hub would make every call call the hub again)"
        )
    path = hub_path(url)
    if not any(path.startswith(allowed) for allowed in hub_paths):
        raise UnsafeURL(f"on this hub, only {', '.join(hub_paths)} may be reached")


def _refuse_the_hub(host: str, port: int, addresses: Iterable[str]) -> None:
    for address in addresses:
        if names_the_hub(address, port):
            raise UnsafeURL(
                f"{host} resolves to {address}, where this hub itself listens on port {port}; "
                "the hub does not call its own doors"
            )


@dataclass(frozen=True)
class _Target:
    host: str
    port: int
    trusted: bool
    # Whether this call may reach the hub (it names the hub, and the caller allows its path).
    hub: bool = False


@lru_cache(maxsize=HOSTS_KEPT)  # a webhook's URL is judged at every delivery
def _parse_url(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise UnsafeURL(f"{url!r} is not a valid URL: {exc}") from exc
    if parsed.scheme not in _DEFAULT_PORTS:
        raise UnsafeURL(f"{url!r} must start with http:// or https://")
    if not parsed.raw_host:
        raise UnsafeURL(f"{url!r} has no host")
    if parsed.userinfo:
        raise UnsafeURL("the URL must not contain a user name or password")
    if b"%" in parsed.raw_host:
        # No client decodes it today, so no lookup could succeed; judged as refused rather
        # than as whatever a future client makes of it.
        raise UnsafeURL(f"{url!r} has a percent-encoded host")
    if parsed.port is not None and not 0 < parsed.port <= 65535:
        raise UnsafeURL(f"{url!r} names no valid port (1 to 65535)")
    if not _is_host_name(parsed.raw_host.decode("ascii")):
        raise UnsafeURL(f"{url!r} names no valid host (empty or over-long labels)")
    return parsed


def _is_host_name(host: str) -> bool:
    """Whether `host` can be looked up: an address, or labels of 1 to 63 characters (the
    resolver raises UnicodeError for others, which no caller expects)."""
    if ":" in host or host.startswith("["):
        return True  # an IPv6 literal, judged as an address
    labels = host.removesuffix(".").split(".")
    return len(host) <= 253 and all(0 < len(label) <= 63 for label in labels)


def _is_loopback_name(host: str) -> bool:
    """RFC 6761: `localhost` and every name under it are loopback, whatever a resolver says."""
    return host == "localhost" or host.endswith(".localhost")


def _target(url: str, hub_paths: tuple[str, ...] = ()) -> _Target:
    """The checks that need no DNS: the URL's form, the hub itself, the allow-list, and
    literal addresses (in their normal form)."""
    parsed = _parse_url(url)
    host = parsed.raw_host.decode("ascii")
    normal = _normal_host(host)
    port = parsed.port or _DEFAULT_PORTS[parsed.scheme]
    # An address is judged here for every client: aiohttp never asks a resolver about one.
    hub = names_the_hub(normal, port)
    if hub and port in other_ports():
        hub_paths = ()  # no path of a server other than the web doors may be reached
    trusted = (hub and bool(hub_paths)) or normal in _allowed_hosts()
    if not trusted and _is_address(normal):
        _check_addresses(host, [normal])  # a private address is refused as such first
    if hub:
        _check_hub_path(url, hub_paths)
    return _Target(host, port, trusted or hub, hub)


@lru_cache(maxsize=HOSTS_KEPT)
def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _check_addresses(host: str, addresses: Iterable[str]) -> None:
    allowed = _allowed_hosts()
    for address in addresses:
        if _normal_host(address) in allowed:
            continue
        reason = refusal(ipaddress.ip_address(address))
        if reason:
            named = address in (host, _normal_host(host))
            where = f"{host} is" if named else f"{host} resolves to {address},"
            raise UnsafeURL(
                f"{where} {reason}; the hub only sends requests to public addresses "
                "(OUTBOUND_ALLOWED_HOSTS opens a host for development)"
            )


def looks_up(url: str) -> bool:
    """Whether `check_url` may ask DNS about `url`'s host (a name, not an address): a lookup
    may take seconds, which an event loop must not wait through."""
    try:
        host = _parse_url(url).raw_host.decode("ascii")
    except UnsafeURL:
        return False  # refused for its form, before any lookup
    return not _is_address(_normal_host(host))


def check_url(url: str, allow_unresolved: bool = False, hub_paths: tuple[str, ...] = ()) -> None:
    """Raise UnsafeURL unless `url` is an http(s) URL whose host resolves to public addresses
    and is not the hub itself (except under `hub_paths`, the paths of the hub it may reach).

    With `allow_unresolved`, a name that does not resolve now passes: a webhook may be
    registered before its DNS exists, and the connect-time check still guards every request.
    """
    target = _target(url, hub_paths)
    if target.hub or _is_address(_normal_host(target.host)):
        return
    try:
        addresses = resolve(target.host, target.port)
    except OSError as exc:
        if _is_loopback_name(_normal_host(target.host)) and not target.trusted:
            raise UnsafeURL(
                f"{target.host} is a loopback name (RFC 6761); the hub only sends requests to "
                "public addresses (OUTBOUND_ALLOWED_HOSTS opens a host for development)"
            ) from exc
        if allow_unresolved:
            return
        raise UnsafeURL(f"{target.host} does not resolve: {exc}") from exc
    _refuse_the_hub(target.host, target.port, addresses)
    if not target.trusted:
        _check_addresses(target.host, addresses)


def _connectable(host: str, port: int, addresses: list[str], trusted: bool, hub: bool) -> list[str]:
    """The addresses a connection may use; `hub`: the call was let reach the hub by this name."""
    if not addresses:
        raise httpcore.ConnectError(f"{host} resolves to no address")
    if not hub:
        _refuse_the_hub(host, port, addresses)
    if not trusted:
        _check_addresses(host, addresses)
    return addresses


# --- The same checks for a pool of kept-alive connections (a2ahub/outbound_pool.py) ---------


def check_target(url: str, hub_paths: tuple[str, ...] = ()) -> None:
    """Before each request of a pool: the same judgement as every other call makes of its URL
    (its form, the hub itself outside `hub_paths`, and its literal address if it has one; a
    pool resolves and checks names only when it opens a connection)."""
    _target(url, hub_paths)


def connectable(
    host: str, port: int, addresses: list[str], may_reach_hub: bool = False
) -> list[str]:
    """The connect-time check of a pooled connection: the addresses it may connect to (all of
    `addresses`, the lookup's answer); raises UnsafeURL if any is not public, or reaches the
    hub under another name than the hub's own (or from a pool that may not reach it).

    An allow-listed host skips the address checks, and so does (for a pool that may reach the
    hub) a host and port where the hub's web doors answer, whatever the scheme: the socket
    reaches the same place."""
    hub = may_reach_hub and port not in other_ports() and names_the_hub(host, port)
    trusted = hub or _normal_host(host) in _allowed_hosts()
    return _connectable(host, port, addresses, trusted, hub)


# --- The connect-time check -------------------------------------------------------------------


class _Deadline:
    """One time limit for the whole call; every socket operation gets what is left of it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.restart()

    def restart(self) -> None:
        self.end = time.monotonic() + self.seconds

    def clamp(self, timeout: float | None, error: type[Exception]) -> float:
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise error("the request took longer than its time limit")
        return remaining if timeout is None else min(timeout, remaining)


def _checked(target: _Target, host: str, port: int, addresses: list[str]) -> list[str]:
    """The connect-time check of a client made for `target`: the URL's own host keeps what
    `_target` found (allow-listed, or the hub where the caller may reach it); any other host
    a library reaches through the client is checked in full."""
    same = host == target.host and port == target.port
    return _connectable(host, port, addresses, same and target.trusted, same and target.hub)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        limit = self._deadline.clamp(timeout, httpcore.ReadTimeout)
        return await self._inner.read(max_bytes, limit)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, self._deadline.clamp(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        limit = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        inner = await self._inner.start_tls(ssl_context, server_hostname, limit)
        return _AsyncStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    """Resolves and checks the host itself (the blocking lookup on a worker thread), then
    connects to a checked address, not the name."""

    def __init__(self, target: _Target, deadline: _Deadline) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._target = target
        self._deadline = deadline

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._resolve(host, port, timeout)
        error: Exception = httpcore.ConnectError(f"cannot connect to {host}")
        for address in _checked(self._target, host, port, addresses):
            limit = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
            try:
                stream = await self._inner.connect_tcp(
                    address, port, limit, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                error = exc
                continue
            return _AsyncStream(stream, self._deadline)
        raise error

    async def _resolve(self, host: str, port: int, timeout: float | None) -> list[str]:
        limit = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        try:
            if _is_address(_normal_host(host)):
                # An address asks no DNS: looked up here, without the hop to a thread (the
                # answer is still checked like any other).
                return resolve(host, port)
            with anyio.fail_after(limit):
                return await anyio.to_thread.run_sync(resolve, host, port, abandon_on_cancel=True)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"looking up {host} took too long") from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"{host} does not resolve: {exc}") from exc

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@cache
def ssl_context() -> ssl.SSLContext:
    """The one TLS context of every outbound connection, whichever client opens it."""
    return httpx.create_ssl_context()


class _AsyncTransport(httpx.AsyncHTTPTransport):
    def __init__(self, target: _Target, deadline: _Deadline) -> None:
        super().__init__(verify=ssl_context(), trust_env=False)
        # The same pool httpx would build, but its sockets come from our checking backend.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context(),
            network_backend=_AsyncBackend(target, deadline),
        )


# --- Public API -------------------------------------------------------------------------------


def _client(
    target: _Target, deadline: _Deadline, timeout: float, headers: httpx.Headers | None = None
) -> httpx.AsyncClient:
    """A client whose every connection passes the connect-time check made for `target`."""
    transport = _AsyncTransport(target, deadline)
    return httpx.AsyncClient(
        transport=transport,
        headers=headers,
        trust_env=False,
        follow_redirects=False,
        timeout=httpx.Timeout(timeout),
    )


def _headers(headers: Mapping[str, str] | None) -> httpx.Headers:
    merged = httpx.Headers({"Accept-Encoding": "identity"})
    merged.update(headers or {})
    merged["User-Agent"] = USER_AGENT
    return merged


def get(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    hub_paths: tuple[str, ...] = (),
) -> Response:
    """GET `url` (on the hub itself only under `hub_paths`), from code that is not on the
    event loop. Raises UnsafeURL, ResponseTooLarge or httpx.HTTPError."""
    return async_to_sync(_send)("GET", url, None, headers, timeout, max_bytes, hub_paths)


async def async_post(
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    hub_paths: tuple[str, ...] = (),
) -> Response:
    """POST `content` to `url` (on the hub itself only under `hub_paths`). Raises UnsafeURL,
    ResponseTooLarge or httpx.HTTPError."""
    return await _send("POST", url, content, headers, timeout, max_bytes, hub_paths)


async def _send(
    method: str,
    url: str,
    content: bytes | None,
    headers: Mapping[str, str] | None,
    timeout: float,
    max_bytes: int,
    hub_paths: tuple[str, ...] = (),
) -> Response:
    async with _stream(method, url, content, headers, timeout, max_bytes, hub_paths) as response:
        body = await response.aread()
    return Response(response.status_code, response.headers, body)


class StreamingResponse:
    """An answer still arriving: status and headers now, the body as it comes.

    Read it once, with `aiter_line_batches` or `aread`; both stop with ResponseTooLarge once the
    body passes the call's limit, and with httpx.ReadTimeout once the call's deadline has passed.
    """

    def __init__(self, response: httpx.Response, max_bytes: int) -> None:
        self._response = response
        self._max_bytes = max_bytes
        self._read = 0
        self.status_code = response.status_code
        self.headers = response.headers

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes in the pieces the network delivers them, as soon as they arrive."""
        declared = self._response.headers.get("Content-Length", "")
        if numerals.is_over(declared, self._max_bytes):
            raise ResponseTooLarge(f"the response is {declared} bytes, more than {self._max_bytes}")
        chunks: AsyncIterator[bytes] = self._response.aiter_bytes()
        async for chunk in chunks:
            self._read += len(chunk)
            if self._read > self._max_bytes:
                raise ResponseTooLarge(f"the response is longer than {self._max_bytes} bytes")
            yield chunk

    async def aiter_line_batches(self) -> AsyncIterator[list[str]]:
        """The lines completed by each network read, as soon as it arrives (so a caller can
        write the lines that came together at once); a last line without an LF comes when the
        body ends. Lines lose their LF or CRLF; bytes that are not UTF-8 become U+FFFD."""
        pending = bytearray()
        async for chunk in self.aiter_bytes():
            *lines, rest = chunk.split(b"\n")
            if lines:
                lines[0] = bytes(pending) + lines[0]
                pending.clear()
                yield [_line(line) for line in lines]
            pending += rest
        if pending:
            yield [_line(pending)]

    async def aread(self) -> bytes:
        """The rest of the body, whole."""
        return b"".join([chunk async for chunk in self.aiter_bytes()])


def _line(raw: bytes | bytearray) -> str:
    return bytes(raw).removesuffix(b"\r").decode("utf-8", errors="replace")


def async_stream_post(
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> AbstractAsyncContextManager[StreamingResponse]:
    """POST `content` to `url` and give the answer as it arrives, for `async with`.

    Entering raises UnsafeURL or httpx.HTTPError (nothing of the body is read yet); reading
    raises ResponseTooLarge or httpx.HTTPError. `timeout` is one deadline for everything from
    the connect to the last read; leaving the block closes the connection.
    """
    return _stream("POST", url, content, headers, timeout, max_bytes)


@asynccontextmanager
async def _stream(
    method: str,
    url: str,
    content: bytes | None,
    headers: Mapping[str, str] | None,
    timeout: float,
    max_bytes: int,
    hub_paths: tuple[str, ...] = (),
) -> AsyncIterator[StreamingResponse]:
    async with _client(_target(url, hub_paths), _Deadline(timeout), timeout) as client:
        request = client.build_request(method, url, content=content, headers=_headers(headers))
        response = await client.send(request, stream=True)
        try:
            yield StreamingResponse(response, max_bytes)
        finally:
            await response.aclose()


class KeptClient:
    """A guarded client for one origin that keeps its connections open between requests, for
    one request at a time: each `begin` judges the request's URL as `async_client` judges its
    own, and gives the request the whole time limit. The caller closes it."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.origin = origin_of(url)
        self.deadline = _Deadline(timeout)
        self.http = _client(_target(url), self.deadline, timeout)

    def begin(self, url: str) -> httpx.AsyncClient:
        if origin_of(url) != self.origin:
            raise ValueError(f"{url} is not on {self.origin}")
        _target(url)
        self.deadline.restart()
        return self.http


def async_client(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | None = None,
    hub_paths: tuple[str, ...] = (),
) -> httpx.AsyncClient:
    """A guarded AsyncClient for a library that makes its own requests (the A2A SDK client).

    Its connections pass the same connect-time check as `get`; `url`'s host is trusted
    as there (allow-listed, or the hub itself where `hub_paths` let the caller reach it), any
    other host it reaches is checked in full. `headers` go with every request. `timeout` is one
    deadline for the client's whole life; the caller closes it.
    """
    return _client(_target(url, hub_paths), _Deadline(timeout), timeout, _headers(headers))
