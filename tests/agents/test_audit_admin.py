"""The audit log in the admin: operators read credential uses and access changes, newest first,
narrowed by agent, principal and credential kind; nobody adds, changes or deletes a row; the
OAuth2 token and application lists say when each last called an agent."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import reverse
from oauth2_provider.models import AccessToken, Application

from agents import audit
from agents.models import AccessChange, AccessVia, Agent, ApiKey, CredentialUse
from agents.principals import ANONYMOUS, key_principal
from tests.door_client import Door
from tests.factories.agents import make_agent
from tests.factories.oauth import machine, token_for

pytestmark = pytest.mark.django_db

USES = reverse("admin:agents_credentialuse_changelist")
CHANGES = reverse("admin:agents_accesschange_changelist")


def call_with_key(agent: Agent, owner: User, times: int = 1) -> ApiKey:
    """Calls counted as the door counts them: the principal that a key resolves to."""
    key, _ = ApiKey.issue(f"{owner.username}'s key", owner=owner)
    for _ in range(times):
        audit.note_use(agent, key_principal(key), "JSONRPC", "1.0")
    return key


def rows_of(page: Any) -> list[str]:
    """The agent and principal of each row the changelist shows."""
    return [f"{use.agent_slug} {use.principal}" for use in page.context["cl"].result_list]


@pytest.fixture
def calls(developer: User, operator: User) -> dict[str, Agent]:
    """The developer called `alpha` three times and `beta` once, the operator `alpha` once, and
    someone anonymous `beta`."""
    alpha, beta = make_agent("alpha"), make_agent("beta")
    call_with_key(alpha, developer, times=3)
    call_with_key(beta, developer)
    call_with_key(alpha, operator)
    audit.note_use(beta, ANONYMOUS, "HTTP+JSON", "0.3")
    audit.flush()
    return {"alpha": alpha, "beta": beta}


def test_operators_read_every_use_newest_first(
    operator_client: Client, calls: dict[str, Agent], developer: User
) -> None:
    page = operator_client.get(USES)

    assert page.status_code == 200
    shown = page.context["cl"].result_list
    assert len(shown) == 4
    assert [u.last_used_at for u in shown] == sorted((u.last_used_at for u in shown), reverse=True)
    assert f"user:{developer.pk} (dev)" in page.content.decode()  # the principal filter


def test_the_list_narrows_to_an_agent_and_a_principal(
    operator_client: Client, calls: dict[str, Agent], developer: User
) -> None:
    alpha = calls["alpha"]
    mine = f"user:{developer.pk}"

    by_agent = operator_client.get(USES, {"agent__id__exact": alpha.pk})
    by_principal = operator_client.get(USES, {"principal": mine})
    by_both = operator_client.get(USES, {"agent__id__exact": alpha.pk, "principal": mine})
    by_kind = operator_client.get(USES, {"credential_kind__exact": "anonymous"})

    assert sorted(rows_of(by_agent)) == sorted([f"alpha {mine}", f"alpha user:{calls_by_op()}"])
    assert sorted(rows_of(by_principal)) == [f"alpha {mine}", f"beta {mine}"]
    assert rows_of(by_both) == [f"alpha {mine}"]
    assert by_both.context["cl"].result_list[0].calls == 3
    assert rows_of(by_kind) == ["beta anonymous"]


def calls_by_op() -> int:
    return User.objects.get(username="op").pk


def test_search_finds_uses_by_key_name(operator_client: Client, calls: dict[str, Agent]) -> None:
    page = operator_client.get(USES, {"q": "op's key"})

    assert rows_of(page) == [f"alpha user:{calls_by_op()}"]


def test_nobody_adds_changes_or_deletes_a_row(
    operator_client: Client, calls: dict[str, Agent]
) -> None:
    use = CredentialUse.objects.first()
    assert use is not None
    change_url = reverse("admin:agents_credentialuse_change", args=[use.pk])

    assert operator_client.get(reverse("admin:agents_credentialuse_add")).status_code == 403
    assert operator_client.post(change_url, {"calls": "0"}).status_code == 403
    delete_url = reverse("admin:agents_credentialuse_delete", args=[use.pk])
    assert operator_client.post(delete_url, {"post": "yes"}).status_code == 403
    assert CredentialUse.objects.get(pk=use.pk).calls == use.calls
    assert operator_client.get(reverse("admin:agents_accesschange_add")).status_code == 403


def test_non_staff_users_cannot_read_the_log(client: Client, developer: User) -> None:
    client.force_login(developer)

    response = client.get(USES)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_access_changes_are_listed_by_agent_and_operator(
    operator_client: Client, operator: User, developer: User
) -> None:
    alpha, beta = make_agent("alpha"), make_agent("beta")
    opened = {"access": "anyone"}
    audit.record_access_change(alpha, operator, AccessVia.ADMIN, opened, {"access": "listed"})
    audit.record_access_change(beta, developer, AccessVia.DEVELOPER_PAGES, opened,
                               {"access": "signed_in"})  # fmt: skip

    everything = operator_client.get(CHANGES)
    by_agent = operator_client.get(CHANGES, {"agent__id__exact": beta.pk})
    by_actor = operator_client.get(CHANGES, {"actor__id__exact": operator.pk})

    assert [c.agent_slug for c in everything.context["cl"].result_list] == ["beta", "alpha"]
    assert [c.actor_name for c in by_agent.context["cl"].result_list] == ["dev"]
    assert [c.agent_slug for c in by_actor.context["cl"].result_list] == ["alpha"]
    assert "signed_in" in everything.content.decode()
    assert AccessChange.objects.count() == 2


def test_tokens_and_applications_show_their_last_use(operator_client: Client, door: Door) -> None:
    make_agent("vault", oauth2=True)
    app, secret = machine("robot")
    raw = token_for(app, secret)["access_token"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "no-such-task"}}
    door.post("/agents/vault/jsonrpc/", body, content_type="application/json",
              headers={"Authorization": f"Bearer {raw}", "A2A-Version": "1.0"})  # fmt: skip
    audit.flush()
    used = CredentialUse.objects.get(token_id=AccessToken.objects.get(application=app).pk)

    tokens = operator_client.get(reverse("admin:oauth2_provider_accesstoken_changelist"))
    apps = operator_client.get(reverse("admin:oauth2_provider_application_changelist"))

    assert tokens.context["cl"].result_list[0]._last_used == used.last_used_at
    assert apps.context["cl"].result_list[0]._last_used == used.last_used_at
    assert "last used (audit log)" in tokens.content.decode().lower()


def test_an_applications_admin_page_links_to_no_page_the_hub_lacks(
    operator_client: Client,
) -> None:
    # Its "View on site" led to django-oauth-toolkit's management page, not mounted: a 500.
    app, _ = machine("robot")

    page = operator_client.get(reverse("admin:oauth2_provider_application_change", args=[app.pk]))

    assert page.status_code == 200
    assert "View on site" not in page.content.decode()
    # Nor does the admin's redirect, typed by hand.
    kind = ContentType.objects.get_for_model(app)
    assert operator_client.get(f"/admin/r/{kind.pk}/{app.pk}/").status_code == 404


def add_application_form(client: Client) -> tuple[str, dict[str, Any]]:
    """The admin's page to add an application, and its form's fields as the page fills them."""
    page = reverse("admin:oauth2_provider_application_add")
    form = client.get(page).context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form.get_initial_for_field(field, name)
        if value not in (None, False):
            data[name] = "on" if value is True else value
    return page, data


@pytest.mark.parametrize(
    ("grant", "uris", "said"),
    [
        ("authorization-code", "",
         ["People are sent back to a redirect URI after they consent: give at least one."]),
        ("authorization-code", "ftp://client.example/back https://client.example/ok#done",
         ["ftp://client.example/back is not an http or https URL (one URI a line; a space ends "
          "a URI).",
          "https://client.example/ok#done has a fragment (#done), which a redirect URI may not "
          "have."]),
        ("client-credentials", "http://[::1/x", ["http://[::1/x is not a URL."]),
    ],
)  # fmt: skip
def test_the_admin_names_each_refused_redirect_uri_with_what_is_wrong(
    operator_client: Client, grant: str, uris: str, said: list[str]
) -> None:
    # django-oauth-toolkit's own words were "redirect uri URI Validation error. invalid_scheme:".
    page, data = add_application_form(operator_client)
    data |= {"name": "portal", "client_type": "confidential",
             "authorization_grant_type": grant, "redirect_uris": uris}  # fmt: skip

    answer = operator_client.post(page, data)

    assert answer.status_code == 200  # the form again, not a redirect to the list
    assert answer.context["adminform"].form.errors["redirect_uris"] == said
    assert not Application.objects.exists()


def test_the_admin_adds_an_application_whose_redirect_uris_are_good(
    operator_client: Client,
) -> None:
    page, data = add_application_form(operator_client)
    data |= {"name": "portal", "client_type": "confidential",
             "authorization_grant_type": "authorization-code",
             "redirect_uris": "https://client.example/back\nhttp://localhost:8765/cb"}  # fmt: skip

    answer = operator_client.post(page, data)

    assert answer.status_code == 302, answer.context and answer.context["adminform"].form.errors
    assert Application.objects.get().redirect_uris.split() == [
        "https://client.example/back", "http://localhost:8765/cb"
    ]  # fmt: skip
