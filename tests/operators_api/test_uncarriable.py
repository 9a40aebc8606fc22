"""Text the hub cannot store (U+0000, which PostgreSQL refuses in text and jsonb, or a lone
surrogate) anywhere in a path, a query or a body of the operators' API gets 400 naming where
it is, on every database, and changes nothing. Schemathesis found the first of these on
PostgreSQL: a key's owner with a NUL, sent as a form, was looked up and answered 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents.models import Agent, ApiKey
from tests.factories.agents import make_agent
from tests.operators_api.conftest import Api, agent_body

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("agents/a%00b", "slug"),
        ("registrations/reg-%00", "registration_id"),
        ("keys/1%00", "pk"),
        ("tasks?owner=user:%00", "owner"),
        ("tasks?agent=a%00b", "agent"),
    ],
)  # fmt: skip
def test_a_nul_in_the_path_or_query_is_refused_naming_it(
    staff_api: Api, path: str, field: str
) -> None:
    response = staff_api.get(path)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert "NUL" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (agent_body(executor_settings={"x": "\x00"}), "executor_settings.x"),
        (agent_body(default_input_modes=["text/plain", "a\x00"]), "default_input_modes[1]"),
        (agent_body(extensions=[{"uri": "urn:x", "\x00": 1}]), 'extensions[0]["\\u0000"]'),
        (agent_body(description="half a pair \ud800"), "description"),
    ],
)  # fmt: skip
def test_a_body_holding_such_text_is_refused_naming_the_field(
    staff_api: Api, body: dict[str, Any], field: str
) -> None:
    response = staff_api.post("agents", body)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert not Agent.objects.filter(slug="weather").exists()


def test_a_form_naming_an_owner_with_a_nul_is_refused(
    staff_api: Api, operator_client: Client, developer: User
) -> None:
    by_key = staff_api.client.post(
        "/api/keys", {"name": "k", "owner": "dev\x00"}, **staff_api.headers
    )
    assert by_key.status_code == 400
    assert by_key.json()["error"]["field"] == "owner"
    # As the browsable page posts it, with the staff session.
    by_page = operator_client.post("/api/keys", {"name": "k", "agent": ["a", "b\x00"]})
    assert by_page.status_code == 400
    assert by_page.json()["error"]["field"] == "agent[1]"
    assert not ApiKey.objects.filter(name="k").exists()


def test_a_change_holding_such_text_leaves_the_agent_as_it_was(staff_api: Api) -> None:
    make_agent("kept")
    assert staff_api.send("patch", "agents/kept", {"name": "a\x00b"}).status_code == 400
    assert Agent.objects.get(slug="kept").name == "Kept"
