"""The operator's console for tasks: filters (stuck ones too), a read-only timeline of events,
messages and artifacts, file downloads, cancel, which goes through `tasks.writer`, and what
retention will prune. The list stays fast with millions of tasks: it counts no further than
10,000, and every filter and search it offers has an index (`Task.Meta.indexes`)."""

from __future__ import annotations

import base64
import binascii
import json
import re
import unicodedata
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from a2ahub import tracing, when
from agents import kinds
from tasks import changes, retention, stored_files, writer
from tasks.admin_lists import BigListAdmin, ProtocolVersionFilter, id_prefix_range
from tasks.models import ACTIVE_STATES, TERMINAL_STATES, Artifact, Message, Task, TaskEvent
from tasks.updater import PROGRESS_KEY

STUCK_MINUTES = (5, 30, 120)
TEXT_PREVIEW = 200


# Parts, in their stored 1.0 JSON form, as the operator reads them.


def part_kind(part: dict[str, Any]) -> str:
    return next((k for k in ("text", "raw", "url", "data") if k in part), "empty")


def shorten(text: str, limit: int = TEXT_PREVIEW) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def raw_size(encoded: str) -> int:
    return len(encoded.rstrip("=")) * 3 // 4


def summarize_part(part: dict[str, Any]) -> str:
    """One line of plain text per part, for event summaries."""
    kind = part_kind(part)
    if kind == "text":
        return shorten(str(part["text"]), 80)
    name = part.get("filename") or "unnamed"
    media = part.get("mediaType") or "no media type"
    if kind == "raw":
        return f"file {name} ({media}, {raw_size(str(part['raw']))} bytes)"
    if kind == "url":
        return f"link {part['url']} ({media})"
    if kind == "data":
        return "data " + shorten(json.dumps(part["data"], ensure_ascii=False), 80)
    return "empty part"


def summarize_parts(parts: Iterable[dict[str, Any]]) -> str:
    return " | ".join(summarize_part(p) for p in parts)


def render_part(part: dict[str, Any], download_url: str) -> SafeString:
    kind = part_kind(part)
    if kind == "raw":
        return format_html(
            '<a href="{}" download>⤓ {}</a> ({}, {} bytes)',
            download_url, safe_filename(str(part.get("filename") or ""), "unnamed file"),
            part.get("mediaType") or "no media type", raw_size(str(part["raw"])),
        )  # fmt: skip
    if kind == "url":
        url = str(part["url"])
        if not url.lower().startswith(("http://", "https://")):
            return format_html("link (not http): <code>{}</code>", url)
        label = part.get("filename") or url
        return format_html('<a href="{}" rel="noreferrer noopener">{}</a>', url, label)
    if kind == "data":
        return format_html("<code>{}</code>", shorten(json.dumps(part["data"]), 400))
    return format_html("{}", shorten(str(part.get("text", "")), 2000))


def render_parts(row: Message | Artifact, source: str) -> SafeString:
    items = [
        (render_part(part, download_url(row, source, index)),)
        for index, part in enumerate(row.parts or [])
    ]
    return format_html_join("", "<div>{}</div>", items) if items else format_html("—")


def download_url(row: Message | Artifact, source: str, index: int) -> str:
    return reverse("admin:tasks_task_file", args=[row.task_id, source, row.pk, index])


# Events: the payload is a 1.0 StreamResponse; the timeline needs one readable line.


def state_name(status: dict[str, Any]) -> str:
    return str(status.get("state", "?")).removeprefix("TASK_STATE_").lower().replace("_", "-")


def summarize_status(status: dict[str, Any]) -> str:
    text = f"→ {state_name(status)}"
    parts = (status.get("message") or {}).get("parts") or []
    return f"{text}: {summarize_parts(parts)}" if parts else text


def status_progress(status: dict[str, Any]) -> tuple[float, float] | None:
    """The (done, total) an agent reported with a status (`TaskUpdater.report_progress`)."""
    metadata = (status.get("message") or {}).get("metadata") or {}
    progress = metadata.get(PROGRESS_KEY)
    if not isinstance(progress, dict):
        return None
    done, total = progress.get("done"), progress.get("total")
    numbers = (int, float)
    if not isinstance(done, numbers) or not isinstance(total, numbers) or total <= 0:
        return None
    return float(min(max(done, 0), total)), float(total)


def event_progress(event: TaskEvent) -> tuple[float, float] | None:
    update = (event.payload or {}).get("statusUpdate") or {}
    return status_progress(update.get("status") or {})


def progress_bar(progress: tuple[float, float] | None) -> SafeString:
    if progress is None:
        return SafeString("")
    done, total = progress
    return format_html(
        '<progress class="hub-progress" value="{}" max="{}" title="{} of {}"></progress>',
        f"{done:g}", f"{total:g}", f"{done:g}", f"{total:g}",
    )  # fmt: skip


def summarize_event(event: TaskEvent) -> str:
    payload = event.payload or {}
    if "task" in payload:
        task = payload["task"]
        history = task.get("history") or []
        first = summarize_parts(history[0].get("parts") or []) if history else ""
        return f"created {summarize_status(task.get('status') or {})}; first message: {first}"
    if "statusUpdate" in payload:
        return summarize_status(payload["statusUpdate"].get("status") or {})
    if "artifactUpdate" in payload:
        return summarize_artifact_update(payload["artifactUpdate"])
    return shorten(json.dumps(payload))


def summarize_artifact_update(update: dict[str, Any]) -> str:
    artifact = update.get("artifact") or {}
    label = artifact.get("name") or artifact.get("artifactId") or "?"
    flags = [f for f, key in (("append", "append"), ("last chunk", "lastChunk")) if update.get(key)]
    extra = f" [{', '.join(flags)}]" if flags else ""
    return f"artifact {label}{extra}: {summarize_parts(artifact.get('parts') or [])}"


# The timeline: read-only inlines.


class NoAdding:
    """Rows the hub makes itself: none is added here."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnly(NoAdding):
    """Rows shown as a record: nothing is added, changed or deleted here (a task changes
    through the writer alone)."""

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(ReadOnly, admin.TabularInline):
    extra = 0
    can_delete = False


class TaskEventInline(ReadOnlyInline):
    """The timeline. Each row carries what the page's script needs to show durations and
    fold runs of progress reports into one row (static/console/live.js)."""

    model = TaskEvent
    verbose_name_plural = "timeline (events)"
    readonly_fields = ("sequence", "kind", "at", "summary")
    fields = readonly_fields
    ordering = ["sequence"]

    @admin.display(description="when")
    def at(self, event: TaskEvent) -> SafeString:
        """The event's time to the second; the script adds the time since the event before."""
        moment = event.created_at
        stamp = when.absolute(moment)
        return format_html('<time datetime="{}" title="{} UTC">{}</time>', moment.isoformat(),
                           stamp, stamp)  # fmt: skip

    @admin.display(description="what happened")
    def summary(self, event: TaskEvent) -> SafeString:
        text, progress = summarize_event(event), event_progress(event)
        if progress is None:
            return format_html('<span class="console-summary">{}</span>', text)
        return format_html(
            '<span class="console-summary" data-done="{}" data-total="{}">{}</span>',
            f"{progress[0]:g}", f"{progress[1]:g}", text,
        )  # fmt: skip


class MessageInline(ReadOnlyInline):
    model = Message
    readonly_fields = ("position", "role", "message_id", "created_at", "content")
    fields = readonly_fields
    ordering = ["position"]

    @admin.display(description="text and files")
    def content(self, message: Message) -> SafeString:
        return render_parts(message, "message")


class ArtifactInline(ReadOnlyInline):
    model = Artifact
    readonly_fields = ("position", "name", "artifact_id", "updated_at", "content")
    fields = readonly_fields
    ordering = ["position"]

    @admin.display(description="parts")
    def content(self, artifact: Artifact) -> SafeString:
        return render_parts(artifact, "artifact")


# The changelist.


class StuckFilter(admin.SimpleListFilter):
    """Open tasks in submitted or working whose status has not moved for a while."""

    title = "stuck"
    parameter_name = "stuck"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(str(m), f"no progress for over {m} minutes") for m in STUCK_MINUTES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Task]) -> QuerySet[Task]:
        value = self.value()
        if value not in {str(m) for m in STUCK_MINUTES}:
            return queryset
        since = timezone.now() - timedelta(minutes=int(str(value)))
        return queryset.filter(state__in=ACTIVE_STATES, status_timestamp__lt=since)


SEARCH_HELP = (
    "Finds a task by its id or the id's first characters (the list shows eight), by its "
    "context id or that id's beginning, by the id a pre-0.2 client gave it or that id's "
    "beginning, or by its owner, written exactly (apikey:12, user:3, anonymous)."
)


def search_matches(term: str) -> Q:
    """What the search box finds: exact values and beginnings, each served by an index, never
    a substring anywhere in every row."""
    found = Q(owner=term) | Q(context_id__startswith=term)
    # The partial index holds only the tasks that have a client's id.
    found |= Q(client_id__startswith=term) & ~Q(client_id="")
    ids = id_prefix_range(term)
    if ids is not None:
        found |= Q(id__range=ids)
    return found


@admin.register(Task)
class TaskAdmin(ReadOnly, BigListAdmin):
    list_display = [
        "short_id", "agent", "state", "owner", "protocol_version", "binding", "execution",
        "created_at", "status_moved",
    ]  # fmt: skip
    list_filter = [
        "agent", "state", ProtocolVersionFilter, "binding", StuckFilter,
        ("created_at", admin.DateFieldListFilter),
    ]  # fmt: skip
    list_select_related = ["agent"]
    # Newest first is the one order an index keeps for every task.
    sortable_by = ["created_at"]
    # The search box is shown for this; what it finds is `search_matches`. A pre-0.2 client
    # knows its task by the id it chose: support may be asked about that one.
    search_fields = ["id"]
    search_help_text = SEARCH_HELP
    actions = ["cancel_tasks"]
    inlines = [TaskEventInline, MessageInline, ArtifactInline]
    fieldsets = [
        (None, {"fields": ["id", "client_id", "agent", "owner", "context_id", "state",
                           "status_timestamp", "status_text"]}),
        ("Execution", {"fields": ["protocol_version", "binding", "execution", "runner",
                                  "heartbeat_at", "last_sequence", "last_error"]}),
        ("Metadata", {"fields": ["metadata", "created_at", "updated_at", "trace"]}),
    ]  # fmt: skip
    readonly_fields = ["status_text", "execution", "trace"]

    # State changes only through the writer (`ReadOnly`): the admin shows tasks and cancels them.
    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("tasks.change_task")

    @admin.display(description="task", ordering="id")
    def short_id(self, task: Task) -> str:
        return str(task.id)[:8]

    @admin.display(description="status message")
    def status_text(self, task: Task) -> SafeString:
        """The task's status message, with a progress bar when its agent reported numbers."""
        message = task.status_message or {}
        text = summarize_parts(message.get("parts") or []) or when.EMPTY
        bar = progress_bar(status_progress({"message": message}))
        return format_html('{} <span class="console-status-text">{}</span>', bar, text)

    @admin.display(description="execution mode", ordering="execution_mode")
    def execution(self, task: Task) -> str:
        """How the task runs, true to the way this hub runs (`agents.kinds.mode_label`)."""
        return kinds.mode_label(task.execution_mode, task.get_execution_mode_display())

    @admin.display(description="trace")
    def trace(self, task: Task) -> SafeString | str:
        """The trace id of the call that made the task, linked to the trace viewer when
        TRACE_URL_TEMPLATE names one ("-" for a task made while tracing was off)."""
        trace_id = tracing.trace_id_of(task.traceparent)
        if not trace_id:
            return "-"
        template = settings.TRACE_URL_TEMPLATE
        if not template:
            return trace_id
        return format_html('<a href="{}" rel="noreferrer">{}</a>',
                           template.replace("{trace_id}", trace_id), trace_id)  # fmt: skip

    @admin.display(description="status changed", ordering="status_timestamp")
    def status_moved(self, task: Task) -> SafeString:
        return when.time_html(task.status_timestamp)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Task], search_term: str
    ) -> tuple[QuerySet[Task], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(search_matches(term)), False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Under the title: how many finished tasks the next pruning run deletes.
        context = {"subtitle": retention.tasks_pending_text()} | (extra_context or {})
        return super().changelist_view(request, extra_context=context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        task = self.get_object(request, object_id)
        can_cancel = task is not None and not task.is_terminal
        context["can_cancel"] = can_cancel and self.has_cancel_permission(request)
        return super().change_view(request, object_id, form_url, extra_context=context)

    @admin.action(description="Cancel selected tasks", permissions=["cancel"])
    def cancel_tasks(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        canceled, refused = cancel_all(queryset, operator_reason(request))
        if canceled:
            self.message_user(request, f"{len(canceled)} task(s) canceled.", messages.SUCCESS)
        if refused:
            self.message_user(request, refusal_text(refused), messages.WARNING)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/cancel/", view(self.cancel_view), name="tasks_task_cancel"),
            path(
                "<path:object_id>/file/<str:source>/<int:row>/<int:index>/",
                view(self.file_view),
                name="tasks_task_file",
            ),
            *super().get_urls(),
        ]

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return require_POST(self._cancel_one)(request, object_id)

    def _cancel_one(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_cancel_permission(request):
            raise PermissionDenied
        task = self.get_object(request, object_id)
        if task is None:
            raise Http404("No such task.")
        canceled, refused = cancel_all([task], operator_reason(request))
        if canceled:
            self.message_user(request, "The task was canceled.", messages.SUCCESS)
        else:
            self.message_user(request, refusal_text(refused), messages.WARNING)
        return HttpResponseRedirect(reverse("admin:tasks_task_change", args=[task.pk]))

    def file_view(
        self, request: HttpRequest, object_id: str, source: str, row: int, index: int
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        parts = stored_parts(source, row, object_id)
        if not 0 <= index < len(parts) or part_kind(parts[index]) != "raw":
            raise Http404("No such file.")
        return file_response(parts[index], f"part-{index}")


def stored_parts(source: str, row: int, task_id: str) -> list[dict[str, Any]]:
    if source == "message":
        return get_object_or_404(Message, pk=row, task_id=task_id).parts or []
    if source == "artifact":
        return get_object_or_404(Artifact, pk=row, task_id=task_id).parts or []
    raise Http404("No such file.")


# Cancel: the writer stores it and stops the turn, wherever it runs.


def operator_reason(request: HttpRequest) -> str:
    return f"Canceled by the operator {request.user.get_username()}."


def cancel_all(tasks: Iterable[Task], reason: str) -> tuple[list[Task], list[Task]]:
    canceled: list[Task] = []
    refused: list[Task] = []
    for task in tasks:
        if task.state in TERMINAL_STATES:
            refused.append(task)
            continue
        try:
            async_to_sync(writer.cancel)(task.id, task.owner, reason)
        except changes.TransitionRefused:
            task.refresh_from_db(fields=["state"])  # it finished meanwhile
            refused.append(task)
            continue
        canceled.append(task)
    return canceled, refused


def refusal_text(refused: list[Task]) -> str:
    listed = ", ".join(f"{task.id} ({task.state})" for task in refused[:10])
    more = f" and {len(refused) - 10} more" if len(refused) > 10 else ""
    return f"{len(refused)} task(s) not cancelable, already finished: {listed}{more}."


# Downloads: the stored bytes, never rendered or run on the admin's origin
# (`tasks.stored_files`).


def file_response(part: dict[str, Any], fallback: str) -> HttpResponse:
    try:
        content = decode_raw(str(part["raw"]))
    except (binascii.Error, ValueError):
        raise Http404("The stored file is not valid base64.") from None
    name = safe_filename(str(part.get("filename") or ""), fallback)
    return stored_files.file_response(content, name)


def decode_raw(encoded: str) -> bytes:
    # The JSON mapping writes standard base64; clients may have sent the URL-safe alphabet.
    normalized = encoded.strip().replace("-", "+").replace("_", "/")
    return base64.b64decode(normalized + "=" * (-len(normalized) % 4), validate=True)


def safe_filename(name: str, fallback: str) -> str:
    """The last path segment, without control characters, quotes or separators."""
    name = re.split(r"[\\/]", name)[-1]
    name = "".join(c for c in name if unicodedata.category(c)[0] != "C" and c not in '"<>:|?*')
    name = name.strip().strip(".")
    return name[:150] or fallback
