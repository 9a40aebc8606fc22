"""The outbound guard for libraries built on httpx2 (the `openai` and `mcp` SDKs).

Those SDKs take an `httpx2.AsyncClient`; ours is an httpx client whose sockets pass the SSRF
check (`a2ahub.outbound`). `guarded_client` is an httpx2 client whose transport hands each
request to an `outbound.KeptClient` for the URL's origin (the same connect-time check, no
redirects, no environment proxies, one deadline per request) and gives the answer back as it
arrives, counted against `max_bytes`. Errors come back as the httpx2 errors the SDKs expect.

A kept client serves one request at a time, and goes back to the transport when its answer is
closed: the next request to that origin reuses its connection. An `llm` turn asks its model
once a tool round, and over TLS each new connection cost a handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Callable

import httpx
import httpx2

from a2ahub import background, outbound

# What is read of an answer its reader stopped reading (a model's stream after its last event)
# so that its connection can serve the next request; past either, the connection is closed.
DRAIN_BYTES = 65536
DRAIN_SECONDS = 0.1


class _Body(httpx2.AsyncByteStream):
    def __init__(
        self, response: httpx.Response, done: Callable[[], None], request: httpx2.Request,
        max_bytes: int,
    ) -> None:  # fmt: skip
        self.response = response
        self.done = done
        self.request = request
        self.max_bytes = max_bytes
        # One iterator, whoever asks: a reader that asks again reads on (the SDK's streams
        # read what follows their last event), and what is left is drained from it.
        self.raw = response.aiter_raw()
        self.read = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.raw:
                self.read += len(chunk)
                if self.read > self.max_bytes:
                    raise httpx2.ReadError(
                        f"the answer is longer than {self.max_bytes} bytes", request=self.request
                    )
                yield chunk
        except httpx.TimeoutException as exc:
            raise httpx2.ReadTimeout(str(exc) or "timed out", request=self.request) from exc
        except httpx.HTTPError as exc:
            raise httpx2.ReadError(str(exc) or type(exc).__name__, request=self.request) from exc

    async def aclose(self) -> None:
        if self.closed:  # its client may already serve another request
            return
        self.closed = True
        try:
            await self.drain()
            await self.response.aclose()
        finally:
            self.done()

    async def drain(self) -> None:
        if self.response.is_closed:
            return
        left = DRAIN_BYTES
        with contextlib.suppress(TimeoutError, httpx.HTTPError):
            async with asyncio.timeout(DRAIN_SECONDS):
                async for chunk in self.raw:
                    left -= len(chunk)
                    if left < 0:
                        return


class GuardedTransport(httpx2.AsyncBaseTransport):
    # Idle kept clients an origin keeps beyond this many are closed.
    IDLE_PER_ORIGIN = 4

    def __init__(self, timeout: float, max_bytes: int) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.idle: defaultdict[str, list[outbound.KeptClient]] = defaultdict(list)
        self.closing: set[outbound.KeptClient] = set()
        self.closed = False

    def kept_client(self, url: str) -> tuple[outbound.KeptClient, httpx.AsyncClient]:
        idle = self.idle[outbound.origin_of(url)]
        kept = idle.pop() if idle else outbound.KeptClient(url, self.timeout)
        try:
            return kept, kept.begin(url)
        except BaseException:
            self.closing.add(kept)
            raise

    def give_back(self, kept: outbound.KeptClient) -> None:
        idle = self.idle[kept.origin]
        if self.closed:  # an answer closed after its client was
            background.keep(asyncio.ensure_future(kept.http.aclose()))
        elif len(idle) < self.IDLE_PER_ORIGIN:
            idle.append(kept)
        else:
            self.closing.add(kept)

    async def close_unkept(self) -> None:
        while self.closing:
            await self.closing.pop().http.aclose()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        body = await request.aread()
        await self.close_unkept()
        try:
            kept, client = self.kept_client(url)
        except outbound.UnsafeURL as exc:
            raise refused(url, exc, request) from exc
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"user-agent"]
        sent = client.build_request(request.method, url, headers=headers, content=body)
        try:
            response = await client.send(sent, stream=True)
        except BaseException as exc:
            await client.aclose()
            error = not_sent(url, exc, request)
            if error is None:
                raise
            raise error from exc
        return httpx2.Response(
            response.status_code, headers=response.headers.raw,
            stream=_Body(response, lambda: self.give_back(kept), request, self.max_bytes),
            request=request,
        )  # fmt: skip

    async def aclose(self) -> None:
        self.closed = True
        for idle in self.idle.values():
            self.closing.update(idle)
        self.idle.clear()
        await self.close_unkept()


def refused(url: str, exc: outbound.UnsafeURL, request: httpx2.Request) -> httpx2.ConnectError:
    return httpx2.ConnectError(f"the hub may not call {url}: {exc}", request=request)


def not_sent(url: str, exc: BaseException, request: httpx2.Request) -> httpx2.HTTPError | None:
    """The httpx2 error an SDK expects for a request that did not go out (None: `exc` is not
    one of ours or httpx's, and is raised as it is)."""
    if isinstance(exc, outbound.UnsafeURL):
        return refused(url, exc, request)
    if isinstance(exc, httpx.TimeoutException):
        return httpx2.ConnectTimeout(str(exc) or "timed out", request=request)
    if isinstance(exc, httpx.HTTPError):
        return httpx2.ConnectError(str(exc) or type(exc).__name__, request=request)
    return None


def guarded_client(
    timeout: float, max_bytes: int, headers: dict[str, str] | None = None
) -> httpx2.AsyncClient:
    """An httpx2 client for an SDK: every request through the outbound guard."""
    return httpx2.AsyncClient(
        transport=GuardedTransport(timeout, max_bytes), headers=headers, timeout=timeout,
        trust_env=False, follow_redirects=False,
    )  # fmt: skip
