"""Many small outbound POSTs at once over kept-alive connections: the webhook deliveries of a
delivery engine, behind the same guard as every other request (`a2ahub.outbound`).

aiohttp rather than httpx here: on this project's machines an httpx AsyncClient spent about
1 ms of CPU per request on one connection and over 2 ms with 32 in flight (its connection
pool matches every waiting request against every connection), aiohttp about 0.12 ms, and a
delivery engine sends a thousand a second (bench/clients.py: 6x to 17x less CPU per POST).

The guard: `check_target` refuses a URL of the wrong form, one on the hub itself outside the
pool's `hub_paths`, or a literal address that is not public before each request (aiohttp never
looks up a host that looks like an address, "2130706433" included, so it is judged there in its
dotted form); a host name is looked up by our
resolver when a connection is opened, every address it gives is checked (`connectable`), and
aiohttp connects to those addresses only, so the connection is pinned to what was checked.
A lookup is kept for DNS_CACHE_SECONDS at most; the check runs on every new connection.
Redirects are not followed, proxies and `.netrc` are ignored, cookies are not kept, bodies are
not decompressed, and one deadline covers each request from connect to the last byte read.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import httpx
from aiohttp.abc import AbstractResolver, ResolveResult

from a2ahub import outbound, tracing

DNS_CACHE_SECONDS = 5.0
# Of a receiver's answer, what an attempt's log keeps (an excerpt) is all that is read.
ANSWER_BYTES_READ = 4096


class GuardedResolver(AbstractResolver):
    """Looks names up with `outbound.resolve` (off the loop) and refuses private answers."""

    def __init__(self, may_reach_hub: bool = False) -> None:
        self._cache: dict[tuple[str, int], tuple[float, list[str]]] = {}
        self._may_reach_hub = may_reach_hub

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._lookup(host, port)
        addresses = outbound.connectable(host, port, found, self._may_reach_hub)
        return [result(host, address, port) for address in addresses]

    async def _lookup(self, host: str, port: int) -> list[str]:
        cached = self._cache.get((host, port))
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        loop = asyncio.get_running_loop()
        # Through the module attribute: tests replace `outbound.resolve`.
        addresses = await loop.run_in_executor(None, outbound.resolve, host, port)
        self._cache[(host, port)] = (time.monotonic() + DNS_CACHE_SECONDS, addresses)
        return addresses

    async def close(self) -> None:
        self._cache.clear()


def result(host: str, address: str, port: int) -> ResolveResult:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return ResolveResult(hostname=host, host=address, port=port, family=family, proto=0,
                         flags=socket.AI_NUMERICHOST)  # fmt: skip


class OutboundPool:
    """Kept-alive guarded connections for one event loop; at most `limit` open at once. The
    hub itself is reached only under `hub_paths` (the push inbox, for webhooks)."""

    def __init__(self, limit: int, hub_paths: tuple[str, ...] = ()) -> None:
        self._limit = limit
        self._hub_paths = hub_paths
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            resolver = GuardedResolver(may_reach_hub=bool(self._hub_paths))
            connector = aiohttp.TCPConnector(
                limit=self._limit, limit_per_host=0, resolver=resolver,
                use_dns_cache=False, ssl=outbound.ssl_context(),
            )  # fmt: skip
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, auto_decompress=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                headers={"User-Agent": outbound.USER_AGENT, "Accept-Encoding": "identity"},
            )  # fmt: skip
        return self._session

    async def post(
        self,
        url: str,
        *,
        content: bytes,
        headers: Mapping[str, str],
        timeout: float,
        max_bytes: int = ANSWER_BYTES_READ,
    ) -> outbound.Response:
        """POST `content`; raises UnsafeURL, TimeoutError or aiohttp's ClientError (a
        connection refused, say). Of the answer's body the first `max_bytes` are read: a
        receiver's 2xx is a delivery whatever it answers with (a long body was taken for a
        failure, and the event sent again without end); what is left unread closes the
        connection rather than being read to keep it."""
        outbound.check_target(url, self._hub_paths)
        sent = {**headers, "User-Agent": outbound.USER_AGENT}
        tracing.inject(sent)  # the receiver continues the trace (nothing while tracing is off)
        async with asyncio.timeout(timeout):
            async with self.session().post(
                url, data=content, headers=sent, allow_redirects=False
            ) as response:
                body = await read_start(response, max_bytes)
        answer_headers = httpx.Headers(list(response.headers.items()))
        return outbound.Response(response.status, answer_headers, body)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def read_start(response: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in response.content.iter_chunked(min(64 * 1024, max_bytes)):
        body += chunk
        if len(body) >= max_bytes:
            break
    return bytes(body[:max_bytes])


def describe(exc: BaseException) -> str:
    """An attempt's error as an operator reads it: the class and what it says."""
    text: Any = str(exc) or ("the request took longer than its time limit"
                             if isinstance(exc, TimeoutError) else "")  # fmt: skip
    return f"{type(exc).__name__}: {text}"[:1000]
