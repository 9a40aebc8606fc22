"""The base of every executor kind's settings form (`executors.settings_forms` lists them)."""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError

from agents.forms import validate_executor_settings


class ExecutorSettingsForm(forms.Form):
    """A kind's settings as fields. Subclasses name their `kind`, the `keys` of the dict they
    own (other keys already stored, e.g. an import's sync time, are kept) and convert."""

    kind: ClassVar[str] = ""
    keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_settings(cls, settings: dict[str, Any] | None, **kwargs: Any) -> ExecutorSettingsForm:
        """An unbound form showing `settings` (the fields' defaults where a key is missing)."""
        return cls(initial=cls.initial_from(settings or {}), **kwargs)

    @classmethod
    def initial_from(cls, settings: dict[str, Any]) -> dict[str, Any]:
        return {key: settings[key] for key in cls.keys if key in settings}

    def to_settings(self) -> dict[str, Any]:
        return {key: self.cleaned_data[key] for key in self.keys}

    def settings(self, stored: dict[str, Any] | None = None) -> dict[str, Any]:
        """The executor_settings to store (valid forms only): `stored`'s other keys, then ours."""
        kept = {k: v for k, v in (stored or {}).items() if k not in self.keys}
        return kept | self.to_settings()

    def clean(self) -> dict[str, Any]:
        """The dict as a whole, by the raw JSON field's rules (fields' own errors come first)."""
        cleaned = super().clean() or {}
        if not self.errors:
            try:
                validate_executor_settings(self.kind, self.to_settings())
            except ValidationError as exc:
                self.add_error(None, exc)
        return cleaned


def seconds_field(label: str, low: float, high: float, default: float, hint: str) -> forms.Field:
    return forms.FloatField(
        label=label, min_value=low, max_value=high, initial=default, help_text=hint,
        widget=forms.NumberInput(attrs={"step": "any"}),
    )  # fmt: skip
