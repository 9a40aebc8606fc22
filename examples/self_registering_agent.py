"""A small A2A agent, outside the hub, that registers itself with the hub's registry.

It is the official a2a-sdk's server (JSON-RPC, 1.0 with the 0.3 compat layer) answering every
message with its text reversed. On start it posts its card to `POST /registry/agents`, then
renews with a heartbeat every third of its TTL; on SIGTERM or Ctrl-C it deregisters and stops.
Killed outright, it leaves its registration to expire.

    python examples/self_registering_agent.py --hub http://127.0.0.1:8000 --key a2a_... \
        --port 9100 --ttl 60

The key is a hub-wide API key holding the `registry` scope (tick it when creating the key in
the admin), or an access token of the hub's authorization server with that scope (for
instance a client-credentials token asked for with `scope=registry`). The hub calls it at
http://127.0.0.1:<port>/, so a hub on the same machine needs OUTBOUND_ALLOWED_HOSTS=127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from typing import Any

import httpx
import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

logger = logging.getLogger("self-registering-agent")


class Reverser(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message
        if context.current_task is None:
            await event_queue.enqueue_event(pb.Task(
                id=context.task_id, context_id=context.context_id,
                status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED), history=[context.message],
            ))  # fmt: skip
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await updater.add_artifact([pb.Part(text=context.get_user_input()[::-1])], name="reversed")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


def agent_card(base: str, name: str) -> pb.AgentCard:
    return pb.AgentCard(
        name=name, description="Reverses the text it is sent.", version="1.0.0",
        supported_interfaces=[
            pb.AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0"),
        ],
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="reverse", name="Reverse", description="Reverses a text.",
                              tags=["text", "example"], examples=["hello"])],
    )  # fmt: skip


def application(card: pb.AgentCard) -> Starlette:
    handler = DefaultRequestHandler(
        agent_executor=Reverser(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card),
              *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True)]  # fmt: skip
    return Starlette(routes=routes)


class Registration:
    """The agent's registration with the hub: register, heartbeat, deregister."""

    def __init__(self, hub: str, key: str, card: pb.AgentCard, agent_id: str, ttl: int) -> None:
        self.base = f"{hub.rstrip('/')}/registry/agents"
        self.http = httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {key}"})
        self.card, self.agent_id, self.ttl = card, agent_id, ttl

    async def register(self) -> dict[str, Any]:
        answer = await self.http.post(
            self.base,
            params={"ttl": self.ttl, "agentId": self.agent_id},
            json=MessageToDict(self.card),
        )
        if answer.is_error:  # the hub's answer says why (a field, a scope, a clash)
            logger.error("registration refused (%s): %s", answer.status_code, answer.text)
        answer.raise_for_status()
        logger.info("registered: %s", answer.json())
        return dict(answer.json())

    async def keep_alive(self) -> None:
        while True:
            await asyncio.sleep(max(self.ttl / 3, 0.2))
            try:
                answer = await self.http.post(f"{self.base}/{self.agent_id}/heartbeat")
                if answer.status_code == 404:  # purged or revoked: register again
                    await self.register()
            except httpx.HTTPError as exc:
                logger.warning("heartbeat failed: %s", exc)

    async def deregister(self) -> None:
        try:
            await self.http.delete(f"{self.base}/{self.agent_id}")
            logger.info("deregistered")
        finally:
            await self.http.aclose()


async def run(args: argparse.Namespace) -> None:
    base = f"http://{args.host}:{args.port}"
    card = agent_card(base, args.name)
    config = uvicorn.Config(application(card), host=args.host, port=args.port,
                            log_level="warning", lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    registration = Registration(args.hub, args.key, card, args.agent_id, args.ttl)
    await registration.register()
    heartbeat = asyncio.create_task(registration.keep_alive())
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    heartbeat.cancel()
    await registration.deregister()
    server.should_exit = True
    await serving


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", default=os.environ.get("A2A_HUB_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--key", default=os.environ.get("A2A_HUB_KEY", ""),
                        help="a hub-wide API key with the registry scope, or an OAuth2 "
                             "access token of the hub holding it (or A2A_HUB_KEY)")  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--name", default="Reverser")
    parser.add_argument("--agent-id", default="reverser")
    parser.add_argument("--ttl", type=int, default=60, help="seconds; renewed every third")
    args = parser.parse_args()
    if not args.key:
        parser.error("give a hub API key with --key or A2A_HUB_KEY")
    return args


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(run(arguments()))
