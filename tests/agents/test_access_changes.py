"""The audit log of access changes: who changed who may call an agent (its access rule, OAuth2
requirement and lists), where, and what it was before and after; from the admin's form (the
lists included) and through `agents.audit.record_access_change` (the developer pages' way)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from agents import audit
from agents.models import AccessChange, AccessVia, Agent
from tests.factories.agent_forms import add_agent, agent_form
from tests.factories.agents import make_agent
from tests.factories.oauth import machine

pytestmark = pytest.mark.django_db


def change_in_admin(client: Client, agent: Agent, **overrides: Any) -> Any:
    skill = agent.skills.get()
    data = agent_form(
        slug=agent.slug,
        **{
            "skills-INITIAL_FORMS": "1",
            "skills-0-id": str(skill.pk),
            "skills-0-agent": str(agent.pk),
            "skills-0-skill_id": skill.skill_id,
        }
        | overrides,
    )
    response = client.post(reverse("admin:agents_agent_change", args=[agent.pk]), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return response


def test_the_admin_logs_a_change_of_rule_and_lists_with_names(
    operator_client: Client, operator: User, developer: User
) -> None:
    agent = make_agent("guarded")
    robot, _ = machine("robot")
    team = Group.objects.create(name="team")

    change_in_admin(
        operator_client, agent, access="listed", oauth2="on",
        allowed_users=[str(developer.pk)], allowed_groups=[str(team.pk)],
        allowed_applications=[str(robot.pk)],
    )  # fmt: skip

    change = AccessChange.objects.get()
    assert (change.agent, change.agent_slug, change.via) == (agent, "guarded", AccessVia.ADMIN)
    assert (change.actor, change.actor_name) == (operator, "op")
    assert change.before == {"access": "anyone", "oauth2": False, "allowed_users": [],
                             "allowed_groups": [], "allowed_applications": []}  # fmt: skip
    assert change.after == {
        "access": "listed", "oauth2": True, "allowed_users": ["dev"],
        "allowed_groups": ["team"], "allowed_applications": ["robot"],
    }  # fmt: skip


def test_the_admin_logs_only_what_changed(operator_client: Client, developer: User) -> None:
    agent = make_agent("guarded", access="listed")
    agent.allowed_users.add(developer)
    other = User.objects.create_user("other")

    change_in_admin(operator_client, agent, access="listed",
                    allowed_users=[str(developer.pk), str(other.pk)])  # fmt: skip

    change = AccessChange.objects.get()
    assert change.before == {"allowed_users": ["dev"]}
    assert change.after == {"allowed_users": ["dev", "other"]}


def test_the_log_shows_names_in_words_not_a_python_list(
    operator_client: Client, developer: User
) -> None:
    agent = make_agent("guarded", access="listed")
    change_in_admin(operator_client, agent, access="listed", allowed_users=[str(developer.pk)])

    page = operator_client.get(reverse("admin:agents_accesschange_changelist")).content.decode()

    assert 'title="allowed_users: dev">allowed_users: dev</code>' in page
    assert "[&#x27;" not in page and "[&quot;" not in page


def test_saving_an_agent_without_touching_its_access_logs_nothing(
    operator_client: Client,
) -> None:
    agent = make_agent("guarded")

    change_in_admin(operator_client, agent, name="A new name")

    assert Agent.objects.get(pk=agent.pk).name == "A new name"
    assert not AccessChange.objects.exists()


def test_a_new_agent_is_logged_when_its_access_is_not_the_default(
    operator_client: Client,
) -> None:
    assert add_agent(operator_client).status_code == 302
    assert not AccessChange.objects.exists()

    assert add_agent(operator_client, slug="closed", access="signed_in").status_code == 302

    change = AccessChange.objects.get()
    assert (change.agent_slug, change.before, change.after) == (
        "closed", {"access": "anyone"}, {"access": "signed_in"})  # fmt: skip


def test_the_developer_pages_log_through_one_function(developer: User) -> None:
    agent = make_agent("mine", owner=developer)
    robot, _ = machine("robot")
    before = audit.snapshot(agent)

    agent.allowed_applications.add(robot)
    Agent.objects.filter(pk=agent.pk).update(access="listed")
    agent.refresh_from_db()
    audit.record_access_change(
        agent, developer, AccessVia.DEVELOPER_PAGES, before, audit.snapshot(agent)
    )

    (change,) = audit.changes_for(agent)
    assert (change.via, change.actor) == (AccessVia.DEVELOPER_PAGES, developer)
    assert change.after == {"access": "listed", "allowed_applications": ["robot"]}


def test_a_deleted_agent_keeps_its_log(operator_client: Client) -> None:
    agent = make_agent("gone")
    change_in_admin(operator_client, agent, access="signed_in")

    agent.delete()

    change = AccessChange.objects.get()
    assert (change.agent, change.agent_slug) == (None, "gone")
