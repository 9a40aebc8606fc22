"""The plain inputs of the agent and skill forms (agents/inputs.py): what a person types becomes
the list or dict an agent stores, a stored value shows again in the same inputs, and bad input
is an error on its field, never a server error. No input of these forms asks for JSON."""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.http import QueryDict
from django.test import Client
from django.urls import reverse

from agents.forms import AgentForm, SkillForm
from agents.inputs import (
    ExecutorSettingsField,
    ExtensionsField,
    LinesField,
    MediaTypesField,
    RequirementsField,
    SchemesField,
    StringListField,
)
from agents.models import Agent
from developers.forms import DeveloperAgentForm, DeveloperSkillForm
from executors.settings_forms import SETTINGS_FORMS
from tests.factories.agent_forms import add_agent, agent_form
from tests.factories.agents import make_agent


class Probe(forms.Form):
    """One of each input, as a form binds them from a post."""

    tags = StringListField()
    examples = LinesField(required=False)
    modes = MediaTypesField()
    extensions = ExtensionsField(required=False)
    schemes = SchemesField(required=False)
    requirements = RequirementsField(required=False)
    settings = ExecutorSettingsField(required=False)


def bind(**posted: Any) -> Probe:
    data = QueryDict(mutable=True)
    data.update({"tags": "demo", "modes": "text/plain"})
    for name, value in posted.items():
        data.setlist(name, value if isinstance(value, list) else [value])
    return Probe(data)


def cleaned(**posted: Any) -> dict[str, Any]:
    form = bind(**posted)
    assert form.is_valid(), form.errors
    return form.cleaned_data


def error(field: str, **posted: Any) -> str:
    form = bind(**posted)
    assert not form.is_valid()
    return " ".join(form.errors[field])


def test_tags_typed_with_commas_are_separate_tags_each_kept_once() -> None:
    assert cleaned(tags="text, fun")["tags"] == ["text", "fun"]
    assert cleaned(tags=" a,,a , b\nc ")["tags"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("tags", "problem"),
    [(" , ", "required"), ("a\x00b", "Null characters"), (",".join(map(str, range(51))), "50")],
)
def test_bad_tags_are_a_field_error(tags: str, problem: str) -> None:
    assert problem in error("tags", tags=tags)


def test_examples_are_one_a_line_and_may_hold_commas() -> None:
    assert cleaned(examples="hello, world\n\nbye\n")["examples"] == ["hello, world", "bye"]


def test_media_types_are_the_ticked_boxes_then_the_other_ones() -> None:
    data = cleaned(modes=["text/plain", "image/png"], modes_other="audio/mpeg, text/plain")
    assert data["modes"] == ["text/plain", "image/png", "audio/mpeg"]


def test_an_imported_cards_loose_modes_stay_editable() -> None:
    # Many cards say "text" rather than text/plain; the agent must still be savable.
    data = cleaned(modes=[], modes_other="text, text/plain; charset=utf-8")
    assert data["modes"] == ["text", "text/plain; charset=utf-8"]


@pytest.mark.parametrize(
    ("posted", "problem"),
    [
        ({"modes": []}, "required"),
        ({"modes_other": "text plain"}, "Not a media type: text plain"),
        ({"modes_other": "text/plain; charset"}, "Not a media type: text/plain; charset"),
        ({"modes": '["text/plain"]'}, 'Not a media type: ["text/plain"]'),
    ],
)
def test_bad_media_types_are_a_field_error(posted: dict[str, Any], problem: str) -> None:
    assert problem in error("modes", **posted)


def test_extension_rows_become_the_cards_extensions_and_empty_rows_are_skipped() -> None:
    data = cleaned(**{
        "extensions-0-uri": "https://example.com/ext/a", "extensions-0-required": "on",
        "extensions-1-uri": "", "extensions-1-description": "",
        "extensions-5-uri": "urn:example:b", "extensions-5-description": "Bee",
    })  # fmt: skip
    assert data["extensions"] == [
        {"uri": "https://example.com/ext/a", "required": True},
        {"uri": "urn:example:b", "description": "Bee", "required": False},
    ]


@pytest.mark.parametrize(
    "posted",
    [
        {"extensions-0-description": "no uri"},
        {"extensions-0-uri": "not a uri"},
        {"extensions-0-required": "on", "extensions-0-description": "x"},
    ],
)
def test_an_extension_row_without_a_uri_is_a_field_error_naming_the_row(
    posted: dict[str, str],
) -> None:
    assert "Row 1: give the extension's URI" in error("extensions", **posted)


def test_too_many_rows_are_a_field_error() -> None:
    rows = {f"extensions-{n}-uri": f"urn:x:{n}" for n in range(101)}
    assert "At most 100 rows" in error("extensions", **rows)


def test_the_scheme_picker_gives_the_hubs_own_schemes() -> None:
    data = cleaned(schemes=["apiKey", "bearer"], requirements=["bearer"])
    assert data["schemes"] == {
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        "bearer": {"type": "http", "scheme": "bearer"},
    }
    assert data["requirements"] == [{"bearer": []}]


def test_an_unknown_scheme_is_a_field_error_naming_it() -> None:
    assert "carrier-pigeon" in error("schemes", schemes="carrier-pigeon")
    assert "oidc" in error("requirements", requirements="oidc")


def test_raw_settings_must_be_a_json_object() -> None:
    assert cleaned(settings='{"chunks": 2}')["settings"] == {"chunks": 2}
    assert "not a valid JSON object" in error("settings", settings="{nope")
    assert "not a valid JSON object" in error("settings", settings="[1]")


@pytest.mark.parametrize(
    "form_class", [AgentForm, SkillForm, DeveloperAgentForm, DeveloperSkillForm]
)
def test_no_field_of_the_agent_and_skill_forms_expects_json(form_class: type[Any]) -> None:
    fields = form_class.base_fields
    assert not [name for name, f in fields.items() if isinstance(f, forms.JSONField)]
    assert not [name for name, f in fields.items() if "json" in f.widget.attrs.get("class", "")]


def test_no_executor_settings_form_expects_json() -> None:
    for form_class in SETTINGS_FORMS.values():
        assert not [f for f in form_class.base_fields.values() if isinstance(f, forms.JSONField)]


# -- stored agents stay editable ---------------------------------------------------------

STORED: dict[str, Any] = {
    "security_schemes": {
        "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://id.example/.well-known"},
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    },
    "security_requirements": [{"oidc": ["read", "write"]}, {"apiKey": []}],
    "extensions": [{"uri": "urn:x:cite", "required": False, "params": {"style": "apa"}}],
}


@pytest.mark.django_db
def test_an_imported_agents_own_schemes_show_as_stored_and_are_kept(
    operator_client: Client,
) -> None:
    agent = make_agent("formed", **STORED)
    page = operator_client.get(reverse("admin:agents_agent_change", args=[agent.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "oidc (openIdConnect, as stored)" in text
    assert "oidc (read write)" in text
    skill = agent.skills.get()
    data = agent_form(
        security_schemes=["oidc", "apiKey"],
        security_requirements=["oidc (read write)", "apiKey"],
        **{
            "extensions-0-uri": "urn:x:cite", "skills-INITIAL_FORMS": "1",
            "skills-0-id": str(skill.pk), "skills-0-agent": str(agent.pk),
        },
    )  # fmt: skip
    response = operator_client.post(reverse("admin:agents_agent_change", args=[agent.pk]), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    agent.refresh_from_db()
    assert agent.security_schemes == STORED["security_schemes"]
    assert agent.security_requirements == STORED["security_requirements"]
    assert agent.extensions == [
        {"uri": "urn:x:cite", "required": False, "params": {"style": "apa"}}
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "garbage",
    [
        {"default_input_modes_other": "a\x00/b"},
        {"extensions-0-uri": "urn:\x00"},
        {"skills-0-tags": "\x00"},
        {"security_schemes": ["apiKey", "apiKey", "{}"]},
        {"settings-python-functions-0-skill": "*", "executor_kind": "python"},
        {"executor_settings": "\x00"},
    ],
)
def test_garbage_in_the_admin_form_is_a_field_error_not_a_server_error(
    operator_client: Client, garbage: dict[str, Any]
) -> None:
    response = add_agent(operator_client, **garbage)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors or any(
        response.context["inline_admin_formsets"][0].formset.errors
    )
    assert not Agent.objects.exists()
