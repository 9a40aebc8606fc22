"""Hosted agents and their skills: everything an Agent Card of A2A 0.3 or 1.0 carries.

Security schemes are stored in the OpenAPI-style form developers already know (the 0.3
shape: `{"type": "apiKey", "in": "header", "name": "X-API-Key"}`); `agents.cards` converts
them to the 1.0 form with the official SDK.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from agents.kinds import executor_choices
from agents.validators import (
    validate_extensions,
    validate_nonempty_string_list,
    validate_security_requirements,
    validate_security_schemes,
    validate_string_list,
)

SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
slug_validator = RegexValidator(
    SLUG_PATTERN,
    "Use lowercase letters, digits and inner hyphens (at most 64 characters).",
)


class ExecutionMode(models.TextChoices):
    INLINE = "inline", "inline (in the web process)"
    WORKER = "worker", "worker (a Celery job)"


def default_modes() -> list[str]:
    return ["text/plain"]


class CardSignature(models.TextChoices):
    """What the hub found when a remote card came in (`agents.card_trust`)."""

    NOT_CHECKED = "", "not checked"
    VERIFIED = "verified", "verified"
    UNSIGNED = "unsigned", "unsigned"
    INVALID = "invalid", "invalid"


class CardKeySource(models.TextChoices):
    NONE = "", "none"
    TRUSTED = "trusted", "a key the operator trusts (TRUSTED_CARD_KEYS)"
    ORIGIN = "origin", "the JWKS at the card's own origin"


class Access(models.TextChoices):
    """Who may call an agent (whatever credential they hold: an API key, a token, a session)."""

    ANYONE = "anyone", "anyone (credentials only if its security requirements say so)"
    SIGNED_IN = "signed_in", "any signed-in principal (a key, a token or a session)"
    LISTED = "listed", "only the users, groups and applications listed"


class Agent(models.Model):
    slug = models.CharField(max_length=64, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    description = models.TextField()
    version = models.CharField(max_length=50, default="1.0.0")
    provider_organization = models.CharField(max_length=200, blank=True)
    provider_url = models.URLField(blank=True)
    icon_url = models.URLField(blank=True)
    documentation_url = models.URLField(blank=True)

    streaming = models.BooleanField(default=True)
    push_notifications = models.BooleanField(default=False)
    extended_card = models.BooleanField(
        default=False,
        help_text="Offer an authenticated extended card (it adds the skills marked extended-only).",
    )
    sign_card = models.BooleanField(
        default=True,
        db_default=True,
        help_text="Sign the card with the hub's keys (published at /.well-known/jwks.json).",
    )
    extensions = models.JSONField(
        default=list,
        validators=[validate_extensions],
        blank=True,
        help_text='A list of {"uri", "description", "required", "params"} objects.',
    )
    default_input_modes = models.JSONField(
        default=default_modes, validators=[validate_nonempty_string_list]
    )
    default_output_modes = models.JSONField(
        default=default_modes, validators=[validate_nonempty_string_list]
    )
    security_schemes = models.JSONField(
        default=dict,
        validators=[validate_security_schemes],
        blank=True,
        help_text='Named OpenAPI-style schemes, e.g. {"apiKey": {"type": "apiKey", '
        '"in": "header", "name": "X-API-Key"}}.',
    )
    security_requirements = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_security_requirements],
        help_text='Alternatives, each naming schemes and scopes, e.g. [{"apiKey": []}].',
    )

    access = models.CharField(
        max_length=10, choices=Access.choices, default=Access.ANYONE, db_default=Access.ANYONE,
        help_text="Who may call this agent over A2A. Its owner always may.",
    )  # fmt: skip
    oauth2 = models.BooleanField(
        default=False,
        db_default=False,
        # Shown unescaped by Django's forms: no angle brackets.
        help_text="Require an OAuth2 bearer token from the hub (the card publishes the hub's "
        "oauth2 scheme; tokens need the scope a2a:invoke, or agent: followed by its slug).",
    )
    allowed_users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="callable_agents",
        help_text="With access 'listed': these users may call it.",
    )  # fmt: skip
    allowed_groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="callable_agents",
        help_text="With access 'listed': members of these groups may call it.",
    )  # fmt: skip
    allowed_applications: models.ManyToManyField[Any, Any] = models.ManyToManyField(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, blank=True, related_name="callable_agents",
        help_text="With access 'listed': these OAuth2 applications (as themselves) may call it.",
    )  # fmt: skip

    executor_kind = models.CharField(max_length=40, choices=executor_choices)
    executor_settings = models.JSONField(default=dict, blank=True)
    execution_mode = models.CharField(
        max_length=10,
        blank=True,
        default="",
        db_default="",
        choices=ExecutionMode.choices,
        help_text="Empty: the executor kind's default.",
    )

    max_concurrent_tasks = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Open (submitted or working) tasks at once; empty: no limit.",
    )
    requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="JSON-RPC requests per minute per caller; empty: no limit."
    )
    max_message_bytes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Largest request body; empty: the hub's limit."
    )
    task_timeout_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="A turn running longer fails; empty: no limit."
    )
    # What operators see when callers meet the limits above.
    limit_hits = models.PositiveIntegerField(default=0, db_default=0, editable=False)
    last_limit_hit = models.CharField(
        max_length=300, blank=True, default="", db_default="", editable=False
    )
    last_limit_hit_at = models.DateTimeField(null=True, blank=True, editable=False)

    # The signature of the remote card this agent was made from (imported, registered or
    # `a2a-remote`); hosted agents' own cards are signed by the hub and not checked here.
    card_signature = models.CharField(
        max_length=10, choices=CardSignature.choices, blank=True, default="", db_default="",
        editable=False,
        help_text="Whether the remote card it was made from is signed by a key the hub trusts.",
    )  # fmt: skip
    card_signature_kid = models.CharField(
        max_length=200, blank=True, default="", db_default="", editable=False
    )
    card_signature_key_source = models.CharField(
        max_length=10, choices=CardKeySource.choices, blank=True, default="", db_default="",
        editable=False,
    )  # fmt: skip
    card_signature_reason = models.CharField(
        max_length=500, blank=True, default="", db_default="", editable=False
    )
    card_checked_at = models.DateTimeField(null=True, blank=True, editable=False)

    enabled = models.BooleanField(default=True)
    public = models.BooleanField(default=True, help_text="Listed in the hub's catalog.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="agents",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        indexes = [models.Index(fields=["public", "enabled"], name="agent_public_enabled")]

    def __str__(self) -> str:
        return self.slug

    def declared_extensions(self) -> list[dict[str, Any]]:
        return [ext for ext in self.extensions if isinstance(ext, dict)]


class Skill(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="skills")
    skill_id = models.CharField(
        max_length=100,
        validators=[RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", "Letters, digits, _ . -")],
        help_text="The skill's id in the card, unique within its agent.",
    )
    name = models.CharField(max_length=200)
    description = models.TextField()
    tags = models.JSONField(
        default=list, validators=[validate_nonempty_string_list], help_text="At least one keyword."
    )
    examples = models.JSONField(default=list, blank=True, validators=[validate_string_list])
    input_modes = models.JSONField(
        default=list, blank=True, validators=[validate_string_list], help_text="Empty: defaults."
    )
    output_modes = models.JSONField(
        default=list, blank=True, validators=[validate_string_list], help_text="Empty: defaults."
    )
    security_requirements = models.JSONField(
        default=list, blank=True, validators=[validate_security_requirements]
    )
    extended_only = models.BooleanField(
        default=False, help_text="Shown only in the authenticated extended card."
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "skill_id"], name="skill_unique_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.agent.slug}/{self.skill_id}"


class KeyScope(models.TextChoices):
    """What a hub-wide key may do beyond calling agents (agents.scopes names OAuth2's too)."""

    REGISTRY = "registry", "registry: register agents and manage their registrations"


def validate_key_scopes(value: Any) -> None:
    known = set(KeyScope.values)
    if not isinstance(value, list) or not all(isinstance(v, str) and v in known for v in value):
        raise ValidationError(f"Scopes must be a list of: {', '.join(sorted(known))}.")


KEY_BOUND_SCOPES = "A key bound to one agent only calls that agent: it cannot hold scopes."


class ApiKey(models.Model):
    """A credential for A2A clients; only its hash is stored, the key is shown once."""

    name = models.CharField(max_length=200)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
        related_name="api_keys",
    )  # fmt: skip
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="api_keys",
        help_text="Empty: the key works for every agent.",
    )  # fmt: skip
    scopes = models.JSONField(
        default=list, db_default=[], blank=True, validators=[validate_key_scopes],
        help_text="What the key may do besides calling agents (hub-wide keys only).",
    )  # fmt: skip
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def principal(self) -> str:
        return self.principal_of(self.pk, self.owner_id)

    @staticmethod
    def principal_of(pk: int, owner_id: int | None) -> str:
        # A task belongs to the user behind the credential, so a user's keys, tokens and
        # session see the same tasks; a key without an owner owns as itself.
        return f"user:{owner_id}" if owner_id else f"apikey:{pk}"

    @classmethod
    def issue(
        cls, name: str, owner: Any = None, agent: Agent | None = None,
        scopes: list[str] | None = None,
    ) -> tuple[ApiKey, str]:  # fmt: skip
        """Create a key and return it with its secret, which is not kept anywhere."""
        prefix = secrets.token_hex(6)
        raw = f"a2a_{prefix}_{secrets.token_urlsafe(32)}"
        key = cls.objects.create(
            name=name, owner=owner, agent=agent, prefix=prefix, key_hash=hash_key(raw),
            scopes=sorted(set(scopes or [])),
        )  # fmt: skip
        return key, raw

    def clean(self) -> None:
        if self.agent_id is not None and self.scopes:
            raise ValidationError({"scopes": KEY_BOUND_SCOPES})


def hash_key(raw: str) -> str:
    # Keys are 256 random bits, so a fast hash is enough; a slow one would only cost latency.
    return hashlib.sha256(raw.encode()).hexdigest()


class CredentialKind(models.TextChoices):
    API_KEY = "api_key", "API key"
    OAUTH2_TOKEN = "oauth2_token", "OAuth2 token"
    SESSION = "session", "developer session"
    ANONYMOUS = "anonymous", "none (anonymous)"


# What one row of CredentialUse counts calls under.
USE_KEY_FIELDS = ["agent", "principal", "credential_kind", "credential_ref", "binding", "version"]


class CredentialUse(models.Model):
    """Which credential a principal called an agent with, through which door: one row per
    (agent, principal, credential, binding, version), written in batches (`agents.audit`), so
    `last_used_at` and `calls` trail the calls by up to AUDIT_FLUSH_SECONDS."""

    agent = models.ForeignKey(
        Agent, null=True, on_delete=models.SET_NULL, related_name="credential_uses"
    )
    # Kept when the agent is deleted: the log outlives what it names.
    agent_slug = models.CharField(max_length=64)
    principal = models.CharField(max_length=100)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="credential_uses",
    )  # fmt: skip
    credential_kind = models.CharField(max_length=20, choices=CredentialKind.choices)
    # Names the credential, never holds it: "apikey:<id>", "app:<id>/token:<id>", "session".
    credential_ref = models.CharField(max_length=100, blank=True)
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="uses"
    )
    application: models.ForeignKey[Any, Any] = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, null=True, blank=True,
        on_delete=models.SET_NULL, related_name="credential_uses",
    )  # fmt: skip
    # An access token's id (tokens come and go with every grant; no foreign key to hold them).
    token_id = models.BigIntegerField(null=True, blank=True)
    binding = models.CharField(max_length=20, blank=True)
    version = models.CharField(max_length=10, blank=True)
    first_used_at = models.DateTimeField()
    last_used_at = models.DateTimeField()
    calls = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-last_used_at"]
        constraints = [models.UniqueConstraint(fields=USE_KEY_FIELDS, name="credential_use_unique")]
        indexes = [
            models.Index(fields=["-last_used_at"], name="credential_use_last_used"),
            models.Index(fields=["principal", "-last_used_at"], name="credential_use_principal"),
            models.Index(fields=["token_id"], name="credential_use_token"),
        ]

    def __str__(self) -> str:
        return f"{self.principal} on {self.agent_slug} ({self.get_credential_kind_display()})"


class AccessVia(models.TextChoices):
    ADMIN = "admin", "admin"
    OPERATORS_API = "operators_api", "operators' API"
    DEVELOPER_PAGES = "developer_pages", "developer pages"


class AccessChange(models.Model):
    """A change to who may call an agent: its access rule, OAuth2 requirement and lists, as
    they were and as they became (lists by name), who made it and where."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    agent = models.ForeignKey(
        Agent, null=True, on_delete=models.SET_NULL, related_name="access_changes"
    )
    agent_slug = models.CharField(max_length=64)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="access_changes",
    )  # fmt: skip
    # The actor's name as it was, kept if the user is deleted.
    actor_name = models.CharField(max_length=150)
    via = models.CharField(max_length=20, choices=AccessVia.choices)
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.actor_name} changed {self.agent_slug} ({self.get_via_display()})"
