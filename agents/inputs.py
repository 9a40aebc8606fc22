"""Inputs for the card fields an agent stores as JSON but a person types as plain values: tag
chips, one-a-line lists, media-type checkboxes, repeatable rows and a security-scheme picker.

Each field turns what was typed into the list or dict the model stores and shows a stored value
back in the same inputs; bad input is an error on that field, naming what is wrong."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from a2ahub import nesting

NUL = "\x00"  # PostgreSQL refuses it in text: said as a field error instead of failing
MOST_ROWS = 100


class InputsMedia:
    js = ["agents/inputs.js"]
    css = {"all": ["agents/inputs.css"]}


def no_nul(text: str) -> str:
    if NUL in text:
        raise ValidationError("Null characters are not allowed.")
    return text


def list_changed(field: forms.Field, initial: Any, data: Any) -> bool:
    """Whether `data` says other than `initial`, both as lists (no value is an empty list)."""
    try:
        return list(initial or []) != field.to_python(data)
    except ValidationError:
        return True


class ChipsInput(forms.TextInput):
    """A text input the page's script shows as chips; without the script, plain commas work."""

    Media = InputsMedia

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"data-chips": "", "autocomplete": "off"} | (attrs or {}))

    def format_value(self, value: Any) -> str | None:
        return ", ".join(value) if isinstance(value, list) else super().format_value(value)


class LinesInput(forms.Textarea):
    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"rows": 2} | (attrs or {}))

    def format_value(self, value: Any) -> str | None:
        return "\n".join(value) if isinstance(value, list) else super().format_value(value)


class StringListField(forms.Field):
    """Words separated by commas or lines (`text, fun` is two), each kept once, in order."""

    widget: type[forms.Widget] = ChipsInput
    separators = r"[,\n]"
    most = 50

    def to_python(self, value: Any) -> list[str]:
        if isinstance(value, list):
            return [str(item) for item in value]
        items = (part.strip() for part in re.split(self.separators, no_nul(str(value or ""))))
        found = list(dict.fromkeys(item for item in items if item))
        if len(found) > self.most:
            raise ValidationError(f"Give at most {self.most}.")
        return found

    def has_changed(self, initial: Any, data: Any) -> bool:
        return list_changed(self, initial, data)


class LinesField(StringListField):
    """One item a line (commas are kept: an example may be a sentence)."""

    widget = LinesInput
    separators = r"\n"


# --- media types --------------------------------------------------------------------------

COMMON_MEDIA_TYPES = (
    "text/plain", "text/markdown", "text/html", "application/json", "image/png", "image/jpeg",
    "application/pdf", "application/octet-stream", "*/*",
)  # fmt: skip
# Loose on purpose: cards in the wild (and so imported agents) say "text" or "audio"; a space
# is what a typo looks like, a parameter aside ("text/plain; charset=utf-8").
MEDIA_TYPE = re.compile(r"^[^\s,;\x00\[\]{}\"']+(\s*;\s*[\w.+-]+=\S+)*$")


class MediaTypesWidget(forms.Widget):
    """A checkbox per common media type and a text input for any other (comma-separated)."""

    template_name = "agents/widgets/media_types.html"
    Media = InputsMedia

    def value_from_datadict(self, data: Any, files: Any, name: str) -> list[str]:
        checked = data.getlist(name) if hasattr(data, "getlist") else data.get(name) or []
        checked = [checked] if isinstance(checked, str) else list(checked)
        other = str(data.get(f"{name}_other") or "")
        return checked + [part.strip() for part in other.split(",") if part.strip()]

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data and f"{name}_other" not in data

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        chosen = [str(v) for v in value] if isinstance(value, list) else []
        context["widget"]["options"] = [(t, t in chosen) for t in COMMON_MEDIA_TYPES]
        context["widget"]["other"] = ", ".join(t for t in chosen if t not in COMMON_MEDIA_TYPES)
        return context


class MediaTypesField(forms.Field):
    widget = MediaTypesWidget

    def to_python(self, value: Any) -> list[str]:
        types = [no_nul(str(item).strip()) for item in (value or []) if str(item).strip()]
        bad = [t for t in types if not MEDIA_TYPE.match(t)]
        if bad:
            raise ValidationError(
                f"Not a media type: {', '.join(bad)} (write them like audio/mpeg, comma-separated)."
            )
        return list(dict.fromkeys(types))

    def has_changed(self, initial: Any, data: Any) -> bool:
        return list_changed(self, initial, data)


# --- repeatable rows ----------------------------------------------------------------------


@dataclass
class Column:
    key: str
    label: str
    kind: str = "text"  # text, password (never shown back), checkbox or select
    placeholder: str = ""
    choices: list[tuple[str, str]] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)  # offered as a datalist

    @property
    def choice_values(self) -> list[str]:
        return [value for value, _ in self.choices]


class RowsWidget(forms.Widget):
    """A table of rows (`<name>-<n>-<column>`), one more added by a button; each row's values
    come back as a dict of strings, a checkbox as "on"."""

    template_name = "agents/widgets/rows.html"
    Media = InputsMedia

    def __init__(self, columns: list[Column], add_label: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.columns = columns
        self.add_label = add_label

    def value_from_datadict(self, data: Any, files: Any, name: str) -> list[dict[str, str]]:
        pattern = re.compile(rf"^{re.escape(name)}-(\d{{1,4}})-(\w+)$")
        keys = {column.key for column in self.columns}
        rows: dict[int, dict[str, str]] = {}
        for key in data:
            match = pattern.match(key)
            if match and match[2] in keys:
                rows.setdefault(int(match[1]), {})[match[2]] = str(data.get(key) or "")
        return [rows[n] for n in sorted(rows)]

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return not any(str(key).startswith(f"{name}-") for key in data)

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        rows = [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []
        context["widget"].update(
            columns=self.columns,
            add_label=self.add_label,
            rows=[self.cells(name, str(n), row) for n, row in enumerate(rows or [{}])],
            blank=self.cells(name, "__row__", {}),
        )
        return context

    def cells(self, name: str, index: str, row: dict[str, Any]) -> list[dict[str, Any]]:
        cells = []
        for column in self.columns:
            value = row.get(column.key, "")
            cells.append({
                "column": column, "name": f"{name}-{index}-{column.key}",
                "id": f"id_{name}-{index}-{column.key}", "value": "" if value is None else value,
                "checked": value in (True, "on", "true"),
                "list": f"{name}-{column.key}-suggestions" if column.suggestions else "",
            })  # fmt: skip
        return cells


def filled(rows: Any) -> list[tuple[int, dict[str, str]]]:
    """The rows something was typed in, numbered as shown (from 1)."""
    if not isinstance(rows, list):
        raise ValidationError("Fill in the rows.")
    if len(rows) > MOST_ROWS:
        raise ValidationError(f"At most {MOST_ROWS} rows.")
    found = []
    for number, row in enumerate(rows, start=1):
        texts = {k: no_nul(str(v)).strip() for k, v in row.items() if k != "required"}
        if any(texts.values()):
            found.append((number, texts | {"required": str(row.get("required", ""))}))
    return found


class ExtensionsField(forms.Field):
    """The card's extensions as rows: URI, description, required."""

    def __init__(self, **kwargs: Any) -> None:
        columns = [
            Column("uri", "URI", placeholder="https://example.com/ext/citations/v1"),
            Column("description", "Description", placeholder="What it adds"),
            Column("required", "Required", kind="checkbox"),
        ]
        kwargs.setdefault("widget", RowsWidget(columns, "Add an extension"))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [
            {"uri": ext.get("uri", ""), "description": ext.get("description", ""),
             "required": "on" if ext.get("required") else ""}
            for ext in value if isinstance(ext, dict)
        ]  # fmt: skip

    def to_python(self, value: Any) -> list[dict[str, Any]]:
        extensions = []
        for number, row in filled(value):
            uri = row.get("uri", "")
            if not uri or any(c.isspace() for c in uri) or ":" not in uri:
                raise ValidationError(f"Row {number}: give the extension's URI (like https://…).")
            extension: dict[str, Any] = {"uri": uri}
            if row.get("description"):
                extension["description"] = row["description"]
            extension["required"] = row["required"] in ("on", "true", "1")
            extensions.append(extension)
        return extensions


# --- security schemes ---------------------------------------------------------------------

# The ways the hub itself takes a credential (agents.principals); the hub's OAuth2 server is
# named by the "Require an OAuth2 token" switch instead, with its token URL and scopes.
SHORT_NAMES = {"apiKey": "API key", "bearer": "Bearer token"}
SCHEME_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "apiKey": (
        "API key in the X-API-Key header",
        {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    ),
    "bearer": (
        "Bearer token in the Authorization header",
        {"type": "http", "scheme": "bearer"},
    ),
}


def scheme_label(name: str, scheme: Any) -> str:
    if name in SCHEME_PRESETS and scheme == SCHEME_PRESETS[name][1]:
        return f"{SCHEME_PRESETS[name][0]} ({name})"
    kind = scheme.get("type", "?") if isinstance(scheme, dict) else "?"
    return f"{name} ({kind}, as stored)"


class StoredChoicesField(forms.MultipleChoiceField):
    """Boxes to tick, offered from what the agent stores (`set_stored`); a stored value is
    shown, and compared, as the keys of its boxes (`prepare_value`)."""

    widget = forms.CheckboxSelectMultiple

    def has_changed(self, initial: Any, data: Any) -> bool:
        return super().has_changed(self.prepare_value(initial), data)


class SchemesField(StoredChoicesField):
    """The schemes the card offers, picked from the hub's own and those already stored (an
    imported card's are kept as they are)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.set_stored({})

    def set_stored(self, stored: Any) -> None:
        self.stored = {k: v for k, v in stored.items()} if isinstance(stored, dict) else {}
        names = list(SCHEME_PRESETS) + [n for n in self.stored if n not in SCHEME_PRESETS]
        schemes = {n: SCHEME_PRESETS[n][1] for n in SCHEME_PRESETS} | self.stored
        self.choices = [(n, scheme_label(n, schemes[n])) for n in names]

    def prepare_value(self, value: Any) -> Any:
        return list(value) if isinstance(value, dict) else value

    def clean(self, value: Any) -> dict[str, Any]:
        names = super().clean(value)
        return {n: self.stored.get(n, SCHEME_PRESETS.get(n, ("", {}))[1]) for n in names}


def requirement_key(requirement: dict[str, list[str]]) -> str:
    """A single scheme without scopes is named by the scheme; anything else by its text."""
    if len(requirement) == 1 and not next(iter(requirement.values())):
        return next(iter(requirement))
    return " and ".join(f"{n} ({' '.join(s)})" if s else n for n, s in requirement.items())


def requirement_label(key: str) -> str:
    return f"{SHORT_NAMES[key]} ({key})" if key in SHORT_NAMES else key


class RequirementsField(StoredChoicesField):
    """Which schemes a caller must present, any one of those ticked; a stored requirement that
    combines schemes or asks for scopes is offered as it is."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.set_stored({}, [])

    def set_stored(self, schemes: Any, requirements: Any) -> None:
        declared = schemes if isinstance(schemes, dict) else {}
        names = list(SCHEME_PRESETS) + [n for n in declared if n not in SCHEME_PRESETS]
        listed = requirements if isinstance(requirements, list) else []
        stored = [r for r in listed if isinstance(r, dict) and r]
        self.known: dict[str, dict[str, list[str]]] = {n: {n: []} for n in names}
        self.known |= {requirement_key(r): r for r in stored}
        self.choices = [(key, requirement_label(key)) for key in self.known]

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return [requirement_key(r) if isinstance(r, dict) else r for r in value]
        return value

    def clean(self, value: Any) -> list[dict[str, list[str]]]:
        return [self.known[key] for key in super().clean(value)]


# --- executor settings --------------------------------------------------------------------


class ExecutorSettingsWidget(forms.Widget):
    """Every executor kind's settings form (agents.forms sets `forms`), the selected kind's
    shown and the others hidden and disabled, so only its fields are posted."""

    template_name = "agents/widgets/executor_settings.html"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.forms: list[tuple[str, Any, bool]] = []

    @property
    def media(self) -> forms.Media:
        """The inputs' own, and whatever the kinds' forms need (the `llm` form's check)."""
        media = forms.Media(js=InputsMedia.js, css=dict(InputsMedia.css))
        for _, settings_form, _ in self.forms:
            media += settings_form.media
        return media

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        # A raw JSON object (scripts, older pages) is still taken, as the admin took it.
        return data.get(name) if name in data else None

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return False  # the settings forms' fields stand in for it: an empty dict is a value

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        context["widget"]["forms"] = self.forms
        return context


class ExecutorSettingsField(forms.Field):
    widget = ExecutorSettingsWidget

    def to_python(self, value: Any) -> dict[str, Any] | None:
        if value is None or isinstance(value, dict):
            return value
        try:
            loaded = nesting.loads(no_nul(str(value)) or "{}", "The settings")
        except nesting.TooDeep as exc:
            raise ValidationError(str(exc)) from None
        except ValueError:
            raise ValidationError("The settings are not a valid JSON object.") from None
        if not isinstance(loaded, dict):
            raise ValidationError("The settings are not a valid JSON object.")
        return loaded

    def has_changed(self, initial: Any, data: Any) -> bool:
        return True  # judged by the kind's settings form
