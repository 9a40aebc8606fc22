"""Forms for agents and skills; both run the card through the SDK's 0.3 and 1.0 judges."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.models import construct_instance

from a2ahub import nesting
from agents.cards import validate_agent_card
from agents.kinds import check_settings
from agents.models import Agent, ApiKey, KeyScope, Skill
from agents.validators import validate_security_requirements_reference

# Stands in for the skills of an agent that has none yet, so the agent's own fields can be
# judged before its skills exist; the skill formset insists on a real one.
PLACEHOLDER_SKILL = Skill(skill_id="placeholder", name="placeholder", description="-", tags=["x"])


class LimitedJSONField(forms.JSONField):
    """Django's JSON form field, refusing a value nested past the hub's limit
    (`a2ahub.nesting`) with an error naming it: json and the checks after it recurse, and a
    RecursionError would be a 500."""

    def to_python(self, value: Any) -> Any:
        try:
            converted = super().to_python(value)
        except RecursionError:
            raise forms.ValidationError(str(nesting.TooDeep("This value"))) from None
        try:
            nesting.check(converted, "This value")
        except nesting.TooDeep as exc:
            raise forms.ValidationError(str(exc)) from None
        return converted

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except RecursionError:  # shown back as typed, as any JSON that does not parse
            return forms.fields.InvalidJSONInput(data)


def limited_formfield(field: models.Field[Any, Any], **kwargs: Any) -> forms.Field | None:
    """The form field of a model field, with the nesting limit on JSON fields."""
    if isinstance(field, models.JSONField):
        kwargs.setdefault("form_class", LimitedJSONField)
    return field.formfield(**kwargs)


class AgentForm(forms.ModelForm):
    class Meta:
        model = Agent
        formfield_callback = limited_formfield
        fields = [
            "slug", "name", "description", "version", "enabled", "public", "owner",
            "provider_organization", "provider_url", "icon_url", "documentation_url",
            "streaming", "push_notifications", "extended_card", "sign_card",
            "extensions", "default_input_modes", "default_output_modes", "security_schemes",
            "security_requirements", "executor_kind", "executor_settings", "execution_mode",
            "max_concurrent_tasks", "requests_per_minute", "max_message_bytes",
            "task_timeout_seconds",
        ]  # fmt: skip

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        agent = construct_instance(self, self.instance)
        try:
            validate_executor_settings(agent.executor_kind, agent.executor_settings or {})
        except ValidationError as exc:
            self.add_error("executor_settings", exc)
        try:
            validate_security_requirements_reference(
                agent.security_requirements, agent.security_schemes
            )
        except ValidationError as exc:
            self.add_error("security_requirements", exc)
            return cleaned
        try:
            skills = list(agent.skills.all()) if agent.pk else []
            validate_agent_card(agent, skills or [PLACEHOLDER_SKILL])
        except ValidationError as exc:
            self.add_card_errors(exc)
        return cleaned

    def add_card_errors(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        for field, errors in exc.error_dict.items():
            target = field if field in self.fields else None
            if field == "skills":
                target = None
            self.add_error(target, errors)


def validate_executor_settings(kind: str, settings: dict[str, Any]) -> None:
    """The agent's kind judges its settings (a `python` agent names registered functions, an
    `http` agent a backend URL the hub may call, ...)."""
    check_settings(kind, settings)


class SkillFormSet(forms.BaseInlineFormSet):
    """Checks the whole card once the skills are known: an agent needs at least one skill."""

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        skills = [
            form.instance
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]
        if not skills:
            raise ValidationError(
                "An agent needs at least one skill: both card versions list them."
            )
        ids = [skill.skill_id for skill in skills]
        if len(ids) != len(set(ids)):
            raise ValidationError("Each skill needs its own id.")
        schemes = self.instance.security_schemes or {}
        for skill in skills:
            validate_security_requirements_reference(skill.security_requirements, schemes)
        try:
            validate_agent_card(self.instance, skills)
        except ValidationError as exc:
            # Agent-level problems are already shown on the agent's fields; here, list them all.
            raise ValidationError(exc.messages) from exc


class ApiKeyForm(forms.ModelForm):
    """The admin's key form: what the key may do beyond calling agents, as checkboxes."""

    scopes = forms.MultipleChoiceField(
        choices=KeyScope.choices, widget=forms.CheckboxSelectMultiple, required=False,
        help_text="Hub-wide keys only. Without 'registry' the key cannot register agents.",
    )  # fmt: skip

    class Meta:
        model = ApiKey
        fields = ["name", "owner", "agent", "scopes"]
