"""The developer pages' access page: an agent's owner (or staff) says who may call it, and the
A2A endpoint follows at once.

Personas and their rights:
- `developer` (tests/conftest.py): signed in, owns `mine`; sets its access and lists users,
  groups and their own applications (not another user's, unless it is listed already).
- `rival`: another signed-in user with an application of their own; `mine` does not exist
  for them (404) and they change nothing.
- `operator` (tests/conftest.py): staff; opens any agent's access page and may list any
  application.
- `friend`: a member of the developer's group, whom they list by username; calls with an API
  key of their own. Users outside the developer's groups answer as unknown names do.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from oauth2_provider.models import Application

from agents import audit
from agents.models import Access, AccessChange, AccessVia, Agent, ApiKey
from tests.door_client import Door
from tests.factories.agents import owned
from tests.factories.oauth import machine, token_for

pytestmark = pytest.mark.django_db

PAGE = "/dev/agents/mine/access/"


@pytest.fixture
def rival(db: None) -> User:
    return User.objects.create_user("rival", "rival@example.com", "rival-pass-123")


@pytest.fixture
def friend(developer: User) -> User:
    """A member of a group of the developer's: someone they may list by name."""
    friend = User.objects.create_user("friend", "friend@example.com", "friend-pass-123")
    crew = Group.objects.create(name="crew")
    crew.user_set.add(developer, friend)
    return friend


@pytest.fixture
def mine(developer: User) -> Agent:
    return owned("mine", developer)


def send(headers: dict[str, str]) -> Any:
    envelope = {
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }  # fmt: skip
    return Door().post(
        "/agents/mine/jsonrpc/", json.dumps(envelope), content_type="application/json",
        headers={"A2A-Version": "1.0"} | headers,
    )  # fmt: skip


def bearer(app: Application, secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_for(app, secret)['access_token']}"}


def key_of(user: User, agent: Agent) -> dict[str, str]:
    return {"X-API-Key": ApiKey.issue("key", user, agent)[1]}


def save(client: Client, **fields: Any) -> Any:
    data = {"access": "anyone", "allowed_users": ""} | fields
    return client.post(PAGE, data)


def test_the_page_sends_an_anonymous_visitor_to_sign_in(client: Client, mine: Agent) -> None:
    response = client.post(PAGE, {"access": "listed"})
    assert response.status_code == 302
    assert response["Location"] == f"/dev/login/?next={PAGE}"
    mine.refresh_from_db()
    assert mine.access == Access.ANYONE


def test_another_users_agent_is_not_found_and_stays_as_it_is(mine: Agent, rival: User) -> None:
    client = Client()
    client.force_login(rival)
    assert client.get(PAGE).status_code == 404
    assert client.post(PAGE, {"access": "listed", "allowed_users": "rival"}).status_code == 404
    mine.refresh_from_db()
    assert mine.access == Access.ANYONE
    assert not mine.allowed_users.exists()


@pytest.mark.usefixtures("door")
def test_the_owner_lists_their_application_and_only_it_may_call(
    dev_client: Client, developer: User, mine: Agent
) -> None:
    listed, listed_secret = machine("listed", owner=developer)
    other, other_secret = machine("other", owner=developer)
    assert send(bearer(other, other_secret)).status_code == 200  # open to anyone, and cached

    response = save(dev_client, access="listed", allowed_applications=[listed.pk])
    assert response.status_code == 302
    assert response["Location"] == PAGE
    assert send(bearer(listed, listed_secret)).status_code == 200
    assert send(bearer(other, other_secret)).status_code == 403
    assert send({}).status_code == 401
    assert "Who may call mine is saved." in dev_client.get(PAGE).content.decode()


@pytest.mark.usefixtures("door")
def test_listed_users_and_groups_may_call_and_others_may_not(
    dev_client: Client, mine: Agent, friend: User, rival: User
) -> None:
    team = Group.objects.create(name="team")
    member = User.objects.create_user("member")
    member.groups.add(team)
    response = save(dev_client, access="listed", allowed_users="friend", allowed_groups=[team.pk])
    assert response.status_code == 302
    assert list(mine.allowed_users.all()) == [friend]
    assert send(key_of(friend, mine)).status_code == 200
    assert send(key_of(member, mine)).status_code == 200
    assert send(key_of(rival, mine)).status_code == 403


def test_the_page_shows_the_stored_rule(dev_client: Client, mine: Agent, friend: User) -> None:
    mine.access = Access.LISTED
    mine.save()
    mine.allowed_users.add(friend, User.objects.create_user("zed"))
    page = dev_client.get(PAGE)
    assert page.status_code == 200
    form = page.context["form"]
    assert form["access"].value() == Access.LISTED
    assert form["allowed_users"].value() == "friend, zed"
    assert 'id="id_access_2" checked' in page.content.decode()


@pytest.mark.usefixtures("door")
def test_requiring_oauth2_refuses_a_key_and_takes_a_token(
    dev_client: Client, developer: User, mine: Agent
) -> None:
    app, secret = machine("robot", owner=developer)
    key = key_of(developer, mine)
    assert send(key).status_code == 200
    assert save(dev_client, access="signed_in", oauth2="on").status_code == 302
    assert send(key).status_code == 401
    assert send(bearer(app, secret)).status_code == 200


def test_unknown_usernames_are_named_and_nothing_is_saved(
    dev_client: Client, mine: Agent, friend: User
) -> None:
    response = save(dev_client, access="listed", allowed_users="friend, nobody,ghost")
    assert response.status_code == 400
    assert response.context["form"].errors["allowed_users"] == [
        "No user you may list is named ghost, nobody (you may list the members of your groups; "
        "an operator may list anyone)."
    ]
    mine.refresh_from_db()
    assert mine.access == Access.ANYONE
    assert not mine.allowed_users.exists()


def test_the_page_does_not_tell_an_owner_which_usernames_exist(
    dev_client: Client, mine: Agent, friend: User, rival: User
) -> None:
    def refusal(name: str) -> Any:
        response = save(dev_client, access="listed", allowed_users=name)
        assert response.status_code == 400
        return response.context["form"].errors["allowed_users"][0].replace(name, "NAME")

    assert refusal("rival") == refusal("no-such-user")  # a user, but not of the owner's groups
    assert not mine.allowed_users.exists()


def test_staff_list_any_user_and_an_owner_keeps_those_listed(
    operator_client: Client, dev_client: Client, mine: Agent, rival: User
) -> None:
    assert save(operator_client, access="listed", allowed_users="rival").status_code == 302
    assert list(mine.allowed_users.all()) == [rival]
    assert save(dev_client, access="listed", allowed_users="rival").status_code == 302


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"access": "everybody"}, "access"), ({"access": ""}, "access"),
     ({"allowed_users": "fri\x00end"}, "allowed_users"),
     ({"allowed_groups": ["999999"]}, "allowed_groups")],
)  # fmt: skip
def test_bad_input_is_refused_next_to_its_field(
    dev_client: Client, mine: Agent, fields: dict[str, Any], field: str
) -> None:
    response = save(dev_client, **fields)
    assert response.status_code == 400
    assert response.context["form"].errors[field]
    mine.refresh_from_db()
    assert mine.access == Access.ANYONE


def test_a_developer_cannot_list_another_users_application(
    dev_client: Client, mine: Agent, rival: User
) -> None:
    theirs, _ = machine("theirs", owner=rival)
    assert theirs.client_id not in dev_client.get(PAGE).content.decode()
    response = save(dev_client, access="listed", allowed_applications=[theirs.pk])
    assert response.status_code == 400
    assert "valid choice" in response.context["form"].errors["allowed_applications"][0]
    assert not mine.allowed_applications.exists()
    mine.refresh_from_db()
    assert mine.access == Access.ANYONE


@pytest.mark.usefixtures("door")
def test_an_application_staff_listed_stays_listed_when_the_owner_saves(
    dev_client: Client, developer: User, mine: Agent, rival: User
) -> None:
    theirs, secret = machine("theirs", owner=rival)
    own, _ = machine("own", owner=developer)
    mine.allowed_applications.add(theirs)
    page = dev_client.get(PAGE).content.decode()
    assert f"theirs (client id {theirs.client_id[:8]}…)" in page
    response = save(dev_client, access="listed", allowed_applications=[theirs.pk, own.pk])
    assert response.status_code == 302
    assert set(mine.allowed_applications.all()) == {theirs, own}
    assert send(bearer(theirs, secret)).status_code == 200


@pytest.mark.usefixtures("door")
def test_staff_open_any_agents_page_and_may_list_any_application(
    operator_client: Client, mine: Agent, rival: User
) -> None:
    theirs, secret = machine("theirs", owner=rival)
    page = operator_client.get(PAGE)
    assert page.status_code == 200
    assert "Open it in the admin" in page.content.decode()
    response = save(operator_client, access="listed", allowed_applications=[theirs.pk])
    assert response.status_code == 302
    assert send(bearer(theirs, secret)).status_code == 200


def test_the_agent_page_links_to_the_access_page(dev_client: Client, mine: Agent) -> None:
    page = dev_client.get("/dev/agents/mine/").content.decode()
    assert f'href="{PAGE}"' in page
    assert 'Who may call it</dt><dd id="access-summary">anyone' in page


def test_a_saved_change_is_logged_as_made_on_the_developer_pages_and_listed_on_the_page(
    dev_client: Client, developer: User, mine: Agent, friend: User
) -> None:
    assert save(dev_client, access="listed", allowed_users="friend").status_code == 302

    change = AccessChange.objects.get(agent=mine)
    assert (change.actor, change.via) == (developer, AccessVia.DEVELOPER_PAGES)
    assert change.before == {"access": "anyone", "allowed_users": []}
    assert change.after == {"access": "listed", "allowed_users": ["friend"]}
    shown = dev_client.get(PAGE).content.decode()
    assert "developer pages" in shown
    assert "allowed_users to <code>friend</code>" in shown  # names in words, not a Python list

    assert save(dev_client, access="listed", allowed_users="friend").status_code == 302
    assert AccessChange.objects.filter(agent=mine).count() == 1  # nothing changed: nothing logged


@pytest.mark.usefixtures("door")
def test_the_page_lists_who_called_with_which_credential_once_the_calls_are_written(
    dev_client: Client, developer: User, mine: Agent, friend: User
) -> None:
    robot, secret = machine("robot", owner=developer)
    friends_key = key_of(friend, mine)
    assert send(bearer(robot, secret)).status_code == 200
    assert send(friends_key).status_code == 200
    assert send(friends_key).status_code == 200
    assert "No calls yet." in dev_client.get(PAGE).content.decode()  # counted, not written yet

    audit.flush()

    page = dev_client.get(PAGE).content.decode()
    rows = page.split('<tr class="use">')[1:]
    assert len(rows) == 2
    by_caller = {("friend" if "friend" in r else "robot"): r for r in rows}
    assert "API key" in by_caller["friend"] and '<td class="calls">2</td>' in by_caller["friend"]
    assert "application robot" in by_caller["robot"]
    assert "OAuth2 token" in by_caller["robot"] and '<td class="calls">1</td>' in by_caller["robot"]
    assert secret not in page
