"""One task on the developer pages: its conversation, artifacts, status and error, kept live.

The page (`task_detail.html`) renders the task's body once; while the task is submitted or
working, `static/developers/task.js` asks `task_body` for it again every second and swaps it
in, and stops by itself once the task has stopped moving. The agent's owner and staff see
every task on the agent; any other user who may call it sees only their own tasks, and
another's task answers exactly as an unknown one (404).
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from agents.models import Agent
from agents.principals import session_of
from developers.access import User, may_call, users_task
from developers.callers import name_caller
from developers.chat import part_file
from tasks.models import ACTIVE_STATES, Task, TaskState
from tasks.stored_files import SHOWN_IMAGE_TYPES


def callable_agent(user: User, slug: str) -> Agent:
    """The agent, when the user owns it, runs the hub (staff see every agent's page and
    tasks, as in the admin) or may call it; else 404, as if there were none. Calling it is
    still `may_call`'s to say."""
    agent = Agent.objects.filter(slug=slug).first()
    if agent is None or not (sees_every_task(user, agent) or may_call(user, agent)):
        raise Http404("No such agent.")
    return agent


def sees_every_task(user: User, agent: Agent) -> bool:
    if not user.is_authenticated:
        return False  # (an agent without an owner is not an anonymous visitor's)
    return bool(getattr(user, "is_staff", False)) or agent.owner_id == user.pk


def visible_tasks(user: User, agent: Agent) -> QuerySet[Task]:
    tasks = Task.objects.filter(agent=agent)
    if sees_every_task(user, agent):
        return tasks
    return tasks.filter(owner=session_of(user).id)


def visible_task(user: User, agent: Agent, task_id: str) -> Task:
    if sees_every_task(user, agent):
        task = visible_tasks(user, agent).filter(id=task_id).first()
    else:
        task = users_task(user, agent, task_id)
    if task is None:
        raise Http404("No such task.")
    return task


@login_required
@require_GET
def task_detail(request: HttpRequest, slug: str, task_id: uuid.UUID) -> HttpResponse:
    agent = callable_agent(request.user, slug)
    task = visible_task(request.user, agent, str(task_id))
    context = body_context(agent, name_caller(task)) | {
        "body_url": reverse("developers:task-body", kwargs={"slug": slug, "task_id": task.id}),
    }
    return render(request, "developers/task_detail.html", context)


@never_cache
@login_required
@require_GET
def task_body(request: HttpRequest, slug: str, task_id: uuid.UUID) -> JsonResponse:
    """The page's live part, rendered again, and whether it can still change by itself."""
    agent = callable_agent(request.user, slug)
    task = visible_task(request.user, agent, str(task_id))
    html = render_to_string("developers/task_body.html", body_context(agent, task), request)
    return JsonResponse({"state": task.state, "moving": is_moving(task), "html": html})


@login_required
@require_GET
def task_file(request: HttpRequest, slug: str, task_id: uuid.UUID) -> HttpResponse:
    """The bytes of one file part (`?artifact=` or `?message=`, `&part=`) of a task the user
    sees, served as the chat console serves them: an attachment, never run by the browser."""
    agent = callable_agent(request.user, slug)
    return part_file(visible_task(request.user, agent, str(task_id)), request.GET)


def is_moving(task: Task) -> bool:
    """Submitted or working: the agent will change it without anyone's word."""
    return task.state in ACTIVE_STATES


def body_context(agent: Agent, task: Task) -> dict[str, Any]:
    file_url = reverse("developers:task-file", kwargs={"slug": agent.slug, "task_id": task.id})
    messages = [
        {"role": m.role, "created_at": m.created_at,
         "parts": shown_parts(m.parts, file_url, {"message": m.message_id})}
        for m in task.messages.order_by("position", "id")
    ]  # fmt: skip
    artifacts = [
        {"name": a.name or a.artifact_id, "description": a.description,
         "parts": shown_parts(a.parts, file_url, {"artifact": a.artifact_id})}
        for a in task.artifacts.order_by("position", "id")
    ]  # fmt: skip
    status = (task.status_message or {}).get("parts") or []
    return {
        "agent": agent,
        "task": task,
        "moving": is_moving(task),
        "failed": task.state in (TaskState.FAILED, TaskState.REJECTED),
        "conversation": messages,
        "artifacts": artifacts,
        "status_parts": shown_parts(status, "", {}),
    }


def shown_parts(parts: Any, file_url: str, where: dict[str, str]) -> list[dict[str, Any]]:
    shown = []
    for index, part in enumerate(parts if isinstance(parts, list) else []):
        if isinstance(part, dict):
            shown.append(shown_part(part, file_url, where | {"part": str(index)}))
    return shown


def shown_part(part: dict[str, Any], file_url: str, where: dict[str, str]) -> dict[str, Any]:
    """One part as the page shows it: text, data as indented JSON, or a file as a link."""
    if "text" in part:
        return {"kind": "text", "text": str(part["text"])}
    if "data" in part:
        return {"kind": "data", "json": json.dumps(part["data"], indent=2, ensure_ascii=False)}
    media_type = str(part.get("mediaType", "")).lower()
    name = str(part.get("filename") or "file")
    href = ""
    if "raw" in part and file_url:
        href = f"{file_url}?{urlencode(where)}"  # the hub's own route, which checks the task
    elif str(part.get("url", "")).startswith(("https://", "http://")):
        href = str(part["url"])  # the agent's link, shown as one, never loaded by the page
    image = bool(href) and "raw" in part and media_type in SHOWN_IMAGE_TYPES
    return {"kind": "file", "name": name, "media_type": media_type, "href": href, "image": image}
