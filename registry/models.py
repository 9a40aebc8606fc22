"""Registrations: agents that registered themselves (seed 003), each hosted as an `a2a-remote`
agent for as long as its owner keeps renewing it.

A registration is owned by the principal that made it (an API key: "apikey:12"); the key's
user, when it has one, owns the hub agent too. Tags, skills and protocols are kept as
`|a|b|` strings as well as lists so that search filters are plain substring matches on any
database.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from agents.models import Agent


class Health(models.TextChoices):
    UNKNOWN = "unknown", "not checked"
    OK = "ok", "card answers"
    FAILING = "failing", "card does not answer"


class Source(models.TextChoices):
    CARD = "card", "an Agent Card in the body"
    SEED = "seed", "seed 003's registration shape"
    CARD_URL = "card-url", "a card URL the hub fetched"


def new_registration_id() -> str:
    return f"reg-{secrets.token_hex(8)}"


def index_of(values: list[str]) -> str:
    """`|a|b|`: each value between bars, lower-cased, so `|a|` finds exactly one."""
    cleaned = [v.strip().lower().replace("|", "/") for v in values if v and v.strip()]
    return f"|{'|'.join(cleaned)}|" if cleaned else ""


class Registration(models.Model):
    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="registration")
    registration_id = models.CharField(
        max_length=40, unique=True, default=new_registration_id, editable=False
    )
    owner_principal = models.CharField(max_length=100, help_text="The credential that registered.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="registrations",
    )  # fmt: skip
    source = models.CharField(max_length=10, choices=Source.choices)
    protocol_version = models.CharField(
        max_length=10, help_text="The version whose card model accepted the registration."
    )
    ttl_seconds = models.PositiveIntegerField()
    expires_at = models.DateTimeField(db_index=True)
    renewed_at = models.DateTimeField(default=timezone.now)

    identifier = models.CharField(
        max_length=500, blank=True, default="", db_default="",
        help_text="The AI Catalog identifier its publisher gave (kept as given); empty: the hub's.",
    )  # fmt: skip
    card_url = models.URLField(max_length=2000, blank=True)
    card_etag = models.CharField(max_length=200, blank=True)
    category = models.CharField(max_length=100, blank=True)
    tags = models.JSONField(default=list, blank=True)
    tag_index = models.TextField(blank=True, editable=False)
    skill_index = models.TextField(blank=True, editable=False)
    protocol_index = models.CharField(max_length=100, blank=True, editable=False)

    health = models.CharField(max_length=10, choices=Health.choices, default=Health.UNKNOWN)
    checked_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent__slug"]

    def __str__(self) -> str:
        return f"{self.registration_id} ({self.agent.slug})"

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at <= (now or timezone.now())

    @property
    def protocols(self) -> list[str]:
        return [p for p in self.protocol_index.split("|") if p]
