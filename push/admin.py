"""The operator's console for push: configs (secrets masked), deliveries with every attempt and
what retention will prune, replay and test deliveries, and the built-in webhook inbox. The
lists count no further than 10,000, keep an order an index keeps, and search exact ids or
their beginnings, so they stay fast with millions of deliveries."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db import transaction
from django.db.models import CharField, Count, Q, QuerySet, Value
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from a2ahub.admin_columns import shorten, shortened
from agents.views import public_base_url
from push import engine
from push.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryState,
    InboxMessage,
    PushNotificationConfig,
    WebhookInbox,
)
from push.retention import deliveries_pending_text
from tasks.admin import NoAdding, ReadOnlyInline
from tasks.admin_lists import BigListAdmin, ProtocolVersionFilter, id_prefix_range

CONFIG_FIELDS = (
    "task",
    "config_id",
    "url",
    "protocol_version",
    "secrets",
    "active",
    "disabled_reason",
    "last_error",
    "lease_until",
    "created_at",
    "updated_at",
)

ATTEMPT_FIELDS = (
    "started_at",
    "duration_ms",
    "status_code",
    "error",
    "response_excerpt",
)

DELIVERY_FIELDS = (
    "id",
    "config",
    "event",
    "sequence",
    "state",
    "attempts",
    "next_attempt_at",
    "delivered_at",
    "last_error",
    "test",
    "created_at",
)

INBOX_MESSAGE_FIELDS = (
    "received_at",
    "delivery_id",
    "content_type",
    "signature_valid",
    "signature_error",
    "token_header",
    "body",
)


class HealthFilter(admin.SimpleListFilter):
    title = "health"
    parameter_name = "health"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("failing", "failing (deliveries waiting on retries)"), ("disabled", "disabled")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "disabled":
            return queryset.filter(active=False)
        if self.value() == "failing":
            # From the few pending deliveries (an index) to their configs, not the other way.
            retrying = Delivery.objects.filter(state=DeliveryState.PENDING, attempts__gt=0)
            return queryset.filter(active=True, pk__in=retrying.values("config_id"))
        return queryset


def delivery_counts(config_ids: list[int]) -> dict[int, tuple[int, int]]:
    """Pending and delivered deliveries of each config, in one query (the queue's index)."""
    rows = (
        Delivery.objects.filter(config_id__in=config_ids)
        .values("config_id")
        .annotate(
            pending=Count("pk", filter=Q(state=DeliveryState.PENDING)),
            delivered=Count("pk", filter=Q(state=DeliveryState.DELIVERED)),
        )
        .order_by()
    )
    return {row["config_id"]: (row["pending"], row["delivered"]) for row in rows}


class ConfigChangeList(ChangeList):
    """Counts deliveries for the configs of the page shown only: counted for every config
    before paging, they cost a pass over every delivery."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        counts = delivery_counts([config.pk for config in self.result_list])
        for config in self.result_list:
            config._pending, config._delivered = counts.get(config.pk, (0, 0))


@admin.register(PushNotificationConfig)
class PushNotificationConfigAdmin(NoAdding, BigListAdmin):
    # Long ids, URLs and errors are cut to one line (whole on hover): the list fits 1280 px.
    list_display = [
        shorten("config_id", "config id"), shorten("task_id", "task"), shorten("url", "URL"),
        "protocol_version", "active", "pending", "delivered", shorten("last_error"), "updated_at",
    ]  # fmt: skip
    list_filter = [HealthFilter, "active", ProtocolVersionFilter]
    # Newest first, the primary key's order; no other column has an index to sort by.
    ordering = ["-id"]
    sortable_by = ()
    # The search box is shown for this; what it finds is `get_search_results`.
    search_fields = ["task__id"]
    search_help_text = "Finds the configs of a task, by the task's id or its first characters."
    readonly_fields = CONFIG_FIELDS
    fields = CONFIG_FIELDS
    actions = ["send_test_delivery", "enable_configs"]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return ConfigChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        if not search_term.strip():
            return queryset, False
        tasks = id_prefix_range(search_term.strip())
        return (queryset.none() if tasks is None else queryset.filter(task__id__range=tasks)), False

    @admin.display(description="pending")
    def pending(self, config: PushNotificationConfig) -> int:
        return getattr(config, "_pending", 0)

    @admin.display(description="delivered")
    def delivered(self, config: PushNotificationConfig) -> int:
        return getattr(config, "_delivered", 0)

    @admin.display(description="secrets")
    def secrets(self, config: PushNotificationConfig) -> str:
        parts = []
        if config.token:
            parts.append("notification token set")
        if config.auth_scheme:
            parts.append(f"{config.auth_scheme} credentials set")
        return ", ".join(parts) or "none"

    @admin.action(description="Send a test delivery (the latest event, no retries)")
    def send_test_delivery(self, request: HttpRequest, queryset: QuerySet) -> None:
        sent = 0
        for config in queryset:
            event = config.task.events.order_by("-sequence").first()
            if event is None:
                continue
            Delivery.objects.create(config=config, event=event, sequence=event.sequence,
                                    next_attempt_at=timezone.now(), test=True)  # fmt: skip
            sent += 1
        if sent:
            transaction.on_commit(engine.wake)
        self.message_user(request, f"{sent} test deliveries queued.", messages.SUCCESS)

    @admin.action(description="Enable the selected configs again")
    def enable_configs(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.update(active=True, disabled_reason="")
        self.message_user(request, f"{count} config(s) enabled.", messages.SUCCESS)


class AttemptInline(ReadOnlyInline):
    model = DeliveryAttempt
    readonly_fields = ATTEMPT_FIELDS
    fields = ATTEMPT_FIELDS


@admin.register(Delivery)
class DeliveryAdmin(NoAdding, BigListAdmin):
    # Ids and errors on one line each (whole on hover), so "last error" stays on screen.
    list_display = [
        shorten("id", "id", code=True), shorten("config"), "sequence", "state", "attempts",
        "next_attempt_at", "delivered_at", shorten("last_error"),
    ]  # fmt: skip
    list_filter = ["state", "test"]
    list_select_related = ["config"]
    # Pending first, then the others, each latest due first: the order of the `delivery_due`
    # index, so a page is read from it rather than sorted out of every delivery.
    ordering = ["-state", "-next_attempt_at"]
    sortable_by = ()
    # The search box is shown for this; what it finds is `get_search_results`.
    search_fields = ["id"]
    search_help_text = (
        "Finds the deliveries of a task, by the task's id or its first characters, or one "
        "delivery by its whole id (the webhook-id header)."
    )
    readonly_fields = DELIVERY_FIELDS
    fields = DELIVERY_FIELDS
    inlines = [AttemptInline]
    actions = ["replay"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        if not search_term.strip():
            return queryset, False
        ids = id_prefix_range(search_term.strip())
        if ids is None:
            return queryset.none(), False
        # A whole id may be a delivery's. Asked apart: an OR across the join to the configs
        # would read every delivery.
        if ids[0] == ids[1] and queryset.filter(pk=ids[0]).exists():
            return queryset.filter(pk=ids[0]), False
        return queryset.filter(config__task__id__range=ids), False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Under the title: how many finished deliveries the next pruning run deletes.
        context = {"subtitle": deliveries_pending_text()} | (extra_context or {})
        return super().changelist_view(request, extra_context=context)

    @admin.action(description="Replay (deliver these events again)")
    def replay(self, request: HttpRequest, queryset: QuerySet) -> None:
        configs = set()
        for item in queryset.select_related("config"):
            Delivery.objects.create(
                config=item.config, event_id=item.event_id, sequence=item.sequence,
                next_attempt_at=timezone.now(),
            )  # fmt: skip
            configs.add(item.config_id)
        if configs:
            transaction.on_commit(engine.wake)
        self.message_user(request, f"{queryset.count()} deliveries queued again.", messages.SUCCESS)


class InboxMessageInline(NoAdding, admin.StackedInline):
    model = InboxMessage
    extra = 0
    can_delete = False
    readonly_fields = INBOX_MESSAGE_FIELDS
    fields = INBOX_MESSAGE_FIELDS


@admin.register(WebhookInbox)
class WebhookInboxAdmin(admin.ModelAdmin):
    list_display = ["name", "inbox_url_column", "owner", "created_at"]
    readonly_fields = ["token", "inbox_url", "created_at"]
    inlines = [InboxMessageInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookInbox]:
        # The list and the page read their rows here: each row learns the hub's address as
        # this request sees it, for the whole URL a receiver is given.
        base = Value(public_base_url(request), output_field=CharField())
        return super().get_queryset(request).annotate(_base_url=base)

    @admin.display(description="webhook URL")
    def inbox_url(self, inbox: WebhookInbox) -> str:
        if not inbox.token:
            return ""
        return getattr(inbox, "_base_url", "") + reverse("push-inbox", args=[inbox.token])

    @admin.display(description="webhook URL")
    def inbox_url_column(self, inbox: WebhookInbox) -> SafeString | str:
        return shortened(self.inbox_url(inbox), code=True)
