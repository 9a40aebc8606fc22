"""Agents and their skills through the API, judged as the admin judges them."""

from __future__ import annotations

import pytest
from django.test import Client

from agents.models import Agent
from tests.operators_api.conftest import Api, agent_body

pytestmark = pytest.mark.django_db


def test_create_read_change_delete_round_trip(staff_api: Api) -> None:
    created = staff_api.post("agents", agent_body())
    assert created.status_code == 201, created.json()
    assert created.json()["skills"][0]["skill_id"] == "forecast"
    # The hub serves its card at once.
    assert Client().get("/agents/weather/.well-known/agent-card.json").status_code == 200

    changed = staff_api.send("patch", "agents/weather", {"description": "Rain or shine."})
    assert changed.status_code == 200, changed.json()
    assert staff_api.get("agents/weather").json()["description"] == "Rain or shine."
    assert [s["skill_id"] for s in changed.json()["skills"]] == ["forecast"]

    skills = [{"skill_id": "now", "name": "Now", "description": "The weather now.",
               "tags": ["weather"]}, agent_body()["skills"][0]]  # fmt: skip
    replaced = staff_api.send("patch", "agents/weather", {"skills": skills})
    assert replaced.status_code == 200, replaced.json()
    assert [s["skill_id"] for s in staff_api.get("agents/weather").json()["skills"]] == [
        "now", "forecast",
    ]  # fmt: skip

    assert [a["slug"] for a in staff_api.get("agents").json()["results"]] == ["weather"]
    assert staff_api.send("delete", "agents/weather").status_code == 204
    assert not Agent.objects.exists()
    assert staff_api.get("agents/weather").status_code == 404


def test_a_card_the_sdk_refuses_is_refused_naming_the_field(staff_api: Api) -> None:
    body = agent_body(provider_organization="Weather Inc", provider_url="")
    response = staff_api.post("agents", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "provider_url"
    assert "provider.url" in error["message"]
    assert not Agent.objects.exists()


def test_a_change_that_breaks_the_card_is_refused_and_nothing_changes(staff_api: Api) -> None:
    assert staff_api.post("agents", agent_body()).status_code == 201
    response = staff_api.send("patch", "agents/weather", {"default_input_modes": []})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "default_input_modes"
    assert Agent.objects.get().default_input_modes == ["text/plain"]


def test_an_agent_needs_a_skill_and_skills_need_tags(staff_api: Api) -> None:
    response = staff_api.post("agents", agent_body(skills=[]))
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "skills"
    no_tags = agent_body()
    no_tags["skills"][0]["tags"] = []
    response = staff_api.post("agents", no_tags)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "skills[0].tags"
    assert not Agent.objects.exists()


def test_a_requirement_naming_no_scheme_is_refused(staff_api: Api) -> None:
    response = staff_api.post("agents", agent_body(security_requirements=[{"missing": []}]))
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "security_requirements"
    assert "missing" in response.json()["error"]["message"]


def test_a_taken_slug_is_refused(staff_api: Api) -> None:
    assert staff_api.post("agents", agent_body()).status_code == 201
    response = staff_api.post("agents", agent_body())
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "slug"


@pytest.mark.parametrize(
    "body", [[], "text", {"skills": "none"}, {"slug": None}, agent_body(owner="nobody")]
)
def test_odd_bodies_get_a_400_naming_the_problem(staff_api: Api, body: object) -> None:
    response = staff_api.post("agents", body)
    assert response.status_code == 400
    assert response.json()["error"]["message"]
    assert not Agent.objects.exists()


def test_a_made_up_cursor_is_refused_not_a_crash(staff_api: Api) -> None:
    response = staff_api.get("tasks?cursor=bz14")  # "o=x": an offset that is no number
    assert response.status_code == 404
    assert "cursor" in response.json()["error"]["message"].lower()
