"""The admin for agents: who may see it, the card preview, and refusal of invalid cards."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Agent
from tests.factories.agent_forms import add_agent, agent_form

pytestmark = pytest.mark.django_db


def test_anonymous_users_are_sent_to_the_login_page(client: Client) -> None:
    url = reverse("admin:agents_agent_changelist")
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert response["Location"] == f"{reverse('admin:login')}?next={url}"


def test_signed_in_non_staff_users_cannot_enter(client: Client, developer: Any) -> None:
    client.force_login(developer)
    url = reverse("admin:agents_agent_changelist")
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next={url}"


def test_staff_see_agents_with_skill_counts(operator_client: Client, agent_factory: Any) -> None:
    agent_factory("listed", skills=3)
    page = operator_client.get(reverse("admin:agents_agent_changelist")).content.decode()
    assert "listed" in page
    assert '<td class="field-skill_count">3</td>' in page


def test_search_and_filters_narrow_the_list(operator_client: Client, agent_factory: Any) -> None:
    agent_factory("findme")
    agent_factory("other", enabled=False)
    url = reverse("admin:agents_agent_changelist")
    assert "other" not in operator_client.get(url, {"q": "findme"}).content.decode()
    page = operator_client.get(url, {"enabled__exact": "0"}).content.decode()
    assert "findme" not in page and "other" in page


def test_change_page_shows_the_rendered_card(operator_client: Client, agent_factory: Any) -> None:
    agent = agent_factory("preview")
    page = operator_client.get(reverse("admin:agents_agent_change", args=[agent.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Agent Card preview" in text
    assert "http://testserver/agents/preview/.well-known/agent-card.json" in text
    assert "&quot;preferredTransport&quot;: &quot;JSONRPC&quot;" in text


def test_a_valid_agent_is_saved_with_its_skill(operator_client: Client) -> None:
    response = add_agent(operator_client)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == reverse("admin:agents_agent_changelist")
    agent = Agent.objects.get(slug="formed")
    assert [s.skill_id for s in agent.skills.all()] == ["greet"]


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"security_schemes": "carrier-pigeon"}, "security_schemes", "carrier-pigeon"),
        ({"provider_organization": "Org", "provider_url": ""}, "provider_url", "provider.url"),
        ({"default_input_modes": None}, "default_input_modes", "required"),
        ({"default_output_modes_other": "text plain"}, "default_output_modes", "text plain"),
        ({"security_requirements": "bearer"}, "security_requirements", "bearer"),
        ({"extensions-0-description": "no uri"}, "extensions", "uri"),
        ({"slug": "Bad Slug"}, "slug", "lowercase"),
    ],
)
def test_an_agent_whose_card_is_invalid_is_refused_with_a_field_error(
    operator_client: Client, overrides: dict[str, str], field: str, fragment: str
) -> None:
    response = add_agent(operator_client, **overrides)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert fragment.lower() in " ".join(errors[field]).lower()
    assert not Agent.objects.exists()


def test_an_agent_without_skills_is_refused(operator_client: Client) -> None:
    response = add_agent(operator_client, **{"skills-TOTAL_FORMS": "0"})
    assert response.status_code == 200
    assert "at least one skill" in response.content.decode()
    assert not Agent.objects.exists()


def test_a_skill_without_tags_is_refused(operator_client: Client) -> None:
    response = add_agent(operator_client, **{"skills-0-tags": " , "})
    assert response.status_code == 200
    formset_errors = response.context["inline_admin_formsets"][0].formset.errors
    assert "tags" in formset_errors[0]
    assert not Agent.objects.exists()


def test_editing_keeps_the_card_valid(operator_client: Client, agent_factory: Any) -> None:
    agent = agent_factory("edited", **{"security_schemes": {}})
    skill = agent.skills.get()
    data = agent_form(
        slug="edited",
        security_schemes="apiKey",
        security_requirements="apiKey",
        **{
            "skills-INITIAL_FORMS": "1",
            "skills-0-id": str(skill.pk),
            "skills-0-agent": str(agent.pk),
            "skills-0-skill_id": skill.skill_id,
        },
    )
    response = operator_client.post(reverse("admin:agents_agent_change", args=[agent.pk]), data)
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:agents_agent_changelist")
    card = operator_client.get("/agents/edited/.well-known/agent-card.json").json()
    assert card["security"] == [{"apiKey": []}]
    assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"] == "X-API-Key"


def test_a_python_agent_must_name_registered_functions(operator_client: Client) -> None:
    rows = {"settings-python-functions-0-skill": "*"}
    response = add_agent(
        operator_client,
        executor_kind="python",
        **rows,
        **{"settings-python-functions-0-function": "no.such"},
    )
    errors = response.context["adminform"].form.errors
    assert "no.such" in " ".join(errors["executor_settings"])
    assert not Agent.objects.exists()

    response = add_agent(
        operator_client,
        executor_kind="python",
        **rows,
        **{"settings-python-functions-0-function": "demo.reverse"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:agents_agent_changelist")
    agent = Agent.objects.get()
    assert (agent.executor_kind, agent.executor_settings) == (
        "python",
        {"function": "demo.reverse"},
    )


@pytest.mark.parametrize(
    ("embedded", "label"),
    [(True, "worker (the in-process worker pool)"), (False, "worker (a Celery job)")],
)
def test_the_execution_mode_choice_names_where_worker_turns_run(
    operator_client: Client, agent_factory: Any, settings: Any, embedded: bool, label: str
) -> None:
    settings.EMBEDDED = embedded
    agent = agent_factory("modes")

    html = operator_client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content
    page = html.decode()

    assert f">{label}</option>" in page
    if embedded:
        assert "Celery" not in page


def test_a_list_page_tab_is_named_by_the_list_not_its_pruning_note(
    operator_client: Client,
) -> None:
    page = operator_client.get(reverse("admin:tasks_task_changelist")).content.decode()

    assert "<title>Select task to view | " in page
