"""The audit log in the admin: credential uses and access changes, read-only, newest first,
filtered by agent, principal and credential kind; and the last use of OAuth2 tokens and
applications, next to them in django-oauth-toolkit's own lists (whose application form names
each refused redirect URI with what is wrong with it)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from oauth2_provider.admin import get_access_token_admin_class, get_application_admin_class
from oauth2_provider.forms import ApplicationForm
from oauth2_provider.models import get_access_token_model, get_application_model

from a2ahub import numerals, when
from a2ahub.admin_columns import shorten, shortened
from agents.models import AccessChange, CredentialUse
from agents.redirect_uris import ReadableRedirectErrors

# A filter lists at most this many principals (the most recently seen); search finds the rest.
PRINCIPAL_CHOICES = 100


class ReadOnlyAdmin(admin.ModelAdmin):
    """A log: operators read it; nobody adds, changes or deletes a row by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class PrincipalFilter(admin.SimpleListFilter):
    title = "principal"
    parameter_name = "principal"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        recent = CredentialUse.objects.order_by("-last_used_at").values_list(
            "principal", flat=True
        )[: PRINCIPAL_CHOICES * 10]
        principals = list(dict.fromkeys(recent))[:PRINCIPAL_CHOICES]
        return [
            (p, label) for p, label in zip(principals, principal_labels(principals), strict=True)
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(principal=self.value()) if self.value() else queryset


def user_pk(principal: str) -> int | None:
    """The user's id of a `user:<id>` principal; None for any other."""
    kind, _, rest = principal.partition(":")
    return numerals.whole_number(rest) if kind == "user" else None


def principal_labels(principals: list[str]) -> list[str]:
    """`user:3` as `user:3 (alice)`, one read for all the users."""
    pks = {p: pk for p in principals if (pk := user_pk(p)) is not None}
    names = dict(get_user_model().objects.filter(pk__in=pks.values()).values_list("pk", "username"))
    labels = []
    for principal in principals:
        name = names.get(pks[principal]) if principal in pks else None
        labels.append(f"{principal} ({name})" if name else principal)
    return labels


@admin.register(CredentialUse)
class CredentialUseAdmin(ReadOnlyAdmin):
    list_display = [
        "last_used_at", shorten("agent_slug", "agent slug"), shorten("principal"), "user",
        "credential_kind", "credential", "binding", "version", "calls", "first_used_at",
    ]  # fmt: skip
    list_filter = ["credential_kind", PrincipalFilter, "agent", "binding", "version"]
    list_select_related = ["user", "api_key", "application"]
    search_fields = ["principal", "agent_slug", "credential_ref", "user__username",
                     "api_key__name", "application__name"]  # fmt: skip
    ordering = ["-last_used_at"]

    @admin.display(description="credential", ordering="credential_ref")
    def credential(self, use: CredentialUse) -> str:
        if use.api_key is not None:
            text = f"{use.credential_ref} ({use.api_key.name}, a2a_{use.api_key.prefix}_…)"
        elif use.application is not None:
            text = f"{use.credential_ref} ({use.application.name})"
        else:
            text = use.credential_ref
        return shortened(text)


@admin.register(AccessChange)
class AccessChangeAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at", shorten("agent_slug", "agent slug"), "actor_name", "via", "was", "became",
    ]  # fmt: skip
    list_filter = ["via", "agent", ("actor", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["agent_slug", "actor_name"]
    ordering = ["-created_at", "-id"]

    @admin.display(description="before")
    def was(self, change: AccessChange) -> str:
        return as_text(change.before)

    @admin.display(description="after")
    def became(self, change: AccessChange) -> str:
        return as_text(change.after)


def as_text(values: dict[str, Any]) -> str:
    # One line, cut to the column (a list of thirty users is long); whole on hover.
    return shortened(when.plain(dict(sorted(values.items()))), code=True)


AccessToken = get_access_token_model()
Application = get_application_model()
TokenAdminBase: Any = get_access_token_admin_class()
ApplicationAdminBase: Any = get_application_admin_class()


class LastUsedColumn(admin.ModelAdmin):
    """A "last used" column: the latest `last_used_at` of the credential uses whose
    `used_by` field names the row."""

    used_by = ""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        uses = CredentialUse.objects.filter(**{self.used_by: OuterRef("pk")})
        latest = Subquery(uses.order_by("-last_used_at").values("last_used_at")[:1])
        return super().get_queryset(request).annotate(_last_used=latest)

    @admin.display(description="last used (audit log)", ordering="_last_used")
    def last_used(self, row: Any) -> Any:
        return getattr(row, "_last_used", None)


class TokenAdmin(LastUsedColumn, TokenAdminBase):  # type: ignore[misc]
    """django-oauth-toolkit's token list, with when each token last called an agent."""

    list_display = [*TokenAdminBase.list_display, "last_used"]
    used_by = "token_id"


class ApplicationAdminForm(ReadableRedirectErrors, ApplicationForm):
    """django-oauth-toolkit's form of an application, each refused redirect URI named with
    what is wrong with it."""


class ApplicationAdmin(LastUsedColumn, ApplicationAdminBase):  # type: ignore[misc]
    """django-oauth-toolkit's application list, with when its tokens last called an agent."""

    form = ApplicationAdminForm
    list_display = [*ApplicationAdminBase.list_display, "last_used"]
    used_by = "application_id"
    # The model's own page is django-oauth-toolkit's management view, which the hub does not
    # mount (developers manage theirs at /dev/applications/): the button led to a 500.
    view_on_site = False


for model, model_admin in ((AccessToken, TokenAdmin), (Application, ApplicationAdmin)):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, model_admin)
