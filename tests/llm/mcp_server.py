"""A real MCP server (the official `mcp` SDK's MCPServer, Streamable HTTP) on 127.0.0.1 in a
thread, with a `search` tool that answers from its query; it records each request's
Authorization header."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

from tests.helpers import free_port


class McpTestServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.authorizations: list[str] = []
        self.calls: list[dict[str, Any]] = []
        mcp = MCPServer("test-tools")
        calls = self.calls

        @mcp.tool()
        def search(query: str, limit: int = 3) -> str:
            """Search the test index for a query."""
            calls.append({"query": query, "limit": limit})
            return f"found {limit} pages about {query}"

        app = mcp.streamable_http_app(host="127.0.0.1")
        seen = self.authorizations

        async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = dict(scope.get("headers") or [])
                seen.append(headers.get(b"authorization", b"").decode())
            await app(scope, receive, send)

        config = uvicorn.Config(recording, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> McpTestServer:
        threading.Thread(target=self.server.run, daemon=True).start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
