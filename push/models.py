"""Push notifications: webhook configs per task, one delivery per event and config, every
attempt of each delivery, and the built-in webhook inbox."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from django.conf import settings
from django.db import models

from a2ahub.outbound import origin_of
from tasks.models import Task, TaskEvent


class PushNotificationConfig(models.Model):
    # No index of its own: the unique (task, config_id) constraint's serves a task's lookups,
    # and each index is one more write of every config a webhook send makes.
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="push_configs", db_index=False
    )
    config_id = models.CharField(max_length=200)
    url = models.URLField(max_length=2000)
    # Write-only on the wire: stored to authenticate deliveries, never returned.
    token = models.CharField(max_length=500, blank=True)
    auth_scheme = models.CharField(max_length=50, blank=True)
    auth_credentials = models.CharField(max_length=2000, blank=True)
    protocol_version = models.CharField(max_length=8)
    active = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=200, blank=True)
    last_error = models.TextField(blank=True)
    # A worker delivering this config's queue holds it until then; others wait their turn.
    lease_until = models.DateTimeField(null=True, blank=True)
    # The receiver: the URL's scheme, host and port (`a2ahub.outbound.origin_of`). A success
    # there after failures makes the deliveries waiting for it due (`push.receivers`).
    origin = models.CharField(max_length=300, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task_id", "created_at"]
        verbose_name = "push notification config"
        constraints = [
            models.UniqueConstraint(
                fields=["task", "config_id"], name="push_config_unique_per_task"
            )
        ]
        indexes = [models.Index(fields=["origin"], name="push_config_origin")]

    def __str__(self) -> str:
        return f"{self.task_id}/{self.config_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.origin = origin_of(self.url)
        fields = kwargs.get("update_fields")
        if fields is not None and "url" in fields:
            kwargs["update_fields"] = {*fields, "origin"}
        super().save(*args, **kwargs)


class DeliveryState(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    ABANDONED = "abandoned", "abandoned (gave up)"


class Delivery(models.Model):
    """One event for one config; its id is the JWT's `jti` and the `webhook-id` header."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: `delivery_queue` starts with it. A delivery is written twice
    # (made, then sent), each time into every index.
    config = models.ForeignKey(
        PushNotificationConfig, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    event = models.ForeignKey(TaskEvent, on_delete=models.CASCADE, related_name="deliveries")
    sequence = models.PositiveIntegerField()
    state = models.CharField(
        max_length=12, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    test = models.BooleanField(default=False, help_text="A one-off test delivery, no retries.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["config_id", "sequence", "created_at"]
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["config", "state", "sequence"], name="delivery_queue"),
            models.Index(fields=["state", "next_attempt_at"], name="delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.config} #{self.sequence} ({self.state})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempts_made")
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["delivery_id", "started_at"]

    def __str__(self) -> str:
        return (
            f"{self.delivery_id} at {self.started_at:%H:%M:%S} -> {self.status_code or self.error}"
        )


def inbox_token() -> str:
    return secrets.token_urlsafe(18)


class WebhookInbox(models.Model):
    """A receiver inside the hub, so push can be tried with nothing else running."""

    name = models.CharField(max_length=200)
    token = models.CharField(max_length=64, unique=True, default=inbox_token)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "webhook inboxes"

    def __str__(self) -> str:
        return self.name


class InboxMessage(models.Model):
    inbox = models.ForeignKey(WebhookInbox, on_delete=models.CASCADE, related_name="messages")
    received_at = models.DateTimeField(auto_now_add=True)
    delivery_id = models.CharField(max_length=100, blank=True)
    content_type = models.CharField(max_length=200, blank=True)
    body = models.TextField()
    signature_valid = models.BooleanField(default=False)
    signature_error = models.CharField(max_length=300, blank=True)
    token_header = models.BooleanField(default=False, help_text="Carried a notification token.")

    class Meta:
        ordering = ["-received_at"]

    def __str__(self) -> str:
        return f"{self.inbox} {self.received_at:%Y-%m-%d %H:%M:%S}"
