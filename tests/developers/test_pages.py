"""The developer pages through Django's test client: sign-in, ownership, the agent and skill
forms, the live preview, API keys, the task list and the "try it" box.

Personas and their rights:
- `developer` (tests/conftest.py): signed in, owns the agents made here with owner=developer;
  registers, edits, previews, tries them and manages their keys.
- `rival`: another signed-in user with agents of their own; none of the developer's agents
  exist for them (404), and theirs do not exist for the developer.
- anonymous: every developer page sends them to the sign-in page.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent, ApiKey
from tasks import retention
from tasks.models import Task
from tests.door_client import Door
from tests.factories.agents import SECURED, agent_data, make_agent, owned, skill_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def rival(db: None) -> User:
    return User.objects.create_user("rival", "rival@example.com", "rival-pass-123")


def register(client: Client, data: dict[str, str]) -> Any:
    return client.post(reverse("developers:agent-new"), data)


def field_errors(response: Any, field: str) -> list[str]:
    return list(response.context["form"].errors.get(field, []))


# -- sign-in and ownership ---------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/dev/agents/", "/dev/register/", "/dev/agents/mine/", "/dev/agents/mine/edit/",
     "/dev/agents/mine/keys/", "/dev/agents/mine/tasks/"],
)  # fmt: skip
def test_the_pages_send_an_anonymous_visitor_to_sign_in(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/dev/login/?next={path}"


def test_the_preview_and_try_endpoints_need_sign_in_too(client: Client, developer: User) -> None:
    owned("mine", developer)
    for path, data in [
        ("/dev/register/preview/", agent_data()),
        ("/dev/agents/mine/try/", {"text": "hi"}),
    ]:
        response = client.post(path, data)
        assert response.status_code == 302
        assert response["Location"] == f"/dev/login/?next={path}"
    assert not Task.objects.exists()


def test_a_developer_signs_in_with_the_sign_in_page(client: Client, developer: User) -> None:
    page = client.get("/dev/login/")
    assert b"csrfmiddlewaretoken" in page.content
    response = client.post(
        "/dev/login/", {"username": "dev", "password": "developer-pass-123", "next": ""}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agents")
    assert client.get(reverse("developers:agents")).status_code == 200


def test_signing_out_returns_to_the_home_page(dev_client: Client) -> None:
    response = dev_client.post("/dev/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/"
    signed_out = dev_client.get(reverse("developers:agents"))
    assert signed_out.status_code == 302
    assert signed_out["Location"] == f"/dev/login/?next={reverse('developers:agents')}"


def test_the_home_page_lists_public_agents_and_offers_sign_in(client: Client) -> None:
    make_agent("open-one")
    make_agent("hidden-one", public=False)
    page = client.get("/").content.decode()
    assert "open-one" in page
    assert "hidden-one" not in page
    assert "/dev/login/" in page


def test_an_owner_sees_only_their_own_agents(
    dev_client: Client, developer: User, rival: User
) -> None:
    owned("mine", developer)
    owned("theirs", rival)
    make_agent("nobodys")
    page = dev_client.get(reverse("developers:agents")).content.decode()
    assert "mine" in page
    assert "theirs" not in page
    assert "nobodys" not in page


@pytest.mark.parametrize("suffix", ["", "edit/", "keys/", "tasks/"])
def test_another_users_agent_the_developer_may_not_call_is_not_found(
    dev_client: Client, rival: User, suffix: str
) -> None:
    owned("theirs", rival, access="listed")
    assert dev_client.get(f"/dev/agents/theirs/{suffix}").status_code == 404


@pytest.mark.parametrize("suffix", ["edit/", "keys/", "access/"])
def test_another_users_agent_the_developer_may_call_is_still_not_theirs_to_change(
    dev_client: Client, rival: User, suffix: str
) -> None:
    owned("theirs", rival)
    assert dev_client.get(f"/dev/agents/theirs/{suffix}").status_code == 404


def test_another_users_agent_cannot_be_changed_previewed_or_tried(
    dev_client: Client, rival: User
) -> None:
    agent = owned("theirs", rival)
    key, _ = ApiKey.issue("theirs", rival, agent)
    data = agent_data(slug="theirs", name="Stolen")
    assert dev_client.post("/dev/agents/theirs/edit/", data).status_code == 404
    assert dev_client.post("/dev/agents/theirs/preview/", data).status_code == 404
    assert dev_client.post("/dev/agents/theirs/try/", {"text": "hi"}).status_code == 404
    assert dev_client.post("/dev/agents/theirs/keys/", {"name": "x"}).status_code == 404
    assert dev_client.post(f"/dev/agents/theirs/keys/{key.pk}/revoke/").status_code == 404
    agent.refresh_from_db()
    key.refresh_from_db()
    assert agent.name == "Theirs"
    assert key.revoked_at is None
    assert not Task.objects.exists()


# -- the agent and skill forms -------------------------------------------------------------


def test_a_valid_form_registers_the_agent_with_two_skills_for_the_user(
    dev_client: Client, developer: User
) -> None:
    response = register(dev_client, agent_data())
    assert response.status_code == 302
    agent = Agent.objects.get(slug="weather")
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "weather"})
    assert agent.owner == developer
    assert agent.executor_kind == "echo"
    assert [(s.skill_id, s.position) for s in agent.skills.all()] == [
        ("skill-0", 0),
        ("skill-1", 1),
    ]


def test_the_form_refuses_a_bad_slug_next_to_the_field(dev_client: Client) -> None:
    response = register(dev_client, agent_data(slug="Not A Slug!"))
    assert response.status_code == 400
    assert "lowercase letters" in " ".join(field_errors(response, "slug"))
    assert 'class="errorlist"' in response.content.decode()
    assert not Agent.objects.exists()


def test_the_form_refuses_an_agent_without_skills(dev_client: Client) -> None:
    response = register(dev_client, agent_data(skills=0))
    assert response.status_code == 400
    errors = response.context["formset"].non_form_errors()
    assert "at least one skill" in " ".join(errors)
    assert 'id="skill-errors"' in response.content.decode()
    assert not Agent.objects.exists()


@pytest.mark.parametrize(
    ("schemes", "problem"),
    [("carrier-pigeon", "carrier-pigeon"), ("apiKey\x00", "apiKey")],
)
def test_the_form_refuses_a_bad_security_scheme_next_to_the_field(
    dev_client: Client, schemes: str, problem: str
) -> None:
    response = register(dev_client, agent_data(security_schemes=schemes))
    assert response.status_code == 400
    assert problem in " ".join(field_errors(response, "security_schemes"))
    assert not Agent.objects.exists()


def test_the_form_refuses_a_skill_without_tags(dev_client: Client) -> None:
    data = agent_data() | skill_data(1, tags=" , ")
    response = register(dev_client, data)
    assert response.status_code == 400
    skill_form = response.context["formset"].forms[1]
    assert skill_form.errors["tags"]
    assert not Agent.objects.exists()


def test_the_form_refuses_unknown_python_functions_in_the_executor_settings(
    dev_client: Client,
) -> None:
    data = agent_data(executor_kind="python", executor_settings='{"functions": {"a": "nope"}}')
    response = register(dev_client, data)
    assert "nope" in " ".join(field_errors(response, "executor_settings"))


def test_the_owner_edits_the_agent_and_its_skills(dev_client: Client, developer: User) -> None:
    agent = owned("mine", developer)
    skill = agent.skills.get()
    data = agent_data(skills=2, slug="mine", name="Renamed") | {"skills-INITIAL_FORMS": "1"}
    data |= {"skills-0-id": str(skill.pk), "skills-0-DELETE": "on"}
    response = dev_client.post("/dev/agents/mine/edit/", data)
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "mine"})
    agent.refresh_from_db()
    assert agent.name == "Renamed"
    assert agent.owner == developer
    assert [s.skill_id for s in agent.skills.all()] == ["skill-1"]


def test_the_edit_page_shows_the_stored_agent(dev_client: Client, developer: User) -> None:
    owned("mine", developer)
    page = dev_client.get("/dev/agents/mine/edit/").content.decode()
    assert 'value="mine"' in page
    assert 'value="mine-skill-0"' in page
    assert "/dev/agents/mine/preview/" in page


# -- the live preview ----------------------------------------------------------------------


def test_the_preview_returns_the_union_card_without_saving(dev_client: Client) -> None:
    response = dev_client.post("/dev/register/preview/", agent_data())
    body = response.json()
    assert body["ok"] is True
    card = body["card"]
    assert card["name"] == "Weather"
    assert [s["id"] for s in card["skills"]] == ["skill-0", "skill-1"]
    assert card["supportedInterfaces"][0]["url"] == "http://testserver/agents/weather/jsonrpc/"
    assert card["url"] == "http://testserver/agents/weather/jsonrpc/"  # the 0.3 field
    assert not Agent.objects.exists()


def test_the_preview_returns_the_errors_of_an_invalid_form(dev_client: Client) -> None:
    data = agent_data(slug="Bad Slug", security_schemes="carrier-pigeon")
    body = dev_client.post("/dev/register/preview/", data | skill_data(1, tags=" , ")).json()
    assert body["ok"] is False
    errors = " ".join(body["errors"])
    assert "Slug:" in errors
    assert "carrier-pigeon" in errors
    assert "Skill 2, tags" in errors


def test_the_previews_errors_name_fields_as_the_page_shows_them(dev_client: Client) -> None:
    # A field without a label of its own was listed as "None: Not a media type".
    data = agent_data(default_input_modes="text plain")

    errors = dev_client.post("/dev/register/preview/", data).json()["errors"]

    assert any(e.startswith("Default input modes: ") for e in errors), errors
    assert not any(e.startswith("None") for e in errors), errors


def test_the_preview_of_a_stored_agent_changes_nothing(dev_client: Client, developer: User) -> None:
    agent = owned("mine", developer)
    skill = agent.skills.get()
    data = agent_data(skills=1, slug="mine", name="Draft") | {"skills-INITIAL_FORMS": "1"}
    data |= {"skills-0-id": str(skill.pk)}
    body = dev_client.post("/dev/agents/mine/preview/", data).json()
    assert body["ok"] is True
    assert body["card"]["name"] == "Draft"
    agent.refresh_from_db()
    assert agent.name == "Mine"


# -- API keys ------------------------------------------------------------------------------


def send(agent: Agent, key: str | None) -> Any:
    headers = {"HTTP_X_API_KEY": key} if key else {}
    envelope = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
    return Door().post(
        f"/agents/{agent.slug}/jsonrpc/",
        json.dumps(envelope),
        content_type="application/json",
        HTTP_A2A_VERSION="1.0",
        **headers,
    )


@pytest.mark.usefixtures("door")
def test_a_new_key_is_shown_once_and_works(dev_client: Client, developer: User) -> None:
    agent = owned("mine", developer, **SECURED)
    response = dev_client.post("/dev/agents/mine/keys/", {"name": "laptop"}, follow=True)
    assert response.redirect_chain == [(reverse("developers:keys", kwargs={"slug": "mine"}), 302)]
    secret = response.context["secret"]
    assert secret.startswith("a2a_")
    assert secret in response.content.decode()
    assert response["Cache-Control"].startswith("max-age=0")
    key = ApiKey.objects.get()
    assert (key.owner, key.agent, key.name) == (developer, agent, "laptop")
    # A reload of the page the form led to shows it no more and makes no second key.
    assert secret not in dev_client.get("/dev/agents/mine/keys/").content.decode()
    assert ApiKey.objects.count() == 1
    assert send(agent, secret).status_code == 200


def test_an_agent_taking_oauth2_tokens_only_offers_no_api_key(
    dev_client: Client, developer: User
) -> None:
    # Its page said "none needed" and its keys page made keys that were then refused (401).
    owned("vault", developer, oauth2=True)

    page = dev_client.get("/dev/agents/vault/").content.decode()
    keys = dev_client.get("/dev/agents/vault/keys/").content.decode()
    posted = dev_client.post("/dev/agents/vault/keys/", {"name": "laptop"})

    assert "an OAuth2 token from <code>/o/token/</code> (API keys are refused)" in page
    assert "none needed" not in page
    assert 'id="oauth2-only"' in keys and 'id="key-form"' not in keys
    assert posted.status_code == 200
    assert not ApiKey.objects.exists()


@pytest.mark.usefixtures("door")
def test_a_revoked_key_stops_working(dev_client: Client, developer: User) -> None:
    agent = owned("mine", developer, **SECURED)
    key, secret = ApiKey.issue("laptop", developer, agent)
    assert send(agent, secret).status_code == 200
    response = dev_client.post(f"/dev/agents/mine/keys/{key.pk}/revoke/")
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:keys", kwargs={"slug": "mine"})
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert send(agent, secret).status_code == 401
    assert "revoked" in dev_client.get("/dev/agents/mine/keys/").content.decode()


def test_a_key_needs_a_name(dev_client: Client, developer: User) -> None:
    owned("mine", developer)
    response = dev_client.post("/dev/agents/mine/keys/", {"name": ""})
    assert response.context["form"].errors["name"]
    assert not ApiKey.objects.exists()


# -- tasks -----------------------------------------------------------------------------------


def make_task(agent: Agent, age_minutes: int, text: str = "", owner: str = "apikey:1") -> Task:
    when = timezone.now() - timedelta(minutes=age_minutes)
    status = {"messageId": "s", "role": "ROLE_AGENT", "parts": [{"text": text}]} if text else None
    return Task.objects.create(
        agent=agent, owner=owner, context_id="ctx", state="working", status_message=status,
        status_timestamp=when, protocol_version="1.0", execution_mode="inline",
        created_at=when, updated_at=when,
    )  # fmt: skip


def test_the_task_list_shows_the_agents_tasks_newest_first(
    dev_client: Client, developer: User, rival: User
) -> None:
    agent = owned("mine", developer)
    make_task(agent, 30, "thinking about it")
    make_task(agent, 5, "nearly there")
    make_task(owned("theirs", rival), 1, "not yours")
    page = dev_client.get("/dev/agents/mine/tasks/").content.decode()
    assert page.index("nearly there") < page.index("thinking about it")
    assert "not yours" not in page


def test_the_task_list_is_paginated(dev_client: Client, developer: User) -> None:
    agent = owned("mine", developer)
    for age in range(30):
        make_task(agent, age, f"task aged {age}")
    first = dev_client.get("/dev/agents/mine/tasks/")
    assert len(first.context["page"].object_list) == 25
    assert "task aged 0<" in first.content.decode()
    assert "task aged 29<" not in first.content.decode()
    second = dev_client.get("/dev/agents/mine/tasks/?page=2").content.decode()
    assert "task aged 29" in second
    assert "task aged 0<" not in second


def test_task_counts_stop_at_the_cap_on_the_agent_list_and_the_task_list(
    dev_client: Client, developer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cap is 10,000 (a million tasks are not counted for a page); 3 here.
    monkeypatch.setattr(retention, "COUNT_LIMIT", 3)
    agent = make_agent("mine", skills=2, owner=developer)
    owned("quiet", developer)
    for age in range(5):
        make_task(agent, age, f"task aged {age}")

    listing = dev_client.get("/dev/agents/").content.decode()
    row = listing.split('href="/dev/agents/mine/"')[1].split("</tr>")[0]
    assert "<td>3+</td>" in row.replace(",", "")  # "10,000+" at the real cap
    assert "<td>2</td>" in row  # its skills, counted once each
    quiet = listing.split('href="/dev/agents/quiet/"')[1].split("</tr>")[0]
    assert "<td>0</td>" in quiet
    tasks = dev_client.get("/dev/agents/mine/tasks/").content.decode()
    assert "(3+ in all)" in tasks
    assert "task aged 0<" in tasks  # newest first, as ever


# -- try it ----------------------------------------------------------------------------------


def test_try_it_sends_a_message_as_the_owner_and_shows_the_echo(
    dev_client: Client, developer: User
) -> None:
    agent = owned("mine", developer, **SECURED)
    body = dev_client.post("/dev/agents/mine/try/", {"text": "hello there"}).json()
    assert body["ok"] is True
    assert body["state"] == "completed"
    assert body["text"] == "hello there"
    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task = Task.objects.get(agent=agent)
    assert task.owner == f"user:{developer.pk}"
    assert str(task.id) == body["taskId"]


@pytest.mark.usefixtures("door")
def test_the_task_table_says_which_door_each_task_came_through(
    dev_client: Client, developer: User
) -> None:
    owned("mine", developer)
    dev_client.post("/dev/agents/mine/try/", {"text": "from the page"})
    Door().post("/agents/mine/rest/message:send", content_type="application/json",
                  data={"message": {"messageId": "m", "role": "ROLE_USER",
                                    "parts": [{"text": "over REST"}]}})  # fmt: skip
    message = {"kind": "message", "messageId": "m2", "role": "user",
               "parts": [{"kind": "text", "text": "over JSON-RPC"}]}  # fmt: skip
    Door().post("/agents/mine/jsonrpc/", content_type="application/json",
                  data={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                        "params": {"message": message}})  # fmt: skip

    page = dev_client.get("/dev/agents/mine/tasks/").content.decode()

    bindings = sorted(Task.objects.values_list("binding", "protocol_version"))
    assert bindings == [("HTTP+JSON", "1.0"), ("JSONRPC", "0.3"), ("PAGE", "1.0")]
    for shown in ("developer page 1.0", "HTTP+JSON 1.0", "JSON-RPC 0.3"):
        assert shown in page


def test_try_it_refuses_the_owner_of_an_oauth2_only_agent_as_its_doors_refuse_a_session(
    dev_client: Client, dev_door: Door, developer: User
) -> None:
    owned("secure", developer, oauth2=True)
    door = dev_door.post("/agents/secure/rest/message:send", content_type="application/json",
                         data={"message": {"messageId": "m", "role": "ROLE_USER",
                                           "parts": [{"text": "by session"}]}})  # fmt: skip

    body = dev_client.post("/dev/agents/secure/try/", {"text": "hi"}).json()

    assert door.status_code == 401
    assert body["ok"] is False
    assert body["error"]["message"] == door.json()["error"]["message"]
    assert not Task.objects.exists()


def test_try_it_refuses_an_empty_message(dev_client: Client, developer: User) -> None:
    owned("mine", developer)
    body = dev_client.post("/dev/agents/mine/try/", {"text": "  "}).json()
    assert body["ok"] is False
    assert not Task.objects.exists()


def test_try_it_refuses_a_nul_naming_the_field_and_stores_nothing(
    dev_client: Client, developer: User
) -> None:
    owned("mine", developer)
    body = dev_client.post("/dev/agents/mine/try/", {"text": "a\x00b"}).json()
    assert body["ok"] is False
    assert body["error"]["code"] == -32602
    assert body["error"]["message"] == (
        "Invalid params: message.parts[0].text: holds U+0000 (NUL), which the hub cannot store"
    )
    assert not Task.objects.exists()


def test_try_it_says_when_the_agent_is_disabled(dev_client: Client, developer: User) -> None:
    owned("mine", developer, enabled=False)
    body = dev_client.post("/dev/agents/mine/try/", {"text": "hi"}).json()
    assert "disabled" in body["error"]["message"]


def test_the_forms_are_protected_against_cross_site_posts(developer: User) -> None:
    owned("mine", developer)
    client = Client(enforce_csrf_checks=True)
    client.force_login(developer)
    for path in ["/dev/register/", "/dev/register/preview/", "/dev/agents/mine/try/",
                 "/dev/agents/mine/keys/", "/dev/agents/mine/edit/"]:  # fmt: skip
        assert client.post(path, {"text": "hi", "name": "x"}).status_code == 403, path
