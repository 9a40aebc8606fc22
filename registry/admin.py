"""The operator's view of registrations: who registered what, when it expires, whether its
card answers, and a revoke action that removes the agent at once."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from a2ahub.admin_columns import shorten
from registry import actions
from registry.models import Registration


class ExpiryFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "live"), ("expired", "expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "live":
            return queryset.filter(expires_at__gt=now)
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        return queryset


@admin.register(Registration)
class RegistrationAdmin(admin.ModelAdmin):
    list_display = (
        "agent", shorten("registration_id", "registration id", code=True),
        shorten("owner_principal", "owner principal"), "expires_at", "state", "health",
        "checked_at", shorten("last_error", "last error"), "source", "card_signature",
    )  # fmt: skip
    list_filter = (ExpiryFilter, "health", "source", "agent__card_signature")
    list_select_related = ("agent",)
    search_fields = ("agent__slug", "registration_id", "owner_principal")
    readonly_fields = (
        "agent", "registration_id", "owner_principal", "owner", "source", "protocol_version",
        "ttl_seconds", "expires_at", "renewed_at", "card_url", "card_etag", "category", "tags",
        "health", "checked_at", "last_error", "card_signature", "card_signature_kid",
        "card_signature_key_source", "card_signature_reason", "created_at", "updated_at",
    )  # fmt: skip
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # agents register themselves

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Every field is the agent's to change (renew, deregister): the page is "View
        # registration", without save buttons; revoking is the list's action.
        return False

    @admin.display(description="state")
    def state(self, registration: Registration) -> str:
        return "expired" if registration.is_expired() else "live"

    # The card's signature is kept on the hosted agent, which every entrance of a card makes.
    @admin.display(description="card signature", ordering="agent__card_signature")
    def card_signature(self, registration: Registration) -> str:
        return registration.agent.get_card_signature_display()

    @admin.display(description="signing key id")
    def card_signature_kid(self, registration: Registration) -> str:
        return registration.agent.card_signature_kid

    @admin.display(description="signing key from")
    def card_signature_key_source(self, registration: Registration) -> str:
        return registration.agent.get_card_signature_key_source_display()

    @admin.display(description="why not verified")
    def card_signature_reason(self, registration: Registration) -> str:
        return registration.agent.card_signature_reason

    @admin.action(description="Revoke: remove the agents now", permissions=["delete"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[Registration]) -> None:
        count = 0
        for registration in queryset.select_related("agent"):
            actions.revoke(registration)
            count += 1
        self.message_user(request, f"{count} registration(s) revoked.", messages.SUCCESS)
