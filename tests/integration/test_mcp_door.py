"""The hub as an MCP server on the distributed hub: the official `mcp` client (Streamable
HTTP transport and `ClientSession`) lists and calls the hub's agents as tools over `/mcp`,
anonymously (open agents only), with an API key and with an OAuth2 token (the agents that need
them too), and continues a task that asks for input, on another web process than the one that
started it (the door keeps no session)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import ROOT
from tests.integration.applications import application
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

T = TypeVar("T")

KEYED = "mcp-keyed"
MAKE_KEYED_AGENT = """
import django, sys; django.setup()
from agents.models import Agent, ApiKey, Skill
agent = Agent.objects.create(
    slug=sys.argv[1], name="Keyed interviewer", description="Asks your name, for key holders.",
    executor_kind="interview", access="signed_in",
    security_schemes={"apiKey": {"type": "apiKey", "in": "header", "name": "X-Interview-Key"}},
    security_requirements=[{"apiKey": []}])
Skill.objects.create(agent=agent, skill_id="greet", name="Greet", description="Greets you.")
print(ApiKey.issue("mcp client")[1])
"""
DROP_AGENT = "import django, sys; django.setup()\n" + (
    "from agents.models import Agent; Agent.objects.filter(slug=sys.argv[1]).delete()"
)


def django_snippet(hub: Hub, code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=hub.env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@pytest.fixture
def api_key(hub: Hub) -> Iterator[str]:
    """A hub-wide API key, and an agent that takes only a key (in a header of its own name,
    which the MCP door fills from X-API-Key); the agent goes when the test ends."""
    yield django_snippet(hub, MAKE_KEYED_AGENT, KEYED)
    django_snippet(hub, DROP_AGENT, KEYED)


def with_mcp(
    base: str, use: Callable[[ClientSession], Awaitable[T]], headers: dict[str, str] | None = None,
    modern: bool = False,
) -> T:  # fmt: skip
    async def session() -> T:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await (mcp.discover() if modern else mcp.initialize())
            return await use(mcp)

    return asyncio.run(session())


async def names(mcp: ClientSession) -> list[str]:
    return [tool.name for tool in (await mcp.list_tools()).tools]


def calling(name: str, arguments: dict[str, Any]) -> Callable[[ClientSession], Awaitable[Any]]:
    async def call(mcp: ClientSession) -> Any:
        return await mcp.call_tool(name, arguments)

    return call


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


def test_an_anonymous_client_lists_and_calls_only_open_agents(hub: Hub, api_key: str) -> None:
    tools = with_mcp(hub.web_a, names)
    assert {"echo", "interview", "tck"} <= set(tools)
    assert {"secure", KEYED, "tck-ext"}.isdisjoint(tools)
    result = with_mcp(hub.web_a, calling("echo", {"message": "hello from an MCP client"}))
    assert result.is_error is False
    assert result.structured_content["state"] == "completed"
    assert "hello from an MCP client" in texts(result)
    refused = with_mcp(hub.web_a, calling(KEYED, {"message": "Hi"}))
    assert (refused.is_error, texts(refused)) == (True, ["This agent needs credentials."])


def test_a_client_with_an_api_key_sees_its_agent_and_continues_a_task_on_another_process(
    hub: Hub, api_key: str
) -> None:
    key = {"X-API-Key": api_key}
    assert KEYED in with_mcp(hub.web_a, names, key)
    first = with_mcp(hub.web_a, calling(KEYED, {"message": "Hi!"}), key)
    assert first.structured_content["state"] == "input-required"
    task_id = first.structured_content["taskId"]
    assert f'call {KEYED} again with taskId "{task_id}"' in texts(first)[0]
    reply = {"message": "Ada", "taskId": task_id}
    second = with_mcp(hub.web_b, calling(KEYED, reply), key)
    assert (second.structured_content["taskId"], second.structured_content["state"]) == (
        task_id, "completed",
    )  # fmt: skip
    assert any("Ada" in text for text in texts(second))
    binding = hub.query("SELECT binding FROM tasks_task WHERE id = %s", (task_id,))
    assert binding == [("MCP",)]


def test_a_client_with_an_oauth2_token_reaches_the_agent_that_takes_only_tokens(hub: Hub) -> None:
    client_id, secret = application(hub, "mcp robot")
    answer = httpx.post(f"{hub.web_a}/o/token/", data={"grant_type": "client_credentials"},
                        auth=(client_id, secret))  # fmt: skip
    bearer = {"Authorization": f"Bearer {answer.json()['access_token']}"}
    assert "secure" in with_mcp(hub.web_a, names, bearer)
    result = with_mcp(hub.web_a, calling("secure", {"message": "with a token"}), bearer)
    assert (result.is_error, result.structured_content["state"]) == (False, "completed")
    assert "with a token" in texts(result)


def test_a_client_of_the_2026_protocol_revision_lists_and_calls_too(hub: Hub) -> None:
    assert "echo" in with_mcp(hub.web_a, names, modern=True)
    result = with_mcp(hub.web_a, calling("echo", {"message": "modern"}), modern=True)
    assert "modern" in texts(result)


def test_a_client_finds_the_mcp_server_from_the_ai_catalog_and_connects(hub: Hub) -> None:
    document = httpx.get(f"{hub.web_a}/.well-known/ai-catalog.json", timeout=10).json()
    (entry,) = [e for e in document["entries"] if e["type"] == "application/mcp-server-card+json"]
    card = httpx.get(entry["url"], timeout=10).json()
    (remote,) = card["remotes"]
    assert remote["type"] == "streamable-http"
    base = remote["url"].removesuffix("/mcp")
    assert "echo" in with_mcp(base, names)
