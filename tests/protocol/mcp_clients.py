"""The official `mcp` client (Streamable HTTP transport and `ClientSession`) talking to the
ASGI application production serves, on the `door` fixture's event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.door_client import HOST, door_loop

T = TypeVar("T")


async def with_session(
    use: Callable[[ClientSession], Awaitable[T]], headers: dict[str, str] | None = None
) -> T:
    from a2ahub.asgi import application

    transport = httpx2.ASGITransport(app=application)
    async with (
        httpx2.AsyncClient(transport=transport, base_url=f"http://{HOST}", headers=headers) as http,
        streamable_http_client(f"http://{HOST}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await use(session)


def in_session(use: Callable[[ClientSession], Awaitable[T]], key: str | None = None,
               headers: dict[str, str] | None = None) -> T:  # fmt: skip
    """`use` a new MCP session (holding `key` as X-API-Key, when given); its answer."""
    sent = dict(headers or {})
    if key:
        sent["X-API-Key"] = key
    return door_loop().run(with_session(use, sent))


def tool_names(key: str | None = None, headers: dict[str, str] | None = None) -> list[str]:
    async def names(session: ClientSession) -> list[str]:
        return [tool.name for tool in (await session.list_tools()).tools]

    return in_session(names, key, headers)


def call(name: str, arguments: dict[str, Any], key: str | None = None) -> Any:
    async def calling(session: ClientSession) -> Any:
        return await session.call_tool(name, arguments)

    return in_session(calling, key)


def blocks(result: Any) -> list[Any]:
    """A tool result's content blocks, each read by its type's fields."""
    return list(result.content)


def structured(result: Any) -> dict[str, Any]:
    return dict(result.structured_content or {})
