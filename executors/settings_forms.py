"""One small form per executor kind that has settings: fields instead of a raw JSON box.

Each form starts from an agent's `executor_settings` (`from_settings`), and turns its cleaned
data back into that dict (`settings`); the rules are the ones agents.forms applies to the raw
dict (the same validators and the executors' own limits), so both ways judge alike. Kinds
without settings (conformance) have no form: `settings_form_for` answers None.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import escape

from agents.inputs import Column, RowsWidget, filled
from agents.models import slug_validator
from executors import echo, http, interview, remote, slow
from executors.http import validate_http_settings
from executors.llm_form import LlmSettingsForm
from executors.python import validate_python_settings
from executors.remote import validate_remote_settings
from executors.settings_form_base import ExecutorSettingsForm, seconds_field

ANY_SKILL = "*"  # function_names' key for a single {"function": name}


def check_url_field(validator: Any, key: str, value: str) -> str:
    """One URL judged by the kind's own validator (other keys at their valid defaults)."""
    validator({key: value})
    return value


class HttpSettingsForm(ExecutorSettingsForm):
    kind = "http"
    keys = ("url", "timeout", "retries")

    url = forms.URLField(
        label="Backend URL", max_length=2000, assume_scheme="https",
        help_text="The hub POSTs each message here (a public http(s) address).",
        widget=forms.URLInput(attrs={"placeholder": "https://backend.example/a2a"}),
    )  # fmt: skip
    timeout = seconds_field(
        "Timeout (seconds)", http.MIN_TIMEOUT, http.MAX_TIMEOUT, http.DEFAULT_TIMEOUT,
        f"Per attempt, from {http.MIN_TIMEOUT:g} to {http.MAX_TIMEOUT:g}.",
    )  # fmt: skip
    retries = forms.IntegerField(
        label="Retries", min_value=0, max_value=http.MAX_RETRIES, initial=http.DEFAULT_RETRIES,
        help_text=f"Further attempts after a failure, 0 to {http.MAX_RETRIES}.",
    )  # fmt: skip

    def clean_url(self) -> str:
        return check_url_field(validate_http_settings, "url", self.cleaned_data["url"])


class RemoteSettingsForm(ExecutorSettingsForm):
    kind = "a2a-remote"
    keys = ("card_url", "timeout")

    card_url = forms.URLField(
        label="Card URL", max_length=2000, assume_scheme="https",
        help_text="The remote agent's card, e.g. https://agent.example/.well-known/agent-card.json.",
        widget=forms.URLInput(
            attrs={"placeholder": "https://agent.example/.well-known/agent-card.json"}
        ),
    )  # fmt: skip
    timeout = seconds_field(
        "Timeout (seconds)", remote.MIN_TIMEOUT, remote.MAX_TIMEOUT, remote.DEFAULT_TIMEOUT,
        f"How long one turn may take, from {remote.MIN_TIMEOUT:g} to {remote.MAX_TIMEOUT:g}.",
    )  # fmt: skip

    def clean_card_url(self) -> str:
        return check_url_field(validate_remote_settings, "card_url", self.cleaned_data["card_url"])


def registered_functions() -> list[str]:
    from executors.python import REGISTRY

    return sorted(REGISTRY)


def function_columns() -> list[Column]:
    names = registered_functions()
    return [
        Column("skill", "Skill id", placeholder="a skill's id, or * for every skill",
               suggestions=[ANY_SKILL]),
        Column("function", "Function", kind="select", choices=[(n, n) for n in names]),
    ]  # fmt: skip


class FunctionsField(forms.Field):
    """Which registered function serves each skill, one row a skill: the skill's id (or `*`
    for every skill) and a function picked from those registered."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(widget=RowsWidget(function_columns(), "Add a row"), **kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return [{"skill": skill, "function": name} for skill, name in value.items()]
        return value

    def to_python(self, value: Any) -> dict[str, str]:
        mapping: dict[str, str] = {}
        for number, row in filled(value):
            skill, name = row.get("skill", ""), row.get("function", "")
            if not skill or not name:
                raise ValidationError(f"Row {number}: give both the skill id and the function.")
            if skill in mapping:
                raise ValidationError(f"Row {number}: skill {skill} is named twice.")
            mapping[skill] = name
        return mapping


class PythonSettingsForm(ExecutorSettingsForm):
    """One row per skill: its id (`*`: every skill) and the registered function serving it."""

    kind = "python"
    keys = ("functions", "function")

    functions = FunctionsField(label="Functions")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = registered_functions()
        # Modules may register functions after this module was imported: offer today's.
        self.fields["functions"].widget.columns = function_columns()  # type: ignore[attr-defined]
        known = ", ".join(f"<code>{escape(name)}</code>" for name in names) or "none yet"
        self.fields["functions"].help_text = (
            "One row per skill: its id and the function that answers it; "
            f"<code>*</code> serves every skill. Registered functions: {known}."
        )

    @classmethod
    def initial_from(cls, settings: dict[str, Any]) -> dict[str, Any]:
        from executors.python import function_names

        names = function_names(settings)
        return {"functions": names} if names else {}

    def clean_functions(self) -> dict[str, str]:
        mapping: dict[str, str] = self.cleaned_data["functions"]
        validate_python_settings({"functions": mapping})
        return mapping

    def to_settings(self) -> dict[str, Any]:
        mapping: dict[str, str] = self.cleaned_data["functions"]
        if list(mapping) == [ANY_SKILL]:
            return {"function": mapping[ANY_SKILL]}
        return {"functions": mapping}


class EchoSettingsForm(ExecutorSettingsForm):
    kind = "echo"
    keys = ("chunks",)

    chunks = forms.IntegerField(
        label="Chunks", min_value=1, max_value=echo.MAX_CHUNKS, required=False,
        help_text="How many pieces the echoed artifact is streamed in (blank: one).",
    )  # fmt: skip

    def to_settings(self) -> dict[str, Any]:
        chunks = self.cleaned_data.get("chunks")
        return {"chunks": chunks} if chunks else {}


class WriterSettingsForm(ExecutorSettingsForm):
    kind = "writer"
    keys = ("delay",)

    delay = seconds_field("Delay (seconds)", 0.0, 10.0, 0.2, "The pause between streamed chunks.")


class SlowSettingsForm(ExecutorSettingsForm):
    kind = "slow"
    keys = ("seconds", "step")

    seconds = seconds_field(
        "Seconds", 0.0, slow.MAX_SECONDS, 5.0,
        "How long it works when the message names no number of seconds.",
    )  # fmt: skip
    step = seconds_field("Step (seconds)", 0.1, 60.0, 1.0, "How often it reports progress.")


class InterviewSettingsForm(ExecutorSettingsForm):
    kind = "interview"
    keys = ("question",)

    question = forms.CharField(
        max_length=500, initial=interview.DEFAULT_QUESTION,
        help_text="What it asks before it answers.",
    )  # fmt: skip


class OrchestratorSettingsForm(ExecutorSettingsForm):
    kind = "orchestrator"
    keys = ("agents",)

    agents = forms.CharField(
        label="Agents",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "echo\ntoolbox"}),
        help_text="The slugs of the hosted agents it sends sub-tasks to, one a line.",
    )

    @classmethod
    def initial_from(cls, settings: dict[str, Any]) -> dict[str, Any]:
        agents = settings.get("agents")
        return {"agents": "\n".join(map(str, agents))} if isinstance(agents, list) else {}

    def clean_agents(self) -> list[str]:
        slugs = [line.strip() for line in self.cleaned_data["agents"].splitlines()]
        slugs = [slug for slug in slugs if slug]
        for slug in slugs:
            try:
                slug_validator(slug)
            except ValidationError as exc:
                raise ValidationError(f"{slug}: {' '.join(exc.messages)}") from exc
        return slugs


SETTINGS_FORMS: dict[str, type[ExecutorSettingsForm]] = {
    form.kind: form
    for form in (
        EchoSettingsForm, HttpSettingsForm, RemoteSettingsForm, PythonSettingsForm,
        WriterSettingsForm, SlowSettingsForm, InterviewSettingsForm, OrchestratorSettingsForm,
        LlmSettingsForm,
    )
}  # fmt: skip


def settings_form_for(kind: str) -> type[ExecutorSettingsForm] | None:
    """The settings form of an executor kind, or None for a kind without settings."""
    return SETTINGS_FORMS.get(kind)
