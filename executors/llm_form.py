"""The `llm` kind's settings form: the model server, the model (with a button that asks the
server for its models), instructions, tuning, the API key as a write-only secret, hosted
agents to offer as tools (ticked from those enabled) and MCP servers as rows (a URL and a
write-only bearer token).

Secrets are sealed (`a2ahub.sealed`) as the form turns into settings and never shown back: a
blank secret keeps the stored one (for an MCP server, the one stored with the same URL).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.urls import NoReverseMatch, reverse

from a2ahub import sealed
from agents.inputs import Column, RowsWidget, filled
from agents.models import Agent
from executors import llm
from executors.settings_form_base import ExecutorSettingsForm, seconds_field

CHECK_URL_NAME = "developers:llm-check"
STORED = "(stored: leave blank to keep)"


class ModelInput(forms.TextInput):
    """The model's name, with a "check" button that asks the server for its models."""

    template_name = "agents/widgets/llm_model.html"

    class Media:
        js = ["developers/llm-check.js"]

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        try:
            context["check_url"] = reverse(CHECK_URL_NAME)
        except NoReverseMatch:
            context["check_url"] = ""
        return context


def mcp_columns(stored: bool = False) -> list[Column]:
    return [
        Column("url", "Streamable HTTP URL", placeholder="https://tools.example/mcp"),
        Column("token", "Bearer token", kind="password",
               placeholder=STORED if stored else "optional"),
    ]  # fmt: skip


# A row's token cell holds this in place of a token typed into a refused form; a password
# cell renders no value, so it is never on the page either.
TYPED = "typed"


def typed_token(token: Any) -> bool:
    return isinstance(token, str) and bool(token) and not sealed.is_sealed(token)


class McpServersField(forms.Field):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(widget=RowsWidget(mcp_columns(), "Add an MCP server"), **kwargs)

    def prepare_value(self, value: Any) -> Any:
        """Tokens are never shown: a stored one (sealed) is left out, and one typed into a
        refused form only marked, so that its row asks for it again."""
        if isinstance(value, list):
            return [
                {"url": s.get("url", ""), "token": TYPED if typed_token(s.get("token")) else ""}
                for s in value if isinstance(s, dict)
            ]  # fmt: skip
        return value

    def to_python(self, value: Any) -> list[dict[str, str]]:
        if value in (None, ""):
            return []
        servers = []
        for number, row in filled(value):
            url = row.get("url", "")
            if not url:
                raise ValidationError(f"Row {number}: give the server's URL.")
            servers.append({"url": url, "token": row.get("token", "")})
        return servers


def agent_choices() -> list[tuple[str, str]]:
    agents = Agent.objects.filter(enabled=True).order_by("slug").values_list("slug", "name")
    return [(slug, f"{slug} ({name})") for slug, name in agents]


class LlmSettingsForm(ExecutorSettingsForm):
    kind = "llm"
    keys = (
        "base_url", "model", "instructions", "temperature", "max_tokens", "max_steps", "timeout",
        "api_key", "api_key_env", "agents", "mcp_servers",
    )  # fmt: skip

    base_url = forms.URLField(
        label="Model server", max_length=2000, assume_scheme="https",
        help_text="Its OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1 (Ollama), "
        "http://vllm:8000/v1 (vLLM) or https://api.openai.com/v1.",
        widget=forms.URLInput(attrs={"placeholder": "http://127.0.0.1:11434/v1"}),
    )  # fmt: skip
    model = forms.CharField(
        label="Model", max_length=200, widget=ModelInput(attrs={"placeholder": "llama3.2"}),
        help_text="The model's name on that server; “Check the server” lists them.",
    )  # fmt: skip
    instructions = forms.CharField(
        label="Instructions", required=False, max_length=llm.MOST_INSTRUCTIONS,
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": "You are a helpful assistant."}),
        help_text="The system message: who the agent is and how it answers.",
    )  # fmt: skip
    api_key = forms.CharField(
        label="API key", required=False, max_length=500, strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored sealed and never shown again. Blank: no key (Ollama, vLLM need none).",
    )  # fmt: skip
    forget_api_key = forms.BooleanField(label="Remove the stored API key", required=False)
    api_key_env = forms.CharField(
        label="…or the environment variable holding it", required=False, max_length=128,
        widget=forms.TextInput(attrs={"placeholder": "OPENAI_API_KEY"}),
    )  # fmt: skip
    agents = forms.MultipleChoiceField(
        label="Hosted agents it may call", required=False, widget=forms.CheckboxSelectMultiple,
        help_text="Each is offered to the model as a tool; calls run as this agent.",
    )  # fmt: skip
    mcp_servers = McpServersField(
        label="MCP servers", required=False,
        help_text="Their tools are offered to the model (Streamable HTTP).",
    )  # fmt: skip
    temperature = forms.FloatField(
        label="Temperature", required=False, min_value=0, max_value=2,
        widget=forms.NumberInput(attrs={"step": "any"}), help_text="Blank: the server's default.",
    )  # fmt: skip
    max_tokens = forms.IntegerField(
        label="Max tokens", required=False, min_value=1, max_value=llm.MOST_TOKENS,
        help_text="The longest answer per model call; blank: the server's default.",
    )  # fmt: skip
    max_steps = forms.IntegerField(
        label="Tool rounds", min_value=0, max_value=llm.MOST_STEPS, initial=llm.DEFAULT_MAX_STEPS,
        help_text="How many times a turn may call tools before it must answer.",
    )  # fmt: skip
    timeout = seconds_field(
        "Timeout (seconds)", llm.MIN_TIMEOUT, llm.MAX_TIMEOUT, llm.DEFAULT_TIMEOUT,
        "For each model call and each MCP tool call.",
    )  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = agent_choices()
        known = {slug for slug, _ in choices}
        picked = self.initial.get("agents") or []
        choices += [(slug, f"{slug} (not enabled)") for slug in picked if slug not in known]
        self.fields["agents"].choices = choices  # type: ignore[attr-defined]
        if self.initial.get("has_api_key"):
            self.fields[
                "api_key"
            ].help_text = "A key is stored (sealed, never shown). Type a new one to replace it."
            self.fields["api_key"].widget.attrs["placeholder"] = STORED
        elif not self.is_bound:
            # Nothing stored to remove (a new agent's page). A posted form keeps the box: it
            # is bound without knowing whether the agent has a key.
            del self.fields["forget_api_key"]
        if any(s.get("token") for s in self.initial.get("stored_servers", [])):
            self.fields["mcp_servers"].widget.columns = mcp_columns(stored=True)  # type: ignore[attr-defined]

    @classmethod
    def initial_from(cls, settings: dict[str, Any]) -> dict[str, Any]:
        initial = {k: settings[k] for k in cls.keys if k in settings and k != "api_key"}
        initial["has_api_key"] = bool(settings.get("api_key"))
        servers = settings.get("mcp_servers")
        initial["stored_servers"] = servers if isinstance(servers, list) else []
        return initial

    def clean_api_key_env(self) -> str:
        name: str = self.cleaned_data["api_key_env"]
        if name and not llm.ENV_NAME.match(name):
            raise forms.ValidationError(
                "The name of an environment variable: letters, digits and underscores, not "
                "starting with a digit (OPENAI_API_KEY, say)."
            )
        return name

    def clean_mcp_servers(self) -> list[dict[str, str]]:
        servers: list[dict[str, str]] = self.cleaned_data["mcp_servers"]
        llm.validate_mcp_servers([{"url": s["url"]} for s in servers])  # refused when saved
        return servers

    @cached_property
    def sealed_key(self) -> str:
        """The typed key, sealed once however often the settings are made."""
        typed = self.cleaned_data.get("api_key") or ""
        return sealed.seal(typed) if typed else ""

    def to_settings(self) -> dict[str, Any]:
        data = self.cleaned_data
        out: dict[str, Any] = {
            "base_url": data["base_url"], "model": data["model"].strip(),
            "instructions": data.get("instructions") or "", "max_steps": data["max_steps"],
            "timeout": data["timeout"], "agents": list(data.get("agents") or []),
            "mcp_servers": [
                {"url": s["url"], **({"token": sealed.seal(s["token"])} if s["token"] else {})}
                for s in data.get("mcp_servers") or []
            ],
        }  # fmt: skip
        for key in ("temperature", "max_tokens"):
            if data.get(key) is not None:
                out[key] = data[key]
        if data.get("api_key_env"):
            out["api_key_env"] = data["api_key_env"]
        if self.sealed_key:
            out["api_key"] = self.sealed_key
        return out

    def settings(self, stored: dict[str, Any] | None = None) -> dict[str, Any]:
        """A blank secret keeps the stored one (unless the form says to remove it)."""
        stored = stored or {}
        result = super().settings(stored)
        if (
            "api_key" not in result
            and stored.get("api_key")
            and not self.cleaned_data.get("forget_api_key")
        ):
            result["api_key"] = stored["api_key"]
        tokens = {
            s.get("url"): s.get("token")
            for s in stored.get("mcp_servers") or [] if isinstance(s, dict) and s.get("token")
        }  # fmt: skip
        for server in result["mcp_servers"]:
            if "token" not in server and tokens.get(server["url"]):
                server["token"] = tokens[server["url"]]
        return result
