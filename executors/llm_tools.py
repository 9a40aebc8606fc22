"""The tools an `llm` agent offers its model: hosted agents (each a function tool, called
through the hub's own handlers), the tools of the MCP servers it lists (through the official
`mcp` client and the outbound guard), and the built-in `ask_user`.

A tool call's arguments that are not JSON, or not the tool's schema, are answered to the model
as an error it may correct; a hosted agent that refuses or fails is answered the same way (the
model may try another way). An MCP server that cannot be reached or answers garbage fails the
turn (`ToolFailure`), naming the server.
"""

from __future__ import annotations

import json
import re
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import jsonschema
from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async

from a2ahub import outbound
from a2ahub.errors import A2AError, InvalidAgentResponseError
from a2ahub.outbound_bridge import guarded_client
from agents.lookup import find_agent
from agents.models import Agent
from executors import hub_calls
from executors.llm_chat import answer_text

ASK_USER = "ask_user"
AGENT_PREFIX = "agent_"
MAX_TOOL_ANSWER_CHARS = 100_000
MAX_MCP_BYTES = 4 * 1024 * 1024
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

ASK_USER_TOOL = {
    "type": "function",
    "function": {
        "name": ASK_USER,
        "description": "Ask the user a question and wait for the answer; use it when the "
        "request is unclear or you need something only the user knows.",
        "parameters": {
            "type": "object",
            "properties": {"question": {"type": "string", "description": "What to ask."}},
            "required": ["question"],
        },
    },
}


class ToolFailure(InvalidAgentResponseError):
    """An MCP server failed: the turn ends failed with this message."""


class BadArguments(ValueError):
    """The model's arguments for a tool: answered to the model, which may try again."""


def parse_arguments(raw: str, schema: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.loads(raw or "{}")
    except ValueError as exc:
        raise BadArguments(f"the arguments are not JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise BadArguments("the arguments are not a JSON object")
    try:
        jsonschema.validate(arguments, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "arguments"
        raise BadArguments(f"{where}: {exc.message}") from None
    except jsonschema.SchemaError:
        pass  # the server's schema is its own business; it judges the call itself
    return arguments


def clipped(text: str) -> str:
    if len(text) <= MAX_TOOL_ANSWER_CHARS:
        return text
    return text[:MAX_TOOL_ANSWER_CHARS] + "\n[the rest was cut]"


# -- hosted agents ------------------------------------------------------------------------


def agent_tool_name(slug: str) -> str:
    return AGENT_PREFIX + slug.replace(".", "_")[: 64 - len(AGENT_PREFIX)]


def agent_description(agent: Agent) -> str:
    skills = "; ".join(f"{s.skill_id}: {s.description}" for s in agent.skills.all())
    text = f"Send a message to the hosted agent {agent.slug} ({agent.name}): {agent.description}"
    return (f"{text} Skills: {skills}" if skills else text)[:1000]


def agent_tool(agent: Agent) -> dict[str, Any]:
    skill_ids = [skill.skill_id for skill in agent.skills.all()]
    properties: dict[str, Any] = {"message": {"type": "string", "description": "The message."}}
    if len(skill_ids) > 1:
        which = "Which skill to ask (default: the first)."
        properties["skill"] = {"type": "string", "enum": skill_ids, "description": which}
    return {
        "type": "function",
        "function": {
            "name": agent_tool_name(agent.slug),
            "description": agent_description(agent),
            "parameters": {"type": "object", "properties": properties, "required": ["message"]},
        },
    }


def hosted_agents(slugs: list[str]) -> list[Agent]:
    return [agent for agent in map(find_agent, slugs) if agent is not None]


@dataclass
class AgentTools:
    """The hosted agents the developer picked, as tools, and the tasks their calls made."""

    caller: Agent
    hops: int
    agents: dict[str, Agent] = field(default_factory=dict)  # by tool name
    tasks: list[str] = field(default_factory=list)

    @classmethod
    async def load(cls, caller: Agent, slugs: list[str], hops: int) -> AgentTools:
        # Most agents list none: no thread hop for nothing (a request's first hop starts its
        # thread).
        found = await sync_to_async(hosted_agents)(slugs) if slugs else []
        tools = cls(caller, hops)
        for agent in found:
            if agent.pk != caller.pk:
                tools.agents[agent_tool_name(agent.slug)] = agent
        return tools

    def definitions(self) -> list[dict[str, Any]]:
        return [agent_tool(agent) for agent in self.agents.values()]

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        agent = self.agents[name]
        message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER)
        message.parts.add(text=str(arguments["message"]))
        if arguments.get("skill"):
            message.metadata.update({"skillId": str(arguments["skill"])})
        request = pb.SendMessageRequest(message=message)
        try:
            answer = await hub_calls.send(self.caller, agent.slug, request, self.hops)
        except A2AError as exc:
            return f"error: agent {agent.slug} refused the call: {exc.message}"
        if isinstance(answer, pb.Task):
            self.tasks.append(answer.id)
        return clipped(answer_text(answer)) or "(no text in the answer)"


# -- MCP servers --------------------------------------------------------------------------


@dataclass
class McpServer:
    url: str
    token: str = ""

    @property
    def label(self) -> str:
        """Where it is, without a query or credentials that the URL might carry."""
        return outbound.origin_of(self.url) + urlsplit(self.url).path


@dataclass
class McpTools:
    """The tools of the MCP servers a turn uses, each with the session that serves it."""

    stack: AsyncExitStack
    timeout: float
    sessions: dict[str, tuple[Any, McpServer]] = field(default_factory=dict)  # by tool name
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    offered: list[dict[str, Any]] = field(default_factory=list)

    async def connect(self, server: McpServer, taken: set[str]) -> None:
        from mcp.client import Client
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {server.token}"} if server.token else None
        try:
            outbound.check_url(server.url)
            http = guarded_client(self.timeout, MAX_MCP_BYTES, headers)
            await self.stack.enter_async_context(http)
            transport = streamable_http_client(server.url, http_client=http)
            client = await self.stack.enter_async_context(
                Client(transport, read_timeout_seconds=self.timeout)
            )
            listed = await client.list_tools()
        except Exception as exc:
            raise ToolFailure(f"The MCP server {server.label} failed: {describe(exc)}") from None
        for tool in listed.tools:
            name = tool.name
            if name in taken or not TOOL_NAME.match(name):
                continue
            taken.add(name)
            schema = dict(tool.input_schema or {"type": "object"})
            self.sessions[name] = (client, server)
            self.schemas[name] = schema
            self.offered.append({
                "type": "function",
                "function": {"name": name, "description": (tool.description or name)[:1000],
                             "parameters": schema},
            })  # fmt: skip

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        client, server = self.sessions[name]
        try:
            result = await client.call_tool(name, arguments, read_timeout_seconds=self.timeout)
        except Exception as exc:
            raise ToolFailure(
                f"The MCP server {server.label} failed on tool {name}: {describe(exc)}"
            ) from None
        text = mcp_text(result)
        return clipped(f"error: {text}" if result.is_error else text) or "(no content)"


def mcp_text(result: Any) -> str:
    pieces = []
    for content in result.content or []:
        kind = getattr(content, "type", "")
        if kind == "text":
            pieces.append(content.text)
        elif kind == "resource":
            resource = content.resource
            pieces.append(getattr(resource, "text", "") or f"[resource {resource.uri}]")
        else:
            pieces.append(f"[{kind} content]")
    if not pieces and getattr(result, "structured_content", None) is not None:
        pieces.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(pieces)


def describe(exc: BaseException) -> str:
    """One line, no stack: an exception group's first leaf, else the exception itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]
