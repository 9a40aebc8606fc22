"""The `python` executor kind: skills written as plain Python functions.

A developer registers a function with `@skill("name")` in a module listed in the setting
`A2A_SKILL_MODULES`, and points an agent's skills at it (`executor_settings`:
`{"functions": {"<skill id>": "<name>"}}`). The function gets the RequestContext and may be
sync or async. What it returns becomes the task's result: text, a dict or list (data), parts,
or a Message; a generator streams, each str/dict/part it yields being the next chunk of one
artifact and each `Status` a progress message. Raising `InputRequired` asks the caller a
question; the answer comes back as the next turn of the same task.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError

from a2ahub.errors import InvalidAgentResponseError
from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

SkillFunction = Callable[[RequestContext], Any]
REGISTRY: dict[str, SkillFunction] = {}
_DONE = object()


def skill(name: str) -> Callable[[SkillFunction], SkillFunction]:
    """Register a function as the skill `name` (import-time; one function per name)."""

    def register(function: SkillFunction) -> SkillFunction:
        known = REGISTRY.get(name)
        if known is not None and known is not function:
            raise ValueError(f"A skill named {name!r} is registered already ({known.__module__}).")
        REGISTRY[name] = function
        return function

    return register


@dataclass(frozen=True)
class Status:
    """Yielded by a streaming skill: a progress message, not part of the result."""

    text: str


class InputRequired(Exception):
    """Raised by a skill that needs the caller to answer a question first."""

    def __init__(self, question: str) -> None:
        super().__init__(question)
        self.question = question


def function_names(settings: dict[str, Any]) -> dict[str, str]:
    functions = settings.get("functions")
    if isinstance(functions, dict):
        return {str(k): str(v) for k, v in functions.items()}
    single = settings.get("function")
    return {"*": str(single)} if single else {}


async def choose(context: RequestContext) -> SkillFunction:
    """The function for the skill the message asks for (metadata `skillId`); otherwise the
    agent's first skill (as its card lists them) that has one."""
    names = function_names(context.settings)
    wanted = (
        str(context.message.metadata["skillId"]) if "skillId" in context.message.metadata else ""
    )
    if wanted not in names:
        # Settings are JSON objects, whose key order the database may not keep: the card's
        # order of skills decides instead.
        skills = await sync_to_async(lambda: [s.skill_id for s in context.agent.skills.all()])()
        wanted = next((skill for skill in skills if skill in names), "*")
    name = names.get(wanted) or next(iter(names.values()), "")
    function = REGISTRY.get(name)
    if function is None:
        raise InvalidAgentResponseError(f"No Python skill named {name!r} is registered.")
    return function


def as_parts(value: Any) -> list[pb.Part]:
    if isinstance(value, pb.Part):
        return [value]
    if isinstance(value, list | tuple) and value and all(isinstance(p, pb.Part) for p in value):
        return list(value)
    if isinstance(value, str):
        return [pb.Part(text=value)]
    if isinstance(value, dict | list):
        part = pb.Part(media_type="application/json")
        if isinstance(value, dict):
            part.data.struct_value.update(value)
        else:
            part.data.list_value.extend(value)
        return [part]
    raise InvalidAgentResponseError(f"A skill returned {type(value).__name__}, not a result.")


def validate_python_settings(settings: dict[str, Any]) -> None:
    names = function_names(settings)
    if not names:
        raise ValidationError('Name the functions: {"functions": {"<skill id>": "<name>"}}.')
    unknown = sorted(set(names.values()) - set(REGISTRY))
    if unknown:
        raise ValidationError(
            f"Not a registered Python skill: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(REGISTRY)) or 'none'})."
        )


class PythonExecutor(Executor):
    check_settings = staticmethod(validate_python_settings)
    replies_with_messages = False

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        function = await choose(context)
        await updater.start_work()
        try:
            result = await call(function, context)
            if inspect.isasyncgen(result) or inspect.isgenerator(result):
                await stream(result, updater)
                await updater.complete()
            elif isinstance(result, pb.Message):
                await updater.complete(result)
            else:
                if result is not None:
                    await updater.add_artifact(as_parts(result), name="result", last_chunk=True)
                await updater.complete()
        except InputRequired as question:
            await updater.require_input(question.question)


async def call(function: SkillFunction, context: RequestContext) -> Any:
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        result = function(context)
        return await result if inspect.isawaitable(result) else result
    # Plain functions may block (files, HTTP clients): they run on a thread, off the loop.
    return await sync_to_async(function, thread_sensitive=False)(context)


async def stream(results: Iterator[Any] | AsyncIterator[Any], updater: TaskUpdater) -> None:
    """Chunks of one artifact; each is held back until the next comes, so the last one can
    say it is the last."""
    artifact_id, held = "", None
    async for item in each(results):
        if isinstance(item, Status):
            await updater.update_status(item.text)
            continue
        if held is not None:
            artifact_id = await send_chunk(updater, held, artifact_id, last=False)
        held = item
    if held is not None:
        await send_chunk(updater, held, artifact_id, last=True)


async def send_chunk(updater: TaskUpdater, item: Any, artifact_id: str, last: bool) -> str:
    return await updater.add_artifact(
        as_parts(item), artifact_id=artifact_id, name="result", append=bool(artifact_id),
        last_chunk=last,
    )  # fmt: skip


async def each(results: Iterator[Any] | AsyncIterator[Any]) -> AsyncIterator[Any]:
    if isinstance(results, AsyncIterator):
        async for item in results:
            yield item
        return
    step = sync_to_async(lambda: next(results, _DONE), thread_sensitive=False)
    while (item := await step()) is not _DONE:
        yield item
