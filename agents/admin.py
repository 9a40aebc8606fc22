"""The operator's console for agents (skills inline, filters, a rendered card preview; changes
to who may call one go to the audit log) and their API keys (issued once, listed by prefix,
revoked; the secret is never stored). The audit log's own lists are in `agents.audit_admin`."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html

from a2ahub.admin_columns import shorten
from agents import audit, audit_admin, cards  # noqa: F401  (audit_admin registers its lists)
from agents.card_trust import TRUST_FIELDS
from agents.forms import AgentForm, ApiKeyForm, SkillForm, SkillFormSet
from agents.lookup import forget_agents
from agents.models import AccessVia, Agent, ApiKey, Skill
from agents.views import public_base_url


class SkillInline(admin.StackedInline):
    model = Skill
    form = SkillForm
    formset = SkillFormSet
    extra = 0
    min_num = 0
    fields = [
        ("skill_id", "name", "position", "extended_only"),
        "description",
        ("tags", "examples"),
        ("input_modes", "output_modes"),
        "security_requirements",
    ]

    def get_extra(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> int:
        return 0 if obj else 1  # a new agent needs a skill: its form is there at once


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    inlines = [SkillInline]
    list_display = [
        "slug",
        shorten("name"),
        "executor_kind",
        "enabled",
        "public",
        "streaming",
        "push_notifications",
        "skill_count",
        "card_signature",
        "limit_hits",
        "updated_at",
    ]
    list_filter = [
        "enabled", "public", "access", "oauth2", "executor_kind", "card_signature", "streaming",
        "push_notifications",
    ]  # fmt: skip
    search_fields = ["slug", "name", "description", "skills__name", "skills__skill_id"]
    readonly_fields = [
        "created_at",
        "updated_at",
        "limit_hits",
        "last_limit_hit",
        "last_limit_hit_at",
        *TRUST_FIELDS,
    ]
    actions = ["enable_agents", "disable_agents"]
    # One-line search boxes, not three tall pick-lists; shown only with access "listed".
    autocomplete_fields = ["owner", "allowed_users", "allowed_groups", "allowed_applications"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    ("slug", "version"),
                    "name",
                    "description",
                    ("enabled", "public"),
                    "owner",
                ]
            },
        ),
        ("Executor", {"fields": [("executor_kind", "execution_mode"), "executor_settings"]}),
        (
            "Remote card's signature (checked when the card came in)",
            {
                "fields": [
                    ("card_signature", "card_checked_at"),
                    ("card_signature_kid", "card_signature_key_source"),
                    "card_signature_reason",
                ]
            },
        ),
        (
            "Who may call it",
            {
                "fields": [
                    "access",
                    "oauth2",
                    "allowed_users",
                    "allowed_groups",
                    "allowed_applications",
                ]
            },
        ),
        (
            "Card: modes and capabilities",
            {
                "classes": ["collapse"],
                "fields": [
                    "default_input_modes",
                    "default_output_modes",
                    ("streaming", "push_notifications", "extended_card", "sign_card"),
                    "extensions",
                ],
            },
        ),
        (
            "Card: security",
            {"classes": ["collapse"], "fields": ["security_schemes", "security_requirements"]},
        ),
        (
            "Card: provider and links",
            {
                "classes": ["collapse"],
                "fields": [
                    ("provider_organization", "provider_url"),
                    ("icon_url", "documentation_url"),
                ],
            },
        ),
        (
            "Limits",
            {
                "classes": ["collapse"],
                "fields": [
                    ("max_concurrent_tasks", "requests_per_minute"),
                    ("max_message_bytes", "task_timeout_seconds"),
                    ("limit_hits", "last_limit_hit", "last_limit_hit_at"),
                ],
            },
        ),
        ("History", {"classes": ["collapse"], "fields": [("created_at", "updated_at")]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        return super().get_queryset(request).annotate(_skill_count=Count("skills", distinct=True))

    @admin.display(description="skills", ordering="_skill_count")
    def skill_count(self, agent: Agent) -> int:
        return getattr(agent, "_skill_count", 0)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        agent = self.get_object(request, object_id)
        if agent is not None:
            context.update(card_preview_context(request, agent))
        return super().change_view(request, object_id, form_url, extra_context=context)

    def save_related(
        self, request: HttpRequest, form: ModelForm, formsets: Any, change: bool
    ) -> None:
        # The lists are saved here, after the agent: only now is the whole change known.
        super().save_related(request, form, formsets, change)
        before = access_before(form) if change else audit.snapshot_of_new_agent()
        after = audit.snapshot(form.instance)
        audit.record_access_change(form.instance, request.user, AccessVia.ADMIN, before, after)

    @admin.action(description="Enable the selected agents")
    def enable_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        count = queryset.update(enabled=True)
        forget_agents()
        self.message_user(request, f"{count} agent(s) enabled.", messages.SUCCESS)

    @admin.action(description="Disable the selected agents (their cards and endpoints go away)")
    def disable_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        count = queryset.update(enabled=False)
        forget_agents()
        self.message_user(request, f"{count} agent(s) disabled.", messages.SUCCESS)


def access_before(form: ModelForm) -> dict[str, Any]:
    """Who could call the agent before this save, from the values the form started with."""
    initial = form.initial
    return audit.describe(
        initial.get("access", ""), initial.get("oauth2", False),
        initial.get("allowed_users", []), initial.get("allowed_groups", []),
        initial.get("allowed_applications", []),
    )  # fmt: skip


def card_preview_context(request: HttpRequest, agent: Agent) -> dict[str, Any]:
    base = public_base_url(request)
    # A stored card that no longer builds is said so in its place: the agent stays editable.
    return {"card_preview": cards.card_text(agent, base), "card_url": cards.card_url(base, agent)}


class RevokedFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "revoked"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "active"), ("yes", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> QuerySet[ApiKey]:
        if self.value() in ("yes", "no"):
            return queryset.filter(revoked_at__isnull=self.value() == "no")
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = [shorten("name"), "key_prefix", "owner", "agent",
                    "scope_list", "created_at", "last_used_at", "active"]  # fmt: skip
    list_filter = [RevokedFilter, "agent"]
    list_select_related = ["owner", "agent"]
    search_fields = ["name", "prefix", "owner__username"]
    actions = ["revoke_keys"]
    # The hash never appears: it is not a field of any form or column here.
    fields = ["name", "owner", "agent", "scopes", "key_prefix", "created_at", "last_used_at",
              "revoked_at"]  # fmt: skip
    readonly_fields = ["key_prefix", "created_at", "last_used_at", "revoked_at"]

    @admin.display(description="key", ordering="prefix")
    def key_prefix(self, key: ApiKey) -> str:
        return f"a2a_{key.prefix}_…" if key.prefix else "—"

    @admin.display(description="scopes")
    def scope_list(self, key: ApiKey) -> str:
        return " ".join(key.scopes or []) or "—"

    @admin.display(description="active", boolean=True, ordering="revoked_at")
    def active(self, key: ApiKey) -> bool:
        return key.revoked_at is None

    def save_model(self, request: HttpRequest, obj: ApiKey, form: ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        key, secret = ApiKey.issue(obj.name, obj.owner, obj.agent, obj.scopes)
        obj.pk, obj.prefix, obj.key_hash, obj.created_at = (
            key.pk, key.prefix, key.key_hash, key.created_at,
        )  # fmt: skip
        self.message_user(request, secret_message(secret), messages.SUCCESS)

    @admin.action(description="Revoke the selected keys (clients using them are refused)")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"{count} key(s) revoked.", messages.SUCCESS)


def secret_message(secret: str) -> str:
    # Only the hash is kept: this message is the one time anyone sees the key.
    return format_html(
        'The new key is <code class="api-key-secret">{}</code>. Copy it now: it is shown '
        "only this once and cannot be recovered.",
        secret,
    )
