"""The chat console: talk with an agent from the developer pages, its replies shown as they come.

The page (`chat.html` and `static/developers/chat.js`) posts each message to `chat_send`, which
sends it through the A2A handlers as the principal `user:<id>` and answers with the turn's
event stream; `chat_cancel` cancels the task the same way, and `chat_file` serves the bytes of
a file part of one of the user's tasks. Another user's task answers exactly as an unknown one,
and an agent the user may not call is a 404, as every agent page here.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from a2ahub import numerals
from a2ahub.errors import (
    A2AError,
    InternalError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    error_object,
    internal_error,
)
from agents.models import Agent
from agents.principals import session_of
from developers.access import User, may_call, users_task
from developers.chat_stream import PageEvents, detached, page_call, start_turn
from protocol import door
from protocol.jsonrpc import find_method, parse_params
from protocol.limits import LimitExceeded
from protocol.method_table import resolve
from protocol.sse import event_stream, frames
from tasks import stored_files
from tasks.models import Artifact, Message, Task
from tasks.wire import V1, to_json

MAX_CHAT_TEXT = 4000
MAX_ID_LENGTH = 200  # a task's context id column
REFUSAL_STATUS: dict[type[A2AError], int] = {
    TaskNotFoundError: 404,
    TaskNotCancelableError: 409,
    UnsupportedOperationError: 409,
    InternalError: 500,
}
# Where the admin shows a task; the page puts the task's id in place of this.
ID_SLOT = "TASK-ID"


def chat_agent(user: User, slug: str) -> Agent:
    agent = Agent.objects.filter(slug=slug).prefetch_related("skills").first()
    if agent is None or not may_call(user, agent):
        raise Http404("No such agent.")
    return agent


async def enabled_chat_agent(request: HttpRequest, slug: str) -> tuple[User, Agent]:
    """The signed-in user and the agent, as the A2A doors find it (enabled, skills loaded)."""
    user = await request.auser()
    agent = await door.agent_named(slug)
    if agent is None or not await sync_to_async(may_call)(user, agent):
        raise Http404("No such agent.")
    return user, agent


@login_required
@require_GET
def chat_page(request: HttpRequest, slug: str) -> HttpResponse:
    agent = chat_agent(request.user, slug)
    owner = agent.owner_id == request.user.pk
    # The page declares no extension: an agent that requires one refuses every message.
    required = door.required_extensions(agent)
    context = {
        "agent": agent,
        "owner": owner,
        "required_extensions": required,
        "closed": not agent.enabled or bool(required),
        "skills": list(agent.skills.all()),
        "principal": session_of(request.user).id,
        # The owner's list has every caller's tasks; anyone else's, their own.
        "task_list_url": reverse("developers:tasks", kwargs={"slug": slug}),
        "admin_task_url": (
            reverse("admin:tasks_task_change", args=[ID_SLOT]) if request.user.is_staff else ""
        ),
    }
    return render(request, "developers/chat.html", context)


@login_required
@require_POST
async def chat_send(request: HttpRequest, slug: str) -> HttpResponseBase:
    user, agent = await enabled_chat_agent(request, slug)
    params, problem = message_params(request.POST, agent)
    if problem:
        return JsonResponse({"ok": False, "error": {"message": problem}}, status=400)
    try:
        items = await start_turn(request, agent, session_of(user), params)
    except Exception as exc:
        return refusal(exc)
    events = PageEvents(reverse("developers:chat-file", kwargs={"slug": agent.slug}))
    return event_stream(frames(detached(items), events.framing()))


def message_params(form: Any, agent: Agent) -> tuple[dict[str, Any], str]:
    """The SendMessage params of the form's message (a follow-up names its task and context,
    a skill goes in `metadata.skillId`), or what is wrong with the form."""
    text = form.get("text", "")
    if not text.strip() or len(text) > MAX_CHAT_TEXT:
        return {}, f"Type a message to send (at most {MAX_CHAT_TEXT} characters)."
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                               "parts": [{"text": text}]}  # fmt: skip
    for field in ("taskId", "contextId"):
        value = form.get(field, "").strip()
        if len(value) > MAX_ID_LENGTH:
            return {}, f"{field} is longer than {MAX_ID_LENGTH} characters."
        if value:
            message[field] = value
    skill = form.get("skill", "")
    if skill:
        if skill not in {s.skill_id for s in agent.skills.all()}:
            return {}, f"This agent has no skill {skill!r}."
        message["metadata"] = {"skillId": skill}
    return {"message": message}, ""


@login_required
@require_POST
async def chat_cancel(request: HttpRequest, slug: str) -> JsonResponse:
    user, agent = await enabled_chat_agent(request, slug)
    method = find_method("CancelTask", V1)
    try:
        call = await page_call(request, agent, session_of(user), sending=False)
        params = parse_params(method, {"id": request.POST.get("taskId", "")}, V1)
        task = await resolve(method.handler)(call, params)
    except Exception as exc:
        return refusal(exc)
    events = PageEvents(reverse("developers:chat-file", kwargs={"slug": agent.slug}))
    return JsonResponse({"ok": True, "task": events.task(to_json(task))})


def refusal(exc: Exception) -> JsonResponse:
    """What a page call that failed answers: the A2A error (a limit's, with its status), or
    an internal error that names its reference."""
    if isinstance(exc, LimitExceeded):
        return JsonResponse({"ok": False, "error": error_object(exc.error, V1)}, status=exc.status)
    error = exc if isinstance(exc, A2AError) else internal_error(exc)
    body = {"ok": False, "error": error_object(error, V1)}
    return JsonResponse(body, status=REFUSAL_STATUS.get(type(error), 400))


# -- files ----------------------------------------------------------------------------------


@login_required
@require_GET
def chat_file(request: HttpRequest, slug: str) -> HttpResponse:
    """The bytes of one file part (`?task=&artifact=` or `&message=`, `&part=`) of the user's
    task, never rendered or run by the browser (`tasks.stored_files`): an agent chooses the
    bytes and the media type, and this is the hub's own origin."""
    agent = chat_agent(request.user, slug)
    return part_file(users_task(request.user, agent, request.GET.get("task", "")), request.GET)


def part_file(task: Task | None, query: Any) -> HttpResponse:
    """The file part of `task` that the query names, as the hub serves every stored file
    (`tasks.stored_files`), never cached; 404 when there is no such task or file part."""
    part = stored_part(task, query) if task is not None else None
    data = file_bytes(part) if part is not None else None
    if part is None or data is None:
        raise Http404("No such file.")
    # The name only: an agent's "../" or folders mean nothing on the user's disk.
    filename = re.split(r"[\\/]", str(part.get("filename", "")))[-1] or "file"
    response = stored_files.file_response(data, filename)
    response["Cache-Control"] = "private, no-store"
    return response


def file_bytes(part: dict[str, Any]) -> bytes | None:
    try:
        return base64.b64decode(part["raw"], validate=True) if "raw" in part else None
    except (binascii.Error, TypeError, ValueError):
        return None


def stored_part(task: Task, query: Any) -> dict[str, Any] | None:
    index = numerals.whole_number(query.get("part", ""))
    if index is None:
        return None
    row: Artifact | Message | None = None
    if "artifact" in query:
        row = Artifact.objects.filter(task=task, artifact_id=query["artifact"]).first()
    elif "message" in query:
        row = Message.objects.filter(task=task, message_id=query["message"]).first()
    parts = row.parts if row is not None else []
    part = parts[index] if index < len(parts) else None
    return part if isinstance(part, dict) else None
