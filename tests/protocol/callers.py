"""Callers of the hosted agents' JSON-RPC endpoints through the hub's ASGI app (the door's test
clients): each holds one API key (or none) and speaks either version, sending the wire samples
with fields changed."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from agents.models import ApiKey
from tests.door_client import AsyncDoor, Door
from tests.factories.envelopes import envelope, request_headers, url
from tests.factories.versions import V03, V1
from tests.protocol.answers import error_of, result_of, task_of


class Caller:
    """One client holding one API key (or none), speaking JSON-RPC to hosted agents."""

    def __init__(self, key: str | None, principal: str = "") -> None:
        self.key = key
        self.principal = principal  # the owner its tasks are stored under
        self.client = Door()

    def post(
        self,
        slug: str,
        body: Any,
        version: str | None = V03,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.client.post(
            url(slug),
            data=data,
            content_type=content_type,
            headers=request_headers(version, self.key, headers),
        )

    def rpc(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
            headers: dict[str, str] | None = None, **fields: Any) -> Any:  # fmt: skip
        return self.post(slug, envelope(version, op, params, **fields), version, headers)

    def result(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
               **fields: Any) -> Any:  # fmt: skip
        return result_of(self.rpc(slug, version, op, params, **fields))

    def error(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
              **fields: Any) -> dict[str, Any]:  # fmt: skip
        return error_of(self.rpc(slug, version, op, params, **fields))

    def send(self, slug: str, version: str, text: str = "hello", **fields: Any) -> dict[str, Any]:
        """Send a message and return the Task it made or moved."""
        return task_of(self.result(slug, version, "send", text=text, **fields), version)

    def get(self, slug: str, version: str, task_id: str, **params: Any) -> dict[str, Any]:
        task: dict[str, Any] = self.result(slug, version, "get", {"id": task_id, **params})
        return task

    def wait_for(self, slug: str, task_id: str, done: Callable[[dict[str, Any]], bool],
                 timeout: float = 2.5) -> dict[str, Any]:  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            task = self.get(slug, V1, task_id)
            if done(task) or time.monotonic() > deadline:
                return task
            time.sleep(0.05)


class AsyncCaller:
    """The same, for async tests."""

    def __init__(self, key: str | None) -> None:
        self.key = key
        self.client = AsyncDoor()

    async def rpc(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
                  **fields: Any) -> Any:  # fmt: skip
        return await self.client.post(
            url(slug),
            data=json.dumps(envelope(version, op, params, **fields)),
            content_type="application/json",
            headers=request_headers(version, self.key),
        )

    async def result(self, slug: str, version: str, op: str,
                     params: dict[str, Any] | None = None, **fields: Any) -> Any:  # fmt: skip
        return result_of(await self.rpc(slug, version, op, params, **fields))

    async def send(self, slug: str, version: str, text: str = "hello",
                   **fields: Any) -> dict[str, Any]:  # fmt: skip
        return task_of(await self.result(slug, version, "send", text=text, **fields), version)

    async def get(self, slug: str, task_id: str) -> dict[str, Any]:
        task: dict[str, Any] = await self.result(slug, V1, "get", {"id": task_id})
        return task

    async def wait_for(self, slug: str, task_id: str, done: Callable[[dict[str, Any]], bool],
                       timeout: float = 2.5) -> dict[str, Any]:  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            task = await self.get(slug, task_id)
            if done(task) or time.monotonic() > deadline:
                return task
            await asyncio.sleep(0.05)


def holder_of_key(name: str) -> Caller:
    """A caller holding a new API key named `name`, good for every agent."""
    key, raw = ApiKey.issue(name)
    return Caller(raw, key.principal)
