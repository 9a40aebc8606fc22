"""The outbound guard for libraries built on httpx2 (the `openai` and `mcp` SDKs).

Those SDKs take an `httpx2.AsyncClient`; ours is an httpx client whose sockets pass the SSRF
check (`a2ahub.outbound`). `guarded_client` is an httpx2 client whose transport hands each
request to a fresh `outbound.async_client` for the URL (the same connect-time check, no
redirects, no environment proxies, one deadline per request) and gives the answer back as it
arrives, counted against `max_bytes`. Errors come back as the httpx2 errors the SDKs expect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2

from a2ahub import outbound


class _Body(httpx2.AsyncByteStream):
    def __init__(
        self, response: httpx.Response, client: httpx.AsyncClient, request: httpx2.Request,
        max_bytes: int,
    ) -> None:  # fmt: skip
        self.response, self.client, self.request, self.max_bytes = (
            response,
            client,
            request,
            max_bytes,
        )

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        try:
            async for chunk in self.response.aiter_raw():
                read += len(chunk)
                if read > self.max_bytes:
                    raise httpx2.ReadError(
                        f"the answer is longer than {self.max_bytes} bytes", request=self.request
                    )
                yield chunk
        except httpx.TimeoutException as exc:
            raise httpx2.ReadTimeout(str(exc) or "timed out", request=self.request) from exc
        except httpx.HTTPError as exc:
            raise httpx2.ReadError(str(exc) or type(exc).__name__, request=self.request) from exc

    async def aclose(self) -> None:
        await self.response.aclose()
        await self.client.aclose()


class GuardedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, timeout: float, max_bytes: int) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        body = await request.aread()
        try:
            client = outbound.async_client(url, timeout=self.timeout)
        except outbound.UnsafeURL as exc:
            raise httpx2.ConnectError(
                f"the hub may not call {url}: {exc}", request=request
            ) from exc
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"user-agent"]
        sent = client.build_request(request.method, url, headers=headers, content=body)
        try:
            response = await client.send(sent, stream=True)
        except outbound.UnsafeURL as exc:
            await client.aclose()
            raise httpx2.ConnectError(
                f"the hub may not call {url}: {exc}", request=request
            ) from exc
        except httpx.TimeoutException as exc:
            await client.aclose()
            raise httpx2.ConnectTimeout(str(exc) or "timed out", request=request) from exc
        except httpx.HTTPError as exc:
            await client.aclose()
            raise httpx2.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        except BaseException:
            await client.aclose()
            raise
        return httpx2.Response(
            response.status_code, headers=response.headers.raw,
            stream=_Body(response, client, request, self.max_bytes), request=request,
        )  # fmt: skip


def guarded_client(
    timeout: float, max_bytes: int, headers: dict[str, str] | None = None
) -> httpx2.AsyncClient:
    """An httpx2 client for an SDK: every request through the outbound guard."""
    return httpx2.AsyncClient(
        transport=GuardedTransport(timeout, max_bytes), headers=headers, timeout=timeout,
        trust_env=False, follow_redirects=False,
    )  # fmt: skip
