"""The rows the live pages add or refresh, read and drawn as the admin draws them: a task's
timeline events (the task admin's inline) and the task list's rows (its `list_display`),
each cell as the admin would show it. Every read is a bounded range of an index."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import display_for_field, display_for_value, lookup_field
from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.html import conditional_escape

from a2ahub import when
from console.rollup import finished_between
from tasks.admin import event_progress, state_name, summarize_event
from tasks.models import OPEN_STATES, Task, TaskEvent, TaskState

EVENT_BATCH = 200
ARTIFACT_UPDATE = dict(TaskEvent.KINDS)["artifact"]  # an event row's kind, as it is shown
CHANGED_CAP = 100  # tasks a look finds of each kind
LOOKUP_CAP = 1_000  # changed task ids looked up at once


# -- a task's timeline -------------------------------------------------------------------------


def events_after(task_id: str, after: int) -> list[dict[str, Any]]:
    """The task's events numbered after `after`, at most EVENT_BATCH, oldest first: a range
    of the unique index on (task, sequence)."""
    found = TaskEvent.objects.filter(task_id=task_id, sequence__gt=after).order_by("sequence")
    return [event_row(event) for event in found[:EVENT_BATCH]]


def event_row(event: TaskEvent) -> dict[str, Any]:
    """An event as the timeline's row shows it, and the task's state after it."""
    progress = event_progress(event)
    return {
        "sequence": event.sequence,
        "kind": event.get_kind_display(),
        "created_at": when.absolute(event.created_at),
        "at": event.created_at.isoformat(),
        "summary": summarize_event(event),
        "state": state_after(event.payload or {}),
        "progress": list(progress) if progress else None,
    }


def touches_artifacts(batch: list[dict[str, Any]]) -> bool:
    """Whether these event rows change the task's artifacts."""
    return any(event["kind"] == ARTIFACT_UPDATE for event in batch)


def state_after(payload: dict[str, Any]) -> str:
    """The state label an event leaves its task in ("" for an artifact)."""
    task, update = payload.get("task") or {}, payload.get("statusUpdate") or {}
    status = task.get("status") or update.get("status")
    if not status:
        return ""
    name = state_name(status)
    try:
        return str(TaskState(name).label)
    except ValueError:
        return name


# -- the task list ----------------------------------------------------------------------------


def task_rows(task_ids: list[str], most: int) -> tuple[list[dict[str, Any]], int]:
    """The list's rows of the first `most` of these tasks that exist, oldest first (a page
    adds each on top, so the newest ends first), and how many more of them exist: lookups by
    primary key, LOOKUP_CAP at most. (Another hub on the same Redis may name tasks that are
    not this hub's.)"""
    known = list(Task.objects.filter(pk__in=task_ids[:LOOKUP_CAP]).values_list("pk", flat=True))
    found = Task.objects.filter(pk__in=known[:most]).select_related("agent")
    tasks = sorted(found, key=lambda t: t.created_at)
    model_admin = admin.site._registry.get(Task)
    return [task_row(task, model_admin) for task in tasks], max(0, len(known) - most)


def task_row(task: Task, model_admin: Any) -> dict[str, Any]:
    names = list(model_admin.list_display) if model_admin is not None else ["id", "state"]
    return {
        "id": str(task.pk),
        "url": reverse("admin:tasks_task_change", args=[task.pk]),
        "state": task.state,
        "cells": {name: cell(task, name, model_admin) for name in names if isinstance(name, str)},
    }


def cell(row: models.Model, name: str, model_admin: Any) -> str:
    """A cell's HTML, as the admin renders it in a list or an inline (escaped, but for the
    HTML a display method makes)."""
    try:
        field, attr, value = lookup_field(name, row, model_admin)
    except (AttributeError, ObjectDoesNotExist):
        return when.EMPTY
    if field is not None and not isinstance(field, models.ForeignKey):
        shown = display_for_field(value, field, when.EMPTY)
    else:
        shown = display_for_value(value, when.EMPTY, boolean=getattr(attr, "boolean", False))
    return str(conditional_escape(shown))


def changed_since(since: datetime) -> list[str]:
    """Tasks written since `since`: the newest finished ones from their partial index, open
    ones from the (state, ...) index; at most CHANGED_CAP of each."""
    finished = finished_between(since, timezone.now() + timedelta(minutes=1))
    finished = finished.order_by("-updated_at")
    moving = Task.objects.filter(state__in=sorted(OPEN_STATES), updated_at__gte=since).order_by()
    ids = list(finished.values_list("pk", flat=True)[:CHANGED_CAP])
    ids += list(moving.values_list("pk", flat=True)[:CHANGED_CAP])
    return [str(pk) for pk in ids]
