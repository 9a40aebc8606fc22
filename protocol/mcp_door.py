"""The hub as an MCP server at `/mcp` (Streamable HTTP, the official `mcp` SDK's server):
one tool per hosted agent the caller may call; calling it is a blocking SendMessage through
the same handlers and door checks as the A2A bindings (credentials, access rules, limits,
required extensions, hops, the audit count, the request metrics).

Stateless, with JSON answers: the hub runs several web processes and a session kept in one
would be lost to a request the load balancer sends to another, and a tool call here is one
request and one answer (no server-to-client requests, no notifications). A task that waits
for input is continued by calling the tool again with its `taskId`, not by a session.

Credentials are the A2A doors': an API key in `X-API-Key` (or as a bearer token), or an
OAuth2 access token of the hub as `Authorization: Bearer`. For each agent the key is put
where that agent's card names its key, so one MCP connection reaches every agent it may.
Session cookies are not taken: the developer pages are not an MCP client.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

import mcp_types as types
from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError

from a2ahub import body_limit, metrics, request_id, tracing
from a2ahub.errors import A2AError, AccessDenied, AuthenticationRequired, internal_error
from a2ahub.request import Headers, Request
from agents.credential_rows import is_api_key
from agents.models import Agent
from agents.principals import DEFAULT_KEY_HEADER, Principal, bearer_token
from protocol import door, limits, strings
from protocol.calls import Call
from protocol.mcp_tools import (
    Arguments,
    BadArguments,
    answer_result,
    read_arguments,
    refusal_result,
    task_result,
    tool_name,
    tool_of,
)
from protocol.method_table import V1_METHODS, resolve
from tasks.models import Binding, TaskState
from tasks.wire import PB_TO_STATE, V1

logger = logging.getLogger(__name__)

PATHS = ("/mcp", "/mcp/")
BINDING = "mcp"  # as the request metrics and logs name it
RUNNING_STATES = {TaskState.SUBMITTED, TaskState.WORKING}

Scope = dict[str, Any]


def is_mcp(path: str) -> bool:
    return path in PATHS


# -- who is calling ------------------------------------------------------------------------


def presented_key(request: Request) -> str:
    """The API key the MCP caller sent: in X-API-Key, or as a bearer token."""
    key = str(request.headers.get(DEFAULT_KEY_HEADER, "")).strip()
    if key:
        return key
    bearer = bearer_token(request)
    return bearer[0] if bearer and is_api_key(bearer[0]) else ""


def request_for(request: Request, agent: Agent) -> Request:
    """The MCP request as `agent`'s own door would have it: no session cookie, and the API
    key (if any) in each place the agent's card names one (X-API-Key when it names none)."""
    by_name = {k: v for k, v in request.headers.by_name.items() if k != "cookie"}
    query = request.query_string
    key = presented_key(request)
    if key:
        schemes = [s for s in (agent.security_schemes or {}).values() if s.get("type") == "apiKey"]
        if not agent.security_schemes:
            by_name[DEFAULT_KEY_HEADER.lower()] = key
        for scheme in schemes:
            name, place = str(scheme.get("name", DEFAULT_KEY_HEADER)), scheme.get("in", "header")
            if place == "header":
                by_name[name.lower()] = key
            elif place == "query":
                query = urlencode([(name, key)]).encode()
            elif place == "cookie":
                by_name["cookie"] = f"{name}={key}"
    headers = Headers([])
    headers.by_name = by_name
    return replace(request, headers=headers, query_string=query)


def hub_request(ctx: ServerRequestContext[Any, Any]) -> Request:
    """The HTTP request that carried the MCP message, as the door's checks read one."""
    http = ctx.request
    if http is None:  # not over HTTP (the door serves no other transport)
        raise MCPError(types.INVALID_REQUEST, "The hub's MCP server is served over HTTP only.")
    return Request.of(http.scope)


async def caller_of(request: Request, agent: Agent) -> Principal | None:
    """Who the caller is to `agent`, or None when it may not call it (credentials, access
    rule, or an extension the agent requires that the request does not declare)."""
    own = request_for(request, agent)
    try:
        principal = await door.authenticate_caller(own, agent)
        door.check_extensions(own.headers, agent, sending=True)
    except (AuthenticationRequired, AccessDenied, A2AError):
        return None
    return principal


def offered_agents() -> list[Agent]:
    """The agents the door offers as tools: enabled and listed in the hub's catalog."""
    return list(
        Agent.objects.filter(enabled=True, public=True).prefetch_related("skills").order_by("slug")
    )


# -- the MCP methods -----------------------------------------------------------------------


@dataclass
class Exchange:
    """What the metrics and log lines name: filled in as the call is read."""

    method: str
    agent: str = ""
    code: str = "ok"


@contextmanager
def exchange(ctx: ServerRequestContext[Any, Any], method: str) -> Iterator[Exchange]:
    """The call's Exchange (named in its log lines), counted in the request metrics and its
    server span ended (when tracing) once the call is done."""
    ex = Exchange(method)
    request_id.describe(ex, BINDING)
    started = time.perf_counter()
    door_span = open_door(ctx) if tracing.enabled else None
    try:
        yield ex
    finally:
        elapsed = time.perf_counter() - started
        metrics.record_request(ex.agent, ex.method, V1, BINDING, ex.code, elapsed)
        if door_span is not None:
            close_door(door_span, ex)


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    with exchange(ctx, "tools/list") as ex:
        try:
            request = hub_request(ctx)
            async with door.request_context():
                agents = await sync_to_async(offered_agents)()
                tools = []
                for agent in agents:
                    principal = await caller_of(request, agent)
                    if principal is not None:
                        tools.append(tool_of(agent, extended=not principal.is_anonymous))
            return types.ListToolsResult(tools=tools)
        except MCPError:
            raise
        except Exception as exc:
            # The SDK would answer with the exception's own text.
            logger.error("the MCP door's tools/list failed")
            ex.code = "internal"
            raise MCPError(types.INTERNAL_ERROR, internal_error(exc).message) from None


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    with exchange(ctx, "tools/call") as ex:
        tracing.annotate(gen_ai__tool__name=params.name)
        request = hub_request(ctx)
        async with door.request_context():
            agent = await agent_of_tool(params.name)
            if agent is None:
                ex.code = "unknown_tool"
                raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
            ex.agent = agent.slug
            tracing.note_agent(agent.slug, agent.pk, agent.name)
            return await call_agent(request, agent, params.arguments, ex)


async def agent_of_tool(name: str) -> Agent | None:
    """The offered agent whose tool is `name` (its slug, for any slug MCP's names take)."""
    agent = await door.agent_named(name)
    if agent is not None and agent.public and tool_name(agent.slug) == name:
        return agent
    agents = await sync_to_async(offered_agents)()
    return next((a for a in agents if tool_name(a.slug) == name), None)


async def call_agent(
    request: Request, agent: Agent, arguments: dict[str, Any] | None, ex: Exchange
) -> types.CallToolResult:
    """The agent's answer as the tool's result; a refusal (credentials, access, limits,
    arguments, an A2A error) as a tool error saying why."""
    try:
        call = await admit(request, agent, len(json.dumps(arguments or {})))
        tool = tool_of(agent, extended=not call.principal.is_anonymous)
        args = read_arguments(tool, arguments)
        strings.check_params({"message": args.message, "taskId": args.task_id,
                              "contextId": args.context_id})  # fmt: skip
        if args.task_id:
            running = await running_task(call, args.task_id)
            if running is not None:
                return task_result(running, tool.name)
        answer = await resolve(V1_METHODS["SendMessage"].handler)(call, send_request(args))
        tracing.note_result(answer)
        return answer_result(answer, tool.name)
    except BadArguments as exc:
        ex.code = "invalid_params"
        return refusal_result(str(exc))
    except limits.LimitExceeded as exc:
        ex.code = "limit"
        return refusal_result(str(exc))
    except (AuthenticationRequired, AccessDenied) as exc:
        ex.code = "unauthenticated" if isinstance(exc, AuthenticationRequired) else "forbidden"
        return refusal_result(exc.message)
    except A2AError as exc:
        ex.code = type(exc).__name__
        return refusal_result(exc.message)
    except Exception as exc:
        logger.error("the MCP door's call to %s failed", agent.slug)
        ex.code = "internal"
        return refusal_result(internal_error(exc).message)


async def admit(request: Request, agent: Agent, size: int) -> Call:
    """Every check of the A2A doors for a send to `agent`, and the call it makes."""
    own = request_for(request, agent)
    principal = await door.authenticate_caller(own, agent)
    if door.has_limits(agent):
        await sync_to_async(door.check_limits)(agent, principal, size, True)
    extensions = door.check_extensions(own.headers, agent, sending=True)
    call = Call(agent, principal, V1, own.base_url, extensions,
                binding=Binding.MCP, hops=door.check_hops(own))  # fmt: skip
    door.count_call(call)
    return call


async def running_task(call: Call, task_id: str) -> pb.Task | None:
    """The task `task_id` names (the caller's, or TaskNotFound) when it is still running: a
    call naming it then says how it is doing, since a running task takes no message."""
    task = await resolve(V1_METHODS["GetTask"].handler)(call, pb.GetTaskRequest(id=task_id))
    state = PB_TO_STATE.get(task.status.state)
    return task if state in RUNNING_STATES else None


def send_request(args: Arguments) -> pb.SendMessageRequest:
    """A blocking SendMessage of the tool's message (a new task, or the next turn of one)."""
    message = pb.Message(
        message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text=args.message)],
        task_id=args.task_id, context_id=args.context_id,
    )  # fmt: skip
    if args.skill:
        message.metadata.update({"skillId": args.skill})
    return pb.SendMessageRequest(message=message)


def open_door(ctx: ServerRequestContext[Any, Any]) -> tracing.Door | None:
    """The call's server span. MCP carries a trace's context in the message's `_meta`, and
    the MCP SDK's own server span, current here, continues it: the door's span is its child.
    A message without one continues the trace its HTTP request carries, if any."""
    if tracing.CONTEXT_HEADERS[0] in (ctx.meta or {}):
        return tracing.open_door({}, BINDING)
    http = ctx.request
    return tracing.open_door(Request.of(http.scope).headers if http is not None else {}, BINDING)


def close_door(door_span: tracing.Door, ex: Exchange) -> None:
    # tools/list lists agents, it invokes none: no GenAI operation is named for it.
    operation = "invoke_agent" if ex.method == "tools/call" else None
    door_span.finish(ex.agent, ex.method, V1, BINDING, {
        "mcp.method.name": ex.method, "gen_ai.operation.name": operation,
        "error.type": None if ex.code == "ok" else ex.code,
    })  # fmt: skip
    door_span.end(ex.code != "ok")


SERVER: Server[Any] = Server(
    "a2a-hub",
    version="1.0",
    title=settings.HUB_NAME,
    instructions=(
        "Each tool is an A2A agent hosted by this hub. Call it with a message; the answer says "
        "the task's id and state. A task waiting for input (input-required) is continued by "
        "calling the same tool with its taskId and your reply."
    ),
    on_list_tools=list_tools,
    on_call_tool=call_tool,
)


# -- the ASGI app ----------------------------------------------------------------------------


async def serve(scope: Scope, receive: Any, send: Any) -> None:
    """One HTTP request to `/mcp`, through the SDK's Streamable HTTP transport. Stateless:
    each request gets its own manager, whose run ends with the request."""
    request_id.begin_asgi(scope.get("headers", []))
    manager = StreamableHTTPSessionManager(
        SERVER,
        stateless=True,
        json_response=True,
        max_request_body_size=settings.A2A_MAX_REQUEST_BYTES,
    )
    async with manager.run():
        await manager.handle_request(scope, receive, send)


def body_limit_at(scope: Scope) -> body_limit.Limit | None:
    """The door's body limit (the A2A doors'), refused as a JSON-RPC error before the body is
    read (the web server asks)."""
    if not is_mcp(scope.get("path", "")):
        return None

    def refusal() -> body_limit.Refusal:
        message = f"The request body is over {settings.A2A_MAX_REQUEST_BYTES} bytes."
        body = {"jsonrpc": "2.0", "id": None,
                "error": {"code": types.INVALID_REQUEST, "message": message}}  # fmt: skip
        headers = [(b"content-type", b"application/json")]
        return body_limit.Refusal(413, headers, json.dumps(body).encode())

    return body_limit.Limit(settings.A2A_MAX_REQUEST_BYTES, refusal)
