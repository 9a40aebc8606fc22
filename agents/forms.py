"""Forms for agents and skills, shared by the admin and the developer pages: plain inputs for
the card's fields (agents.inputs), the executor kind's own settings form, and both card
versions judged through the SDK's 0.3 and 1.0 judges."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import construct_instance

from agents import card_trust, kinds
from agents.cards import validate_agent_card
from agents.inputs import (
    ExecutorSettingsField,
    ExtensionsField,
    LinesField,
    MediaTypesField,
    RequirementsField,
    SchemesField,
    StringListField,
)
from agents.kinds import settings_forms
from agents.models import Agent, ApiKey, KeyScope, Skill, default_modes
from agents.validators import validate_security_requirements_reference

# The agent's kind judges its settings (a `python` agent names registered functions, an `http`
# agent a backend URL the hub may call, ...); the settings forms and the API judge by it too.
validate_executor_settings = kinds.check_settings

# Stands in for the skills of an agent that has none yet, so the agent's own fields can be
# judged before its skills exist; the skill formset insists on a real one.
PLACEHOLDER_SKILL = Skill(skill_id="placeholder", name="placeholder", description="-", tags=["x"])


def true_mode_labels(field: Any) -> None:
    """Execution modes named as this hub runs them (no Celery on an embedded hub)."""
    field.choices = [(mode, kinds.mode_label(mode, label)) for mode, label in field.choices]


class AgentForm(forms.ModelForm):
    """The agent's fields as plain inputs; its executor settings as the chosen kind's form (its
    fields prefixed `settings-<kind>`), or, from scripts, a raw `executor_settings` object."""

    extensions = ExtensionsField(
        required=False, help_text="Protocol extensions the agent supports; each needs a URI."
    )
    default_input_modes = MediaTypesField(
        initial=default_modes,
        help_text="Media types the agent accepts, unless a skill says otherwise.",
    )
    default_output_modes = MediaTypesField(
        initial=default_modes,
        help_text="Media types the agent answers with, unless a skill says otherwise.",
    )
    security_schemes = SchemesField(
        required=False,
        help_text="Where callers may put a credential, as the card tells them. The hub's own "
        "OAuth2 server is offered by “Require an OAuth2 token” (who may call it).",
    )
    security_requirements = RequirementsField(
        required=False,
        label="Callers must present",
        help_text="Any one of those ticked (its scheme must be offered above); none ticked: "
        "the card asks for no credential.",
    )
    executor_settings = ExecutorSettingsField(required=False, label="Settings")

    # Off for the live preview: it judges the form at each change and must not fetch cards.
    checks_remote_card = True

    class Meta:
        model = Agent
        fields = [
            "slug", "name", "description", "version", "enabled", "public", "owner",
            "provider_organization", "provider_url", "icon_url", "documentation_url",
            "streaming", "push_notifications", "extended_card", "sign_card",
            "extensions", "default_input_modes", "default_output_modes", "security_schemes",
            "security_requirements", "executor_kind", "executor_settings", "execution_mode",
            "max_concurrent_tasks", "requests_per_minute", "max_message_bytes",
            "task_timeout_seconds",
        ]  # fmt: skip
        labels = {"oauth2": "Require an OAuth2 token from the hub"}
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent = self.instance
        if "security_schemes" in self.fields:
            self.fields["security_schemes"].set_stored(agent.security_schemes)  # type: ignore[attr-defined]
        if "security_requirements" in self.fields:
            requirements = self.fields["security_requirements"]
            requirements.set_stored(agent.security_schemes, agent.security_requirements)  # type: ignore[attr-defined]
        if "execution_mode" in self.fields:
            true_mode_labels(self.fields["execution_mode"])
        self.stored_kind = agent.executor_kind
        stored = agent.executor_settings
        self.stored_settings = dict(stored) if isinstance(stored, dict) else {}
        self.raw_settings = self.is_bound and "executor_settings" in self.data
        self.selected_kind = str(self.data.get("executor_kind", "")) if self.is_bound else ""
        self.selected_kind = self.selected_kind or self.stored_kind
        self.settings_forms = self.make_settings_forms()
        if "executor_settings" in self.fields:
            self.fields["executor_settings"].widget.forms = self.executor_forms  # type: ignore[attr-defined]

    def make_settings_forms(self) -> dict[str, Any]:
        made = {}
        for kind, form_class in settings_forms().items():
            prefix = f"settings-{kind}"
            if self.is_bound and not self.raw_settings and kind == self.selected_kind:
                made[kind] = form_class(self.data, prefix=prefix)
            else:
                stored = self.stored_settings if kind == self.stored_kind else None
                made[kind] = form_class.from_settings(stored, prefix=prefix)
        return made

    @property
    def executor_forms(self) -> list[tuple[str, Any, bool]]:
        """(kind, its settings form, whether it is the selected kind), for the page."""
        return [(k, f, k == self.selected_kind) for k, f in self.settings_forms.items()]

    def clean_extensions(self) -> list[dict[str, Any]]:
        # Parameters are not typed in the rows: an extension keeps those it had.
        params = {
            ext.get("uri"): ext["params"]
            for ext in self.instance.declared_extensions()
            if ext.get("params")
        }
        extensions: list[dict[str, Any]] = self.cleaned_data["extensions"]
        for ext in extensions:
            if ext["uri"] in params:
                ext["params"] = params[ext["uri"]]
        return extensions

    def apply_settings_form(self) -> None:
        """The selected kind's settings form decides the settings (raw JSON posts aside)."""
        if not self.is_bound or self.raw_settings or "executor_settings" not in self.fields:
            return
        kind = str(self.cleaned_data.get("executor_kind"))
        settings_form = self.settings_forms.get(kind)
        if settings_form is not None and not settings_form.is_valid():
            # Shown next to its fields; listed here too, for the admin and the live preview.
            self.errors.pop("executor_settings", None)
            for field, messages in settings_form.errors.items():
                label = settings_form.fields[field].label if field in settings_form.fields else ""
                for message in messages:
                    self.add_error("executor_settings", f"{label}: {message}" if label else message)
            return
        stored = self.stored_settings if kind == self.stored_kind else None
        settings = settings_form.settings(stored) if settings_form else {}
        self.cleaned_data["executor_settings"] = self.instance.executor_settings = settings

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self.apply_settings_form()
        if self.errors:
            return cleaned
        agent = construct_instance(self, self.instance)
        try:
            validate_executor_settings(agent.executor_kind, agent.executor_settings or {})
        except ValidationError as exc:
            self.add_error("executor_settings", exc)
        else:
            self.check_card_signature(agent)
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

    def check_card_signature(self, agent: Agent) -> None:
        """A kind that fronts a remote card (a2a-remote) has its signature checked when the
        agent is saved with a new card URL, or with one not verified while signatures are
        required. Each turn reads the card again; saving is the door that is checked."""
        if not self.checks_remote_card:
            return
        settings = agent.executor_settings or {}
        stored = self.stored_settings if agent.executor_kind == self.stored_kind else {}
        unchanged = agent.pk is not None and settings.get("card_url") == stored.get("card_url")
        if unchanged and not card_trust.must_check_again(agent):
            return
        trust = kinds.check_card(agent.executor_kind, settings)
        if trust is None:
            return
        try:
            card_trust.require(trust)
        except card_trust.UntrustedCard as exc:
            self.add_error("executor_settings", str(exc))
            return
        card_trust.record(agent, trust)

    def add_card_errors(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        for field, errors in exc.error_dict.items():
            target = field if field in self.fields and field != "skills" else None
            self.add_error(target, errors)


class SkillForm(forms.ModelForm):
    """A skill's fields as plain inputs: tag chips, one example a line, media-type boxes."""

    tags = StringListField(help_text="Keywords: type them separated by commas, or press Enter.")
    examples = LinesField(required=False, help_text="Prompts a caller might send, one a line.")
    input_modes = MediaTypesField(required=False, help_text="None ticked: the agent's defaults.")
    output_modes = MediaTypesField(required=False, help_text="None ticked: the agent's defaults.")
    security_requirements = RequirementsField(
        required=False,
        label="Callers must present",
        help_text="For this skill, any one of those ticked; none: the agent's rule.",
    )

    class Meta:
        model = Skill
        fields = [
            "skill_id", "name", "position", "description", "tags", "examples",
            "input_modes", "output_modes", "security_requirements", "extended_only",
        ]  # fmt: skip
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, schemes: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "security_requirements" in self.fields:
            requirements = self.fields["security_requirements"]
            requirements.set_stored(schemes, self.instance.security_requirements)  # type: ignore[attr-defined]


class SkillFormSet(forms.BaseInlineFormSet):
    """Checks the whole card once the skills are known: an agent needs at least one skill."""

    def get_form_kwargs(self, index: int | None) -> dict[str, Any]:
        # The agent's own schemes may be named by a skill's requirements.
        return super().get_form_kwargs(index) | {"schemes": self.instance.security_schemes}

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
