"""What a live task page refreshes besides its timeline: the heading, the summary line (state,
total duration, progress), the fields that move, and the Messages and Artifacts tables, each
drawn as the admin's first load draws it, so the page stays true to the end of the task."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.template.loader import render_to_string
from django.utils import timezone

from console import rows
from tasks.admin import ArtifactInline, MessageInline, TaskAdmin, status_progress
from tasks.models import Artifact, Message, Task

# The task's fields a turn changes (the others are set once, when it is made).
MOVING_FIELDS = ("state", "status_timestamp", "status_text", "runner", "heartbeat_at",
                 "last_sequence", "last_error", "updated_at")  # fmt: skip
MESSAGE_BATCH = 200
ARTIFACT_CAP = 100


def task_view(task_id: str, messages_after: int, artifacts: bool = True) -> dict[str, Any] | None:
    """The page's parts as they are now: messages after position `messages_after` only (a
    page keeps those it has), the artifacts if asked. None when the task is gone."""
    task = Task.objects.filter(pk=task_id).select_related("agent").first()
    if task is None:
        return None
    task_admin = admin.site._registry.get(Task) or TaskAdmin(Task, admin.site)
    return {
        "type": "task",
        "title": str(task),
        "state": task.state,
        "finished": task.is_terminal,
        "summary": summary_html(task),
        "fields": {name: rows.cell(task, name, task_admin) for name in MOVING_FIELDS},
        "messages": message_rows(task, messages_after),
        "artifacts": artifact_rows(task) if artifacts else [],
    }


def summary_html(task: Task) -> str:
    return render_to_string("console/task_summary.html", summary_context(task))


def summary_context(task: Task) -> dict[str, Any]:
    """What the line over the task's fields says: its state, how long it ran or has run, and
    its progress when its agent reported numbers."""
    end = task.updated_at if task.is_terminal else timezone.now()
    return {
        "task": task,
        "finished": task.is_terminal,
        "seconds": (end - task.created_at).total_seconds(),
        "progress": status_progress({"message": task.status_message or {}}),
    }


def message_rows(task: Task, after: int) -> list[dict[str, Any]]:
    found = Message.objects.filter(task=task, position__gt=after).order_by("position")
    inline = MessageInline(Task, admin.site)
    return [inline_row(message, inline) for message in found[:MESSAGE_BATCH]]


def artifact_rows(task: Task) -> list[dict[str, Any]]:
    # All of them: an artifact grows in place when chunks are appended to it.
    found = Artifact.objects.filter(task=task).order_by("position")
    inline = ArtifactInline(Task, admin.site)
    return [inline_row(artifact, inline) for artifact in found[:ARTIFACT_CAP]]


def inline_row(row: Message | Artifact, inline: Any) -> dict[str, Any]:
    cells = {name: rows.cell(row, name, inline) for name in inline.fields}
    return {"position": row.position, "cells": cells}
