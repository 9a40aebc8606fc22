"""The `llm` executor kind: an agent that is a model, instructions and tools, talking to any
OpenAI-compatible Chat Completions server (OpenAI, vLLM, Ollama, LM Studio, a LiteLLM proxy)
through the official `openai` client, whose every request passes the outbound guard.

Settings (`executor_settings`, made by the settings form): `base_url`, `model`,
`instructions`, `temperature`, `max_tokens`, `max_steps` (tool rounds), `timeout` (seconds,
per model or tool call), the API key (`api_key`, sealed at rest by `a2ahub.sealed`, or
`api_key_env`, the name of an environment variable holding it), `agents` (slugs of hosted
agents offered as tools) and `mcp_servers` (`[{"url": ..., "token": <sealed>}]`).

A turn: the task's history becomes the chat (`executors.llm_chat`); the answer streams into
one artifact, a chunk per token delta; tool calls run between rounds, each named in a status
update while it runs; `ask_user` ends the turn in input-required with the model's question
(the caller's reply continues the task, with the whole history). Token usage is kept in the
final status message's metadata (`a2ahub/usage`) and counted in `/metrics`. A model server
that fails, times out or answers garbage, an MCP server that fails, an answer past
LLM_MAX_ANSWER_BYTES or more tool rounds than `max_steps` fail the task, saying which and why.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from a2a.types import a2a_pb2 as pb
from django.conf import settings as django_settings
from django.core.exceptions import ValidationError

from a2ahub import hops, metrics, outbound, sealed
from a2ahub.errors import InvalidAgentResponseError
from a2ahub.outbound_bridge import guarded_client
from agents.models import slug_validator
from agents.validators import validate_callable_url
from executors import llm_secrets
from executors.llm_chat import conversation
from executors.llm_tools import (
    ASK_USER,
    ASK_USER_TOOL,
    AgentTools,
    BadArguments,
    McpServer,
    McpTools,
    ToolFailure,
    describe,
    parse_arguments,
)
from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

DEFAULT_TIMEOUT = 60.0
MIN_TIMEOUT, MAX_TIMEOUT = 1.0, 600.0
DEFAULT_MAX_STEPS, MOST_STEPS = 5, 20
MOST_TOKENS = 1_000_000
MOST_INSTRUCTIONS = 20_000
MOST_MCP_SERVERS = 10
USAGE_KEY = "a2ahub/usage"
ANSWER_NAME = "answer"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# What the model server's whole streamed answer may take on the wire (the answer itself is
# held to LLM_MAX_ANSWER_BYTES).
STREAM_BYTES_FACTOR = 16
NO_KEY = "no-key"  # servers without keys (Ollama, vLLM) take any; the client needs one


class ModelFailure(InvalidAgentResponseError):
    """The model server failed, timed out or answered garbage: the task fails with this."""


# -- settings -----------------------------------------------------------------------------


@dataclass
class LlmSettings:
    base_url: str
    model: str
    instructions: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    timeout: float = DEFAULT_TIMEOUT
    api_key: str = ""
    agents: list[str] = field(default_factory=list)
    mcp_servers: list[McpServer] = field(default_factory=list)

    @property
    def server(self) -> str:
        return outbound.origin_of(self.base_url) or self.base_url[:100]


def number(value: Any, kind: type, low: float, high: float) -> bool:
    ok = isinstance(value, int | float) if kind is float else isinstance(value, int)
    return ok and not isinstance(value, bool) and low <= value <= high


def validate_llm_settings(settings: dict[str, Any]) -> None:
    """The settings as a whole, whoever wrote them (the form, the admin's JSON, the API)."""
    validate_server(settings)
    validate_numbers(settings)
    validate_key(settings)
    validate_agents(settings.get("agents", []))
    validate_mcp_servers(settings.get("mcp_servers", []))


def validate_server(settings: dict[str, Any]) -> None:
    base_url = settings.get("base_url")
    if not isinstance(base_url, str) or not base_url:
        raise ValidationError('Name the model server: {"base_url": "http://127.0.0.1:11434/v1"}.')
    validate_callable_url(base_url, "base_url: the hub may not call this model server")
    model = settings.get("model")
    if not isinstance(model, str) or not model.strip() or len(model) > 200:
        raise ValidationError('Name the model: {"model": "llama3.2"}.')
    instructions = settings.get("instructions", "")
    if not isinstance(instructions, str) or len(instructions) > MOST_INSTRUCTIONS:
        raise ValidationError(
            f'"instructions" is a text of at most {MOST_INSTRUCTIONS} characters.'
        )


NUMBERS = (
    ("temperature", float, 0.0, 2.0), ("max_tokens", int, 1, MOST_TOKENS),
    ("max_steps", int, 0, MOST_STEPS), ("timeout", float, MIN_TIMEOUT, MAX_TIMEOUT),
)  # fmt: skip


def validate_numbers(settings: dict[str, Any]) -> None:
    for key, kind, low, high in NUMBERS:
        if settings.get(key) is not None and not number(settings[key], kind, low, high):
            raise ValidationError(f'"{key}" is a number from {low:g} to {high:g}.')


def validate_key(settings: dict[str, Any]) -> None:
    key = settings.get("api_key")
    if key is not None and not sealed.is_sealed(key):
        raise ValidationError(
            '"api_key" is stored sealed: type the key in the form\'s API key field, or name an '
            'environment variable holding it ("api_key_env").'
        )
    env = settings.get("api_key_env")
    if env is not None and (not isinstance(env, str) or (env and not ENV_NAME.match(env))):
        raise ValidationError('"api_key_env" is the name of an environment variable.')


def validate_agents(agents: Any) -> None:
    if not isinstance(agents, list):
        raise ValidationError('"agents" is a list of hosted agents\' slugs.')
    for slug in agents:
        try:
            slug_validator(slug)
        except ValidationError as exc:
            raise ValidationError(f"agents: {slug}: {' '.join(exc.messages)}") from exc


def validate_mcp_servers(servers: Any) -> None:
    if not isinstance(servers, list) or len(servers) > MOST_MCP_SERVERS:
        raise ValidationError(f'"mcp_servers" is a list of at most {MOST_MCP_SERVERS} servers.')
    for server in servers:
        url = server.get("url") if isinstance(server, dict) else None
        if not isinstance(url, str) or not url:
            raise ValidationError('Each MCP server is {"url": "https://..."}.')
        validate_callable_url(url, f"MCP server {url}: the hub may not call it")
        token = server.get("token")
        if token is not None and not sealed.is_sealed(token):
            raise ValidationError(
                "An MCP server's bearer token is stored sealed: type it in the form."
            )


def opened(value: Any, what: str) -> str:
    if not value:
        return ""
    try:
        return sealed.open_sealed(str(value))
    except sealed.Unreadable as exc:
        raise ModelFailure(f"The stored {what} cannot be read ({exc}).") from None


def api_key_of(raw: dict[str, Any]) -> str:
    if raw.get("api_key"):
        return opened(raw["api_key"], "API key")
    env = raw.get("api_key_env")
    return os.environ.get(env, "") if isinstance(env, str) and env else ""


def read_settings(raw: dict[str, Any]) -> LlmSettings:
    try:
        validate_llm_settings(raw)
    except ValidationError as exc:
        raise ModelFailure(
            f"This agent's settings are not usable: {' '.join(exc.messages)}"
        ) from None
    servers = [
        McpServer(str(s["url"]), opened(s.get("token"), "MCP bearer token"))
        for s in raw.get("mcp_servers", [])
    ]
    return LlmSettings(
        base_url=raw["base_url"], model=raw["model"].strip(),
        instructions=raw.get("instructions", ""), temperature=raw.get("temperature"),
        max_tokens=raw.get("max_tokens"), max_steps=raw.get("max_steps", DEFAULT_MAX_STEPS),
        timeout=float(raw.get("timeout", DEFAULT_TIMEOUT)), api_key=api_key_of(raw),
        agents=[str(s) for s in raw.get("agents", [])], mcp_servers=servers,
    )  # fmt: skip


def max_answer_bytes() -> int:
    return int(django_settings.LLM_MAX_ANSWER_BYTES)


def model_client(config: LlmSettings) -> openai.AsyncOpenAI:
    http = guarded_client(config.timeout, max_answer_bytes() * STREAM_BYTES_FACTOR + 65536)
    return openai.AsyncOpenAI(
        api_key=config.api_key or NO_KEY, base_url=config.base_url, timeout=config.timeout,
        max_retries=0, http_client=http,
    )  # fmt: skip


def scrubbed(text: str, secret: str) -> str:
    return text.replace(secret, "[the API key]") if secret else text


def model_failure(config: LlmSettings, exc: BaseException) -> ModelFailure:
    """What went wrong with the model server, in a sentence, never with the key in it."""
    where = f"The model server {config.server} (model {config.model})"
    if isinstance(exc, openai.APITimeoutError):
        text = f"{where} did not answer within {config.timeout:g} seconds."
    elif isinstance(exc, openai.APIStatusError):
        detail = describe(exc)
        text = f"{where} answered HTTP {exc.status_code}: {detail}"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        text = f"{where} could not be reached: {describe(cause)}"
    elif isinstance(exc, httpx2.HTTPError):
        text = f"{where} failed while answering: {describe(exc)}"
    else:
        text = f"{where} answered something that is not a Chat Completions stream: {describe(exc)}"
    return ModelFailure(scrubbed(text, config.api_key))


async def list_models(config: LlmSettings) -> list[str]:
    """The models the server lists (GET <base_url>/models); ModelFailure saying why not."""
    client = model_client(config)
    try:
        page = await client.models.list()
        return sorted(model.id for model in page.data)
    except Exception as exc:
        raise model_failure(config, exc) from None
    finally:
        await client.close()


# -- a turn -------------------------------------------------------------------------------


@dataclass
class Usage:
    prompt: int = 0
    completion: int = 0

    def add(self, usage: dict[str, Any]) -> None:
        self.prompt += int(usage.get("prompt_tokens") or 0)
        self.completion += int(usage.get("completion_tokens") or 0)


class Answer:
    """The one artifact the model's text streams into: its first chunk makes it, the rest
    append, and the last replaces them with the whole text in one part (else the stored task
    would keep a part for every token). The text is held to LLM_MAX_ANSWER_BYTES."""

    def __init__(self, updater: TaskUpdater, limit: int) -> None:
        self.updater = updater
        self.limit = limit
        self.artifact_id = ""
        self.size = 0
        self.chunks: list[str] = []

    async def add(self, text: str) -> None:
        self.size += len(text.encode())
        if self.size > self.limit:
            raise ModelFailure(
                f"The model's answer passed the size limit of {self.limit} bytes "
                "(LLM_MAX_ANSWER_BYTES)."
            )
        self.chunks.append(text)
        self.artifact_id = await self.updater.add_artifact(
            [pb.Part(text=text)], artifact_id=self.artifact_id, name=ANSWER_NAME,
            append=bool(self.artifact_id),
        )  # fmt: skip
        # One loop turn: the write the chunk scheduled starts now, not when the model's stream
        # next waits (a fast server's whole answer may be read at once); chunks that come
        # while it writes go in the next write together.
        await asyncio.sleep(0)

    async def close(self) -> None:
        if self.artifact_id:
            await self.updater.add_artifact(
                [pb.Part(text="".join(self.chunks))], artifact_id=self.artifact_id,
                name=ANSWER_NAME, last_chunk=True,
            )  # fmt: skip


@dataclass
class Round:
    text: str
    calls: list[dict[str, str]]


@dataclass
class Turn:
    """One turn's state: the settings, the model client, the tools and the usage so far."""

    config: LlmSettings
    client: openai.AsyncOpenAI
    agent_tools: AgentTools
    mcp: McpTools
    usage: Usage = field(default_factory=Usage)

    def tools(self) -> list[dict[str, Any]]:
        return [*self.agent_tools.definitions(), *self.mcp.offered, ASK_USER_TOOL]

    async def ask_model(self, messages: list[dict[str, Any]], answer: Answer) -> Round:
        config = self.config
        options: dict[str, Any] = {}
        if config.temperature is not None:
            options["temperature"] = config.temperature
        if config.max_tokens is not None:
            options["max_tokens"] = config.max_tokens
        calls: dict[int, dict[str, str]] = {}
        text: list[str] = []
        body = {
            "model": config.model, "messages": messages, "tools": self.tools(), "stream": True,
            "stream_options": {"include_usage": True}, **options,
        }  # fmt: skip
        try:
            # The SDK's own request (its headers, errors, SSE reading), with the body as the
            # wire's JSON it already is and each chunk as its JSON: `chat.completions.create`
            # walks the messages through its TypedDicts and makes a pydantic object of every
            # chunk, which cost more of the hub's CPU per turn than all the rest of the call.
            stream = await self.client.post(
                "/chat/completions", body=body, cast_to=object, stream=True,
                stream_cls=openai.AsyncStream[object],
            )  # fmt: skip
            try:
                async for chunk in stream:
                    await self.take(chunk, answer, text, calls)
            finally:
                await stream.close()
        except (ModelFailure, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise model_failure(config, exc) from None
        for index, call in calls.items():
            if not call["name"]:
                raise ModelFailure(
                    f"The model server {config.server} (model {config.model}) sent a tool call "
                    "without a name."
                )
            call["id"] = call["id"] or f"call_{index}"
        return Round("".join(text), [calls[i] for i in sorted(calls)])

    async def take(
        self, chunk: Any, answer: Answer, text: list[str], calls: dict[int, dict[str, str]]
    ) -> None:
        """One `chat.completion.chunk` (its JSON): usage, a text delta (streamed on at once),
        pieces of tool calls (gathered by their index). A chunk of another shape raises
        ValueError."""
        usage = field_of(chunk, "usage", dict)
        if usage is not None:
            self.usage.add(usage)
        for choice in field_of(chunk, "choices", list) or []:
            delta = field_of(choice, "delta", dict) or {}
            content = field_of(delta, "content", str)
            if content:
                text.append(content)
                await answer.add(content)
            for piece in field_of(delta, "tool_calls", list) or []:
                index = field_of(piece, "index", int)
                if index is None:
                    raise ValueError("a tool call's piece without its index")
                call = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                call["id"] = field_of(piece, "id", str) or call["id"]
                function = field_of(piece, "function", dict) or {}
                call["name"] += field_of(function, "name", str) or ""
                call["arguments"] += field_of(function, "arguments", str) or ""

    async def run_tool(self, call: dict[str, str], updater: TaskUpdater) -> str:
        name = call["name"]
        if name in self.agent_tools.agents:
            agent = self.agent_tools.agents[name]
            schema = self.agent_tools.definitions()[list(self.agent_tools.agents).index(name)]
            await updater.update_status(f"calling agent {agent.slug}")
            try:
                arguments = parse_arguments(call["arguments"], schema["function"]["parameters"])
            except BadArguments as exc:
                return f"error: {exc}. Call {name} again with arguments that match its schema."
            return await self.agent_tools.call(name, arguments)
        if name in self.mcp.sessions:
            await updater.update_status(f"calling MCP tool {name}")
            try:
                arguments = parse_arguments(call["arguments"], self.mcp.schemas[name])
            except BadArguments as exc:
                return f"error: {exc}. Call {name} again with arguments that match its schema."
            return await self.mcp.call(name, arguments)
        return f"error: there is no tool called {name}."


def field_of(value: Any, key: str, kind: type) -> Any:
    """`value[key]` if it is a `kind`, None if absent or null; ValueError for another shape."""
    if not isinstance(value, dict):
        raise ValueError(f"{type(value).__name__} where a JSON object belongs")
    found = value.get(key)
    if found is not None and (not isinstance(found, kind) or isinstance(found, bool)):
        raise ValueError(f'"{key}" is a {type(found).__name__}, not a {kind.__name__}')
    return found


def question_of(call: dict[str, str]) -> str | None:
    try:
        arguments = json.loads(call["arguments"] or "{}")
    except ValueError:
        return None
    question = arguments.get("question") if isinstance(arguments, dict) else None
    return question if isinstance(question, str) and question.strip() else None


def usage_message(text: str, turn: Turn | None) -> pb.Message:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT)
    message.parts.add(text=text)
    if turn is not None:
        message.metadata.update({USAGE_KEY: {
            "model": turn.config.model, "promptTokens": turn.usage.prompt,
            "completionTokens": turn.usage.completion,
        }})  # fmt: skip
        message.reference_task_ids.extend(turn.agent_tools.tasks)
    return message


async def count_usage(agent: str, turn: Turn) -> None:
    counts = [
        ({"agent": agent, "model": turn.config.model, "kind": kind}, n)
        for kind, n in (("prompt", turn.usage.prompt), ("completion", turn.usage.completion))
        if n
    ]
    if counts:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, metrics.shared_counts, "a2ahub_llm_tokens", counts)


class LlmExecutor(Executor):
    replies_with_messages = False
    check_settings = staticmethod(validate_llm_settings)
    shown_settings = staticmethod(llm_secrets.shown_settings)
    written_settings = staticmethod(llm_secrets.written_settings)

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        turn: Turn | None = None
        async with AsyncExitStack() as stack:
            try:
                config = read_settings(context.settings)
                await updater.start_work()
                client = model_client(config)
                stack.push_async_callback(client.close)
                agent_tools = await AgentTools.load(
                    context.agent, config.agents, hops.of(context.metadata) + 1
                )
                turn = Turn(config, client, agent_tools, McpTools(stack, config.timeout))
                taken = {ASK_USER, *agent_tools.agents}
                for server in config.mcp_servers:
                    await turn.mcp.connect(server, taken)
                await self.converse(context, updater, turn)
            except (ModelFailure, ToolFailure) as exc:
                await updater.fail(usage_message(exc.message, turn))
            finally:
                if turn is not None:
                    await count_usage(context.agent.slug, turn)

    async def converse(self, context: RequestContext, updater: TaskUpdater, turn: Turn) -> None:
        config = turn.config
        messages = conversation(config.instructions, context.history)
        answer = Answer(updater, max_answer_bytes())
        for step in range(config.max_steps + 1):
            round_ = await turn.ask_model(messages, answer)
            if not round_.calls:
                await answer.close()
                await updater.complete(usage_message(round_.text or "(no answer)", turn))
                return
            asked = [call for call in round_.calls if call["name"] == ASK_USER]
            if asked:
                question = question_of(asked[0]) or round_.text or "Could you say more?"
                await updater.require_input(usage_message(question, turn))
                return
            if step == config.max_steps:
                break
            messages.append({
                "role": "assistant", "content": round_.text or None,
                "tool_calls": [
                    {"id": c["id"], "type": "function",
                     "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in round_.calls
                ],
            })  # fmt: skip
            for call in round_.calls:
                result = await turn.run_tool(call, updater)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        raise ModelFailure(
            f"The model asked for tools more than {config.max_steps} times (max_steps); "
            "the task ends here."
        )
