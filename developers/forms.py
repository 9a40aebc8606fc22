"""The developer's forms: the admin's agent form and skill formset, cut to what an owner sets.

Validation is the admin's own (both card versions through the official SDK, executor
settings); only the field lists, widgets and the key form live here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.forms.models import inlineformset_factory

from agents.forms import AgentForm, SkillFormSet
from agents.models import Agent, Skill

if TYPE_CHECKING:
    from django.forms import BaseInlineFormSet


def json_area(rows: int, placeholder: str) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows, "class": "json", "placeholder": placeholder})


class DeveloperAgentForm(AgentForm):
    """Everything on the card plus the executor; enabling, listing and limits stay operators'."""

    class Meta(AgentForm.Meta):
        fields = [
            "slug", "name", "description", "version",
            "provider_organization", "provider_url", "icon_url", "documentation_url",
            "default_input_modes", "default_output_modes",
            "streaming", "push_notifications", "extended_card", "extensions",
            "security_schemes", "security_requirements",
            "executor_kind", "executor_settings",
        ]  # fmt: skip
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3}),
            "default_input_modes": json_area(1, '["text/plain"]'),
            "default_output_modes": json_area(1, '["text/plain"]'),
            "extensions": json_area(2, "[]"),
            "security_schemes": json_area(
                3, '{"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}'
            ),
            "security_requirements": json_area(2, '[{"apiKey": []}]'),
            "executor_settings": json_area(2, "{}"),
        }


class DeveloperSkillForm(forms.ModelForm):
    class Meta:
        model = Skill
        fields = [
            "skill_id", "name", "description", "tags", "examples",
            "input_modes", "output_modes", "extended_only",
        ]  # fmt: skip
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "tags": json_area(1, '["greeting", "demo"]'),
            "examples": json_area(1, '["hello"]'),
            "input_modes": json_area(1, "[] (the agent's defaults)"),
            "output_modes": json_area(1, "[] (the agent's defaults)"),
        }


if TYPE_CHECKING:
    SkillForms = BaseInlineFormSet[Skill, Agent, DeveloperSkillForm]

DeveloperSkillFormSet = inlineformset_factory(
    Agent,
    Skill,
    form=DeveloperSkillForm,
    formset=SkillFormSet,
    extra=1,
    can_delete=True,
)


def bind_agent_forms(data: Any, agent: Agent | None) -> tuple[DeveloperAgentForm, SkillForms, bool]:
    """Both forms bound to `data` and whether both are valid; the formset judges the card
    with the agent as the form left it (unsaved), as the admin does."""
    form = DeveloperAgentForm(data, instance=agent)
    form_valid = form.is_valid()
    formset = DeveloperSkillFormSet(data, instance=form.instance, prefix="skills")
    formset_valid = formset.is_valid()
    return form, formset, form_valid and formset_valid


def kept_skills(formset: SkillForms) -> list[Skill]:
    """The skills the formset will keep, in the order shown, numbered by that order."""
    skills: list[Skill] = []
    for form in formset.forms:
        if form.cleaned_data and not form.cleaned_data.get("DELETE"):
            form.instance.position = len(skills)
            skills.append(form.instance)
    return skills


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        help_text="Who or what will use it, e.g. “my laptop” or “CI”.",
        widget=forms.TextInput(attrs={"placeholder": "my laptop"}),
    )
