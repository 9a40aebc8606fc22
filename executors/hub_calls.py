"""How an executor sends a message to another hosted agent: through the hub's own handlers,
in this process, not over HTTP to itself.

Executors sit below the protocol front, so they cannot import its handlers; the protocol app
fills in `sender` when it starts (`protocol.apps`). A call names the calling agent, the
callee's slug, the request and the hop count of the turn that makes it; it runs as the
principal of the calling agent, under the callee's access rules, and answers with the task
(or the direct reply) or raises the A2AError a door would have answered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from a2a.types import a2a_pb2 as pb

from a2ahub.errors import A2AError

if TYPE_CHECKING:
    from agents.models import Agent

Sender = Callable[["Agent", str, pb.SendMessageRequest, int], Awaitable["pb.Task | pb.Message"]]

sender: Sender | None = None


async def send(
    caller: Agent, slug: str, request: pb.SendMessageRequest, hops: int
) -> pb.Task | pb.Message:
    if sender is None:
        raise A2AError("This process cannot call hosted agents (the protocol app is not loaded).")
    return await sender(caller, slug, request, hops)
