"""What the MCP door (`protocol.mcp_door`) says about hosted agents, as MCP: each agent as a
tool (its name, description and input schema), a tool's arguments checked and read, and an
A2A answer (a task or a message) as a tool's result. Pure: no database, no requests."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema
import mcp_types as types
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict

from agents.models import Agent, Skill
from tasks.models import TaskState
from tasks.wire import PB_TO_STATE, restore_integers

# MCP's tool names (spec 2025-11-25, "Tool names"): 1 to 128 of these characters.
NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME = 128
# A task in one of these states waits for the caller: call the tool again with its id.
WAITING_STATES = {TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED}
FAILED_STATES = {TaskState.FAILED, TaskState.REJECTED}


def tool_name(slug: str) -> str:
    """An agent's tool name: its slug, with any character MCP's names do not take as `_`
    (slugs are letters, digits, `-` and `_` already, so in practice the slug itself)."""
    return NAME_CHARACTERS.sub("_", slug)[:MAX_NAME] or "_"


def shown_skills(agent: Agent, extended: bool) -> list[Skill]:
    """The skills a caller sees: those of the public card, and the extended card's too for a
    caller with credentials."""
    return [s for s in agent.skills.all() if extended or not s.extended_only]


def description(agent: Agent, skills: Iterable[Skill]) -> str:
    lines = [agent.description.strip() or agent.name]
    for skill in skills:
        line = f"- Skill {skill.skill_id} ({skill.name}): {skill.description.strip()}"
        if skill.examples:
            line += " Examples: " + "; ".join(str(e) for e in skill.examples[:3])
        lines.append(line)
    lines.append(
        "Calling this tool sends the message to the A2A agent and waits for its answer. A task "
        "that asks for input (state input-required) is continued by calling again with its "
        "taskId and the reply as message."
    )
    return "\n".join(lines)


# The tool's text arguments, with what each is for.
TEXT_ARGUMENTS = {
    "message": "What to tell the agent: a new request, or the reply a task asked for.",
    "taskId": "Continue this task (one waiting for input), or see how it is doing.",
    "contextId": "Start the task in this conversation (a contextId an answer gave).",
}


def input_schema(skills: Iterable[Skill]) -> dict[str, Any]:
    properties: dict[str, Any] = {
        name: {"type": "string", "minLength": 1, "description": description}
        for name, description in TEXT_ARGUMENTS.items()
    }
    ids = [s.skill_id for s in skills]
    if ids:
        properties["skill"] = {
            "type": "string",
            "enum": ids,
            "description": "The skill to run (the agent's first skill when not given).",
        }
    return {
        "type": "object",
        "properties": properties,
        "required": ["message"],
        "additionalProperties": False,
    }


def tool_of(agent: Agent, extended: bool) -> types.Tool:
    skills = shown_skills(agent, extended)
    return types.Tool(
        name=tool_name(agent.slug),
        title=agent.name,
        description=description(agent, skills),
        input_schema=input_schema(skills),
    )


class BadArguments(Exception):
    """A tool's arguments that are not its schema's: said to the caller as a tool error (a
    model may try again)."""


@dataclass(frozen=True)
class Arguments:
    message: str
    skill: str | None = None
    task_id: str = ""
    context_id: str = ""


def read_arguments(tool: types.Tool, arguments: dict[str, Any] | None) -> Arguments:
    """The arguments as the tool's input schema has them, or BadArguments naming the first
    problem (and the field it is in)."""
    given = arguments or {}
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(tool.input_schema).iter_errors(given)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise BadArguments(f"Invalid arguments{f' ({where})' if where else ''}: {error.message}")
    return Arguments(
        message=given["message"],
        skill=given.get("skill"),
        task_id=given.get("taskId", ""),
        context_id=given.get("contextId", ""),
    )


# -- answers ------------------------------------------------------------------------------


def state_of(task: pb.Task) -> TaskState:
    return PB_TO_STATE.get(task.status.state, TaskState.WORKING)


def data_value(part: pb.Part) -> Any:
    return restore_integers(MessageToDict(part.data))


def part_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def part_content(part: pb.Part, uri: str) -> types.ContentBlock:
    """One A2A part as MCP content: text as text, data as its JSON text, a file's bytes as an
    image, audio or embedded resource (`uri` names it), a file's URL as a resource link."""
    kind = part.WhichOneof("content")
    media = part.media_type or None
    if kind == "text":
        return types.TextContent(type="text", text=part.text)
    if kind == "data":
        return types.TextContent(type="text", text=part_json(data_value(part)))
    if kind == "url":
        return types.ResourceLink(
            type="resource_link", uri=part.url, name=part.filename or part.url, mime_type=media
        )
    data = base64.b64encode(part.raw).decode("ascii")
    if media and media.startswith("image/"):
        return types.ImageContent(type="image", data=data, mime_type=media)
    if media and media.startswith("audio/"):
        return types.AudioContent(type="audio", data=data, mime_type=media)
    resource = types.BlobResourceContents(uri=uri, blob=data, mime_type=media)
    return types.EmbeddedResource(type="resource", resource=resource)


def parts_content(parts: Iterable[pb.Part], base_uri: str) -> list[types.ContentBlock]:
    return [
        part_content(part, f"{base_uri}/{part.filename or index}")
        for index, part in enumerate(parts)
    ]


def data_of(parts: Iterable[pb.Part]) -> list[Any]:
    return [data_value(p) for p in parts if p.WhichOneof("content") == "data"]


def headline(task: pb.Task, tool: str) -> str:
    state = state_of(task)
    said = f"Task {task.id} is {state.value}."
    if state in WAITING_STATES:
        return (
            f"{said} The agent is waiting for you: call {tool} again with taskId "
            f'"{task.id}" and your reply as message.'
        )
    if state in (TaskState.SUBMITTED, TaskState.WORKING):
        return (
            f"{said} The agent has not finished: call {tool} again with taskId "
            f'"{task.id}" later to see how it is doing (a message is not delivered while it '
            "works)."
        )
    return said


def task_result(task: pb.Task, tool: str) -> types.CallToolResult:
    """A task as a tool's result: a line saying its state (and what to do next), what its
    status says, then its artifacts; the ids and state in `structuredContent`. A failed or
    rejected task is a tool error."""
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=headline(task, tool))]
    status_parts = list(task.status.message.parts) if task.status.HasField("message") else []
    base = f"a2a-hub://tasks/{task.id}"
    content += parts_content(status_parts, f"{base}/status")
    data: list[Any] = data_of(status_parts)
    for artifact in task.artifacts:
        content += parts_content(artifact.parts, f"{base}/artifacts/{artifact.artifact_id}")
        data += data_of(artifact.parts)
    state = state_of(task)
    structured: dict[str, Any] = {
        "taskId": task.id,
        "contextId": task.context_id,
        "state": state.value,
    }
    if data:
        structured["data"] = data
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=state in FAILED_STATES
    )


def message_result(message: pb.Message) -> types.CallToolResult:
    """An answer without a task (the agent replied with a message): its parts."""
    base = f"a2a-hub://messages/{message.message_id}"
    content = parts_content(message.parts, base) or [
        types.TextContent(type="text", text="The agent answered with an empty message.")
    ]
    structured: dict[str, Any] = {"contextId": message.context_id, "messageId": message.message_id}
    data = data_of(message.parts)
    if data:
        structured["data"] = data
    return types.CallToolResult(content=content, structured_content=structured)


def answer_result(answer: pb.Task | pb.Message, tool: str) -> types.CallToolResult:
    if isinstance(answer, pb.Task):
        return task_result(answer, tool)
    return message_result(answer)


def refusal_result(reason: str) -> types.CallToolResult:
    """A call the hub or the agent refused (credentials, access, limits, bad arguments): a
    tool error saying why, never a protocol error."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=reason)], is_error=True
    )
