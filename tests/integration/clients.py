"""The official a2a-sdk client, pointed at one web process and pinned to one protocol version
and binding.

The client reads the agent's card from that process and keeps only the interface of the
version and binding under test (the agent's own, or the shared one that names it by
`tenant`), so its own factory picks the 1.0 transport or the 0.3 compat one. It checks the
card's signature first, with the SDK's verifier and the keys the signature's `jku` names.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NamedTuple

import grpc
import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.interceptors import ClientCallInterceptor
from a2a.types import (
    GetTaskRequest,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.signing import create_signature_verifier
from jwt import PyJWK

HTTP_TIMEOUT = 45.0


class Door(NamedTuple):
    """One way in: a protocol version, a binding, and whether through the agent's own URL or
    the shared one that names it by `tenant`."""

    version: str
    binding: str = "JSONRPC"
    shared: bool = False

    def __str__(self) -> str:
        return f"{self.binding}-{self.version}" + ("-tenant" if self.shared else "")


# Every door of a hosted agent (the shared ones are 1.0 only: `tenant` is a 1.0 field).
DOORS = [
    Door("1.0"), Door("0.3"), Door("1.0", "HTTP+JSON"), Door("0.3", "HTTP+JSON"),
    Door("1.0", shared=True), Door("1.0", "HTTP+JSON", shared=True),
]  # fmt: skip
# The gRPC service, one for every agent, named by `tenant` (`headers` reach the card only:
# gRPC credentials travel as metadata, the call context's service parameters).
GRPC = Door("1.0", "GRPC", shared=True)
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
}


@asynccontextmanager
async def a2a_client(
    base: str,
    slug: str,
    version: str,
    binding: str = "JSONRPC",
    shared: bool = False,
    streaming: bool = False,
    headers: dict[str, str] | None = None,
    interceptors: list[ClientCallInterceptor] | None = None,
) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT, headers=headers) as http:
        # Every card is signed: the SDK's verifier checks it with the keys its `jku` names.
        jwks = f"{base}/.well-known/jwks.json"
        keys = {key["kid"]: key for key in (await http.get(jwks)).json()["keys"]}

        def key_for(kid: str | None, jku: str | None) -> PyJWK:
            assert jku == jwks, jku
            return PyJWK(keys[kid])

        verifier = create_signature_verifier(key_for, ["ES256"])
        card = await A2ACardResolver(http, f"{base}/agents/{slug}").get_agent_card(
            signature_verifier=verifier
        )
        pinned = [
            i
            for i in card.supported_interfaces
            if (i.protocol_binding, i.protocol_version) == (binding, version)
            and bool(i.tenant) == shared
        ][:1]
        assert pinned, f"the card of {slug} offers no {binding} interface for {version}"
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(pinned)
        config = ClientConfig(
            streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )  # fmt: skip
        client = ClientFactory(config).create(card, interceptors)
        try:
            yield client
        finally:
            await client.close()


async def send(client: Client, message: Message, immediately: bool = False) -> Task:
    """Send without streaming; the hub answers these demo agents with a Task."""
    configuration = SendMessageConfiguration(return_immediately=immediately)
    request = SendMessageRequest(message=message, configuration=configuration)
    replies = [reply async for reply in client.send_message(request)]
    assert len(replies) == 1 and replies[0].HasField("task"), replies
    return replies[0].task


async def get(client: Client, task_id: str) -> Task:
    return await client.get_task(GetTaskRequest(id=task_id))


async def read_task(base: str, slug: str, version: str, task_id: str) -> Task:
    """GetTask through a client made for this one call."""
    async with a2a_client(base, slug, version) as client:
        return await get(client, task_id)


async def wait_for_state(
    client: Client, task_id: str, wanted: set[int], timeout: float, interval: float = 0.2
) -> Task:
    """Poll GetTask until the task is in one of the wanted states; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    task = await get(client, task_id)
    while task.status.state not in wanted:
        if time.monotonic() > deadline:
            name = TaskState.Name(task.status.state)
            raise AssertionError(f"task {task_id} still {name} after {timeout}s")
        await asyncio.sleep(interval)
        task = await get(client, task_id)
    return task


def texts(parts: object) -> list[str]:
    return [part.text for part in parts if part.HasField("text")]  # type: ignore[attr-defined]
