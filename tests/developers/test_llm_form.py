"""The `llm` kind's settings on the developer pages and the admin: real fields, the API key and
MCP tokens as write-only secrets sealed at rest, hosted agents ticked from those enabled, MCP
server URLs judged by the outbound guard when saved, and the "Check the server" button's
answer from a real OpenAI-compatible server on 127.0.0.1.

Personas: `developer` registers and edits their own agents; `operator` uses the admin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from a2ahub import sealed
from agents.models import Agent
from tests.developers.test_settings_forms import page_data
from tests.llm.model_server import ModelServer, Text

KEY = "sk-form-secret-0123456789"


def llm_fields(**fields: str) -> dict[str, str]:
    values = {
        "base_url": "https://models.example/v1", "model": "small-model",
        "instructions": "Be brief.", "max_steps": "3", "timeout": "30", "api_key": KEY,
        "agents": "echo",
    } | fields  # fmt: skip
    return {k: v for k, v in values.items() if v != ""}


@pytest.fixture
def echo_agent(db: None) -> Agent:
    from tests.factories.agents import make_agent

    return make_agent("echo", skills=1, executor_kind="echo")


@pytest.mark.django_db
def test_an_llm_agent_is_made_in_the_form_and_its_key_is_sealed_and_never_shown(
    dev_client: Client, echo_agent: Agent
) -> None:
    mcp = {"url": "https://tools.example/mcp", "token": "mcp-token-42"}
    data = page_data("llm", llm_fields()) | {
        f"settings-llm-mcp_servers-0-{k}": v for k, v in mcp.items()
    }
    response = dev_client.post(reverse("developers:agent-new"), data)
    assert response.status_code == 302, response.context["form"].errors

    stored = Agent.objects.get(slug="weather").executor_settings
    assert sealed.open_sealed(stored["api_key"]) == KEY
    assert stored["agents"] == ["echo"] and stored["model"] == "small-model"
    assert stored["mcp_servers"][0]["url"] == "https://tools.example/mcp"
    assert sealed.open_sealed(stored["mcp_servers"][0]["token"]) == "mcp-token-42"
    edit = dev_client.get(reverse("developers:agent-edit", kwargs={"slug": "weather"}))
    page = edit.content.decode()
    assert "Check the server" in page and "A key is stored" in page
    assert "Remove the stored API key" in page
    assert KEY not in page and "mcp-token-42" not in page and stored["api_key"] not in page
    card = dev_client.get("/agents/weather/.well-known/agent-card.json").content.decode()
    assert KEY not in card and "sealed:" not in card


def existing(agent: Agent) -> dict[str, str]:
    """The skill rows an edit page posts back for the agent's stored skills."""
    skills = list(agent.skills.all())
    data = {"skills-TOTAL_FORMS": str(len(skills)), "skills-INITIAL_FORMS": str(len(skills))}
    for n, skill in enumerate(skills):
        values = {"id": str(skill.pk), "skill_id": skill.skill_id, "name": skill.name,
                  "description": skill.description, "tags": ", ".join(skill.tags)}  # fmt: skip
        data |= {f"skills-{n}-{k}": v for k, v in values.items()}
    return data


@pytest.mark.django_db
def test_a_blank_key_keeps_the_stored_one_and_removing_it_removes_it(
    dev_client: Client, echo_agent: Agent
) -> None:
    dev_client.post(reverse("developers:agent-new"), page_data("llm", llm_fields()))
    agent = Agent.objects.get(slug="weather")
    sealed_key = agent.executor_settings["api_key"]
    edit = reverse("developers:agent-edit", kwargs={"slug": "weather"})
    kept = page_data("llm", llm_fields(api_key="", instructions="Be briefer.")) | existing(agent)

    response = dev_client.post(edit, kept)
    assert response.status_code == 302, response.context["form"].errors
    agent.refresh_from_db()
    assert agent.executor_settings["api_key"] == sealed_key
    assert agent.executor_settings["instructions"] == "Be briefer."

    response = dev_client.post(edit, kept | {"settings-llm-forget_api_key": "on"})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert "api_key" not in agent.executor_settings


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"base_url": "http://10.0.0.5/v1"}, "may not call"),
        ({"model": ""}, "required"),
        ({"max_steps": "99"}, "20"),
        ({"api_key_env": "NOT A NAME"}, "letters, digits and underscores"),
    ],
)
def test_bad_settings_are_refused_when_saved(
    dev_client: Client, fields: dict[str, str], problem: str
) -> None:
    response = dev_client.post(
        reverse("developers:agent-new"), page_data("llm", llm_fields(agents="", **fields))
    )
    assert response.status_code == 400
    errors = response.context["form"].errors.get("executor_settings", [])
    assert problem in " ".join(errors), errors
    assert not Agent.objects.filter(slug="weather").exists()


@pytest.mark.django_db
def test_an_mcp_server_the_guard_refuses_is_refused_when_saved(dev_client: Client) -> None:
    data = page_data("llm", llm_fields(agents="")) | {
        "settings-llm-mcp_servers-0-url": "http://169.254.169.254/mcp"}  # fmt: skip
    response = dev_client.post(reverse("developers:agent-new"), data)
    assert response.status_code == 400
    assert "may not call" in " ".join(response.context["form"].errors["executor_settings"])


@pytest.mark.django_db
def test_the_admin_offers_the_llm_fields_without_the_key(
    operator_client: Client, echo_agent: Agent
) -> None:
    agent = echo_agent
    agent.executor_kind = "llm"
    agent.executor_settings = {"base_url": "https://m.example/v1", "model": "m",
                               "api_key": sealed.seal(KEY)}  # fmt: skip
    agent.save()
    page = operator_client.get(
        reverse("admin:agents_agent_change", args=[agent.pk])
    ).content.decode()
    assert 'name="settings-llm-model"' in page and 'name="settings-llm-instructions"' in page
    assert 'name="settings-llm-api_key"' in page and "Check the server" in page
    assert KEY not in page and agent.executor_settings["api_key"] not in page


@pytest.fixture
def model_server(settings: Any) -> Iterator[ModelServer]:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    server = ModelServer().start()
    server.script("small-model", Text(["-"]))
    server.script("large-model", Text(["-"]))
    yield server
    server.stop()


@pytest.mark.django_db
def test_the_check_button_lists_the_servers_models(
    dev_client: Client, model_server: ModelServer
) -> None:
    response = dev_client.post(
        reverse("developers:llm-check"), {"base_url": model_server.url, "api_key": KEY}
    )
    answer = response.json()
    assert answer["ok"] is True, answer
    assert answer["models"] == ["large-model", "small-model"]
    assert answer["text"] == "The server answers: 2 model(s): large-model, small-model."


@pytest.mark.django_db
def test_the_check_button_says_when_the_server_does_not_list_the_typed_model(
    dev_client: Client, model_server: ModelServer
) -> None:
    check = reverse("developers:llm-check")
    typo = dev_client.post(check, {"base_url": model_server.url, "model": "smal-model"}).json()
    assert typo["ok"] is True and typo["warning"] is True, typo
    assert typo["text"].endswith("It does not list smal-model, the model typed here.")

    listed = dev_client.post(check, {"base_url": model_server.url, "model": "small-model"}).json()
    assert listed["warning"] is False and "does not list" not in listed["text"], listed


@pytest.mark.django_db
def test_the_check_button_says_why_a_server_fails(dev_client: Client, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    answer = dev_client.post(
        reverse("developers:llm-check"), {"base_url": "http://127.0.0.1:9/v1"}
    ).json()
    assert answer["ok"] is False and "could not be reached" in answer["text"], answer
    refused = dev_client.post(
        reverse("developers:llm-check"), {"base_url": "http://10.0.0.1/v1"}
    ).json()
    assert refused["ok"] is False and "may not call" in refused["text"], refused


@pytest.mark.django_db
def test_a_refused_form_says_the_typed_key_must_be_typed_again(dev_client: Client) -> None:
    # The key is never sent back to the page; it came back empty with no word, and a second
    # submit saved the agent without it.
    data = page_data("llm", llm_fields(agents="")) | {
        "slug": "Not A Slug",
        "settings-llm-mcp_servers-0-url": "http://127.0.0.1:9/mcp",
        "settings-llm-mcp_servers-0-token": "mcp-token-typed",
    }

    page = dev_client.post(reverse("developers:agent-new"), data).content.decode()

    assert KEY not in page and "mcp-token-typed" not in page
    field = page[page.index('name="settings-llm-api_key"') :]
    assert "Not kept when the form is refused: type it again." in field[:1200]
    # The MCP server's row keeps its URL and says the same of its token.
    token = page[page.index('name="settings-llm-mcp_servers-0-token"') :]
    assert 'placeholder="not kept: type it again"' in token[:300]
    assert 'value="http://127.0.0.1:9/mcp"' in page


@pytest.mark.django_db
def test_a_form_shown_afresh_asks_nothing_to_be_typed_again(dev_client: Client) -> None:
    page = dev_client.get(reverse("developers:agent-new")).content.decode()

    assert "type it again" not in page
    # A new agent has no key to remove.
    assert "Remove the stored API key" not in page
