"""The operator's console for push: configs (secrets masked), deliveries with every attempt and
what retention will prune, replay and test deliveries, and the built-in webhook inbox."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from a2ahub.worker import submit
from push.jobs import deliver_config
from push.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryState,
    InboxMessage,
    PushNotificationConfig,
    WebhookInbox,
)
from push.retention import deliveries_pending_text

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
            return queryset.filter(
                active=True, deliveries__state=DeliveryState.PENDING, deliveries__attempts__gt=0
            ).distinct()
        return queryset


@admin.register(PushNotificationConfig)
class PushNotificationConfigAdmin(admin.ModelAdmin):
    list_display = [
        "config_id", "task", "url", "protocol_version", "active", "pending", "delivered",
        "last_error", "updated_at",
    ]  # fmt: skip
    list_filter = [HealthFilter, "active", "protocol_version"]
    search_fields = ["config_id", "url", "task__id"]
    readonly_fields = CONFIG_FIELDS
    fields = CONFIG_FIELDS
    actions = ["send_test_delivery", "enable_configs"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[PushNotificationConfig]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _pending=Count("deliveries", filter=Q(deliveries__state=DeliveryState.PENDING)),
                _delivered=Count("deliveries", filter=Q(deliveries__state=DeliveryState.DELIVERED)),
            )
        )

    @admin.display(ordering="_pending")
    def pending(self, config: PushNotificationConfig) -> int:
        return getattr(config, "_pending", 0)

    @admin.display(ordering="_delivered")
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
            submit(deliver_config, config.pk)
            sent += 1
        self.message_user(request, f"{sent} test deliveries queued.", messages.SUCCESS)

    @admin.action(description="Enable the selected configs again")
    def enable_configs(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.update(active=True, disabled_reason="")
        self.message_user(request, f"{count} config(s) enabled.", messages.SUCCESS)


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    readonly_fields = ATTEMPT_FIELDS
    fields = ATTEMPT_FIELDS

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "config", "sequence", "state", "attempts", "next_attempt_at",
                    "delivered_at", "last_error"]  # fmt: skip
    list_filter = ["state", "test"]
    search_fields = ["id", "config__config_id", "config__task__id"]
    readonly_fields = DELIVERY_FIELDS
    fields = DELIVERY_FIELDS
    inlines = [AttemptInline]
    actions = ["replay"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

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
        for config_pk in configs:
            submit(deliver_config, config_pk)
        self.message_user(request, f"{queryset.count()} deliveries queued again.", messages.SUCCESS)


class InboxMessageInline(admin.StackedInline):
    model = InboxMessage
    extra = 0
    can_delete = False
    readonly_fields = INBOX_MESSAGE_FIELDS
    fields = INBOX_MESSAGE_FIELDS

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(WebhookInbox)
class WebhookInboxAdmin(admin.ModelAdmin):
    list_display = ["name", "inbox_url", "owner", "created_at"]
    readonly_fields = ["token", "inbox_url", "created_at"]
    inlines = [InboxMessageInline]

    @admin.display(description="webhook URL")
    def inbox_url(self, inbox: WebhookInbox) -> str:
        return f"/push/inbox/{inbox.token}/" if inbox.token else ""
