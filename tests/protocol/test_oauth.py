"""OAuth2 through the hub's own authorization server: tokens from /o/token/ are principals on
every door, the agent's access rule and the token's scopes decide who may call it, and the
answers follow RFC 6750 (401 without a valid token, 403 with `insufficient_scope`)."""

from __future__ import annotations

import base64
import hashlib
from datetime import timedelta
from typing import Any

import pytest
from a2a.client.card_resolver import parse_agent_card
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import AccessToken

from agents.models import Access, Agent, ApiKey
from tests.door_client import Door
from tests.factories.agents import make_agent
from tests.factories.envelopes import url
from tests.factories.oauth import machine, token_for, user_token
from tests.factories.signatures import card_verifier
from tests.factories.versions import V03, V1
from tests.protocol.answers import error_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.usefixtures("door")


class Bearer(Caller):
    """A caller presenting an OAuth2 access token (or nothing) instead of an API key."""

    def __init__(self, token: str | None, principal: str = "") -> None:
        super().__init__(None, principal)
        self.token = token

    def post(self, slug: str, body: Any, version: str | None = V03,
             headers: dict[str, str] | None = None, content_type: str = "application/json",
             ) -> Any:  # fmt: skip
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return super().post(slug, body, version, auth | (headers or {}), content_type)

    def rest(self, method: str, path: str, body: Any = None) -> Any:
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if method == "GET":
            return self.client.get(path, headers=auth)
        return self.client.post(path, data=body or {}, content_type="application/json",
                                headers=auth)  # fmt: skip


@pytest.fixture
def secure() -> Agent:
    return make_agent("secure", skills=2, oauth2=True, access=Access.SIGNED_IN)


def test_the_hub_publishes_its_authorization_server_metadata() -> None:
    document = Client().get("/.well-known/oauth-authorization-server").json()

    assert document["issuer"] == "http://testserver"
    assert document["token_endpoint"] == "http://testserver/o/token/"
    assert document["authorization_endpoint"] == "http://testserver/o/authorize/"
    assert document["revocation_endpoint"] == "http://testserver/o/revoke_token/"
    assert document["introspection_endpoint"] == "http://testserver/o/introspect/"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert set(document["grant_types_supported"]) == {
        "authorization_code", "client_credentials", "refresh_token"}  # fmt: skip


def test_an_oauth2_agent_publishes_the_scheme_and_its_resource_metadata(secure: Agent) -> None:
    card = Client().get("/agents/secure/.well-known/agent-card.json",
                        headers={"A2A-Version": "1.0"}).json()  # fmt: skip
    scheme = card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]
    people = card["securitySchemes"]["oauth2AuthorizationCode"]["oauth2SecurityScheme"]
    resource = Client().get("/.well-known/oauth-protected-resource/agents/secure").json()

    assert scheme["oauth2MetadataUrl"] == "http://testserver/.well-known/oauth-authorization-server"
    assert scheme["flows"]["clientCredentials"]["tokenUrl"] == "http://testserver/o/token/"
    code_flow = people["flows"]["authorizationCode"]
    assert code_flow["authorizationUrl"] == "http://testserver/o/authorize/"
    assert {"schemes": {"oauth2": {"list": ["a2a:invoke"]}}} in card["securityRequirements"]
    assert resource["resource"] == "http://testserver/agents/secure"
    assert resource["authorization_servers"] == ["http://testserver"]
    assert "agent:secure" in resource["scopes_supported"]


@pytest.mark.parametrize("version", [V1, V03])
def test_a_client_credentials_token_calls_the_agent_and_owns_as_its_application(
    secure: Agent, version: str
) -> None:
    app, secret = machine()
    token = token_for(app, secret)
    caller = Bearer(token["access_token"])

    task = caller.send("secure", version, "hello with a token")

    assert token["scope"] == "a2a:invoke"
    assert caller.get("secure", version, task["id"])["id"] == task["id"]
    assert secure.tasks.get().owner == f"app:{app.pk}"


def test_without_a_token_the_agent_answers_401_naming_its_resource_metadata(secure: Agent) -> None:
    response = Bearer(None).rpc("secure", V1, "send")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == (
        'Bearer realm="a2a-hub", resource_metadata='
        '"http://testserver/.well-known/oauth-protected-resource/agents/secure"'
    )


def test_an_api_key_is_not_enough_where_oauth2_is_required(secure: Agent) -> None:
    _, raw = ApiKey.issue("a key")

    response = Caller(raw).rpc("secure", V1, "send")

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith('Bearer realm="a2a-hub"')


def test_a_token_lacking_the_scope_gets_403_insufficient_scope(secure: Agent) -> None:
    make_agent("other")
    app, secret = machine()
    token = token_for(app, secret, scope="agent:other")

    rpc = Bearer(token["access_token"]).rpc("secure", V1, "send")
    rest = Bearer(token["access_token"]).rest("GET", "/agents/secure/rest/tasks/nope")

    for response in (rpc, rest):
        assert response.status_code == 403
        assert response["WWW-Authenticate"].startswith(
            'Bearer realm="a2a-hub", error="insufficient_scope", scope="a2a:invoke agent:secure"'
        )
        assert response.json()["error"]["status"] == "PERMISSION_DENIED"


def test_a_revoked_token_gets_401(secure: Agent) -> None:
    app, secret = machine()
    token = token_for(app, secret)
    basic = base64.b64encode(f"{app.client_id}:{secret}".encode()).decode()
    revoked = Client().post("/o/revoke_token/", {"token": token["access_token"]},
                            headers={"Authorization": f"Basic {basic}"})  # fmt: skip

    response = Bearer(token["access_token"]).rpc("secure", V1, "send")

    assert revoked.status_code == 200
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_an_expired_token_gets_401(secure: Agent) -> None:
    app, secret = machine()
    token = token_for(app, secret)
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))

    response = Bearer(token["access_token"]).rpc("secure", V1, "send")

    assert response.status_code == 401
    assert 'error_description="The access token expired"' in response["WWW-Authenticate"]


def test_introspection_reports_an_active_token_to_its_client(secure: Agent) -> None:
    app, secret = machine()
    token = token_for(app, secret)
    basic = base64.b64encode(f"{app.client_id}:{secret}".encode()).decode()

    answer = Client().post("/o/introspect/", {"token": token["access_token"]},
                           headers={"Authorization": f"Basic {basic}"}).json()  # fmt: skip

    assert answer["active"] is True and answer["scope"] == "a2a:invoke"


def introspect(app: Any, secret: str, token: str) -> dict[str, Any]:
    basic = base64.b64encode(f"{app.client_id}:{secret}".encode()).decode()
    headers = {"Authorization": f"Basic {basic}"}
    answer: dict[str, Any] = (
        Client().post("/o/introspect/", {"token": token}, headers=headers).json()
    )
    return answer


def test_introspection_tells_another_client_nothing_of_a_token(secure: Agent) -> None:
    mine, my_secret = machine("mine")
    theirs, their_secret = machine("theirs")
    token = token_for(mine, my_secret)["access_token"]

    assert introspect(theirs, their_secret, token) == {"active": False}
    assert introspect(mine, my_secret, token)["active"] is True


def test_a_resource_server_the_operator_names_introspects_every_token(
    secure: Agent, settings: Any
) -> None:
    client, secret = machine("client")
    resource, resource_secret = machine("resource server")
    settings.OAUTH2_INTROSPECTION_CLIENT_IDS = [resource.client_id]
    token = token_for(client, secret)["access_token"]

    answer = introspect(resource, resource_secret, token)

    assert answer["active"] is True and answer["client_id"] == client.client_id


def test_a_bearer_token_with_the_introspection_scope_learns_only_of_its_clients_tokens(
    secure: Agent,
) -> None:
    mine, my_secret = machine("mine")
    other, other_secret = machine("other")
    introspector = token_for(mine, my_secret, scope="a2a:invoke")
    checksum = hashlib.sha256(introspector["access_token"].encode()).hexdigest()
    AccessToken.objects.filter(token_checksum=checksum).update(scope="a2a:invoke introspection")
    own = token_for(mine, my_secret)["access_token"]
    foreign = token_for(other, other_secret)["access_token"]

    def ask(token: str) -> dict[str, Any]:
        answer: dict[str, Any] = Client().post("/o/introspect/", {"token": token}, headers={
            "Authorization": f"Bearer {introspector['access_token']}"}).json()  # fmt: skip
        return answer

    assert ask(own)["active"] is True
    assert ask(foreign) == {"active": False}


def test_a_users_key_token_and_session_see_the_same_tasks(secure: Agent) -> None:
    open_agent = make_agent("open")
    ada = User.objects.create_user("ada", password="pw")
    key, raw = ApiKey.issue("ada's key", owner=ada)
    token = user_token(ada)
    browser = Door()
    browser.force_login(ada)

    by_key = Caller(raw).send("open", V1, "from the key")
    by_token = Bearer(token["access_token"]).get("open", V1, by_key["id"])
    by_session = browser.post(url("open"), data={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                              "params": {"id": by_key["id"]}}, content_type="application/json",
                              headers={"A2A-Version": V1}).json()  # fmt: skip

    assert key.principal == f"user:{ada.pk}" == open_agent.tasks.get().owner
    assert by_token["id"] == by_key["id"] == by_session["result"]["id"]
    assert "refresh_token" in token


def test_another_principal_finds_no_task_of_the_first(secure: Agent) -> None:
    app, secret = machine("first")
    other, other_secret = machine("second")
    sent = Bearer(token_for(app, secret)["access_token"]).send("secure", V1)

    error = error_of(Bearer(token_for(other, other_secret)["access_token"])
                     .rpc("secure", V1, "get", {"id": sent["id"]}))  # fmt: skip

    assert error["code"] == -32001  # TaskNotFound, as for a task that never was


def test_an_agent_listed_for_one_group_takes_its_members_only() -> None:
    team = Group.objects.create(name="team")
    member = User.objects.create_user("member")
    member.groups.add(team)
    outsider = User.objects.create_user("outsider")
    agent = make_agent("team-only", access=Access.LISTED)
    agent.allowed_groups.add(team)
    _, member_key = ApiKey.issue("member", owner=member)
    _, outsider_key = ApiKey.issue("outsider", owner=outsider)
    app, secret = machine()

    member_token = user_token(member)["access_token"]
    app_token = token_for(app, secret)["access_token"]

    def status(caller: Caller) -> int:
        code: int = caller.rpc("team-only", V1, "send").status_code
        return code

    assert status(Caller(member_key)) == 200 and status(Bearer(member_token)) == 200
    assert status(Caller(outsider_key)) == 403 and status(Bearer(app_token)) == 403
    assert status(Bearer(None)) == 401


def test_a_listed_application_may_call_as_itself() -> None:
    app, secret = machine()
    agent = make_agent("for-robots", access=Access.LISTED)
    agent.allowed_applications.add(app)

    token = token_for(app, secret)["access_token"]

    assert Bearer(token).rpc("for-robots", V1, "send").status_code == 200


def test_the_extended_card_lists_only_the_skills_the_token_reaches() -> None:
    make_agent("skilled", skills=3, oauth2=True, extended_card=True)
    app, secret = machine()
    narrow = token_for(app, secret, scope="skill:skilled:skilled-skill-1")
    wide = token_for(app, secret)

    def skills_seen(token: dict[str, Any]) -> list[str]:
        response = Bearer(token["access_token"]).rpc("skilled", V1, "card")
        return [skill["id"] for skill in response.json()["result"]["skills"]]

    assert skills_seen(narrow) == ["skilled-skill-1"]
    assert skills_seen(wide) == ["skilled-skill-0", "skilled-skill-1", "skilled-skill-2"]


def test_a_request_with_a_token_writes_nothing_to_authenticate(secure: Agent) -> None:
    app, secret = machine()
    caller = Bearer(token_for(app, secret)["access_token"])
    task = caller.send("secure", V1)

    with CaptureQueriesContext(connection) as queries:
        assert caller.get("secure", V1, task["id"])["id"] == task["id"]

    writes = [q["sql"] for q in queries if not q["sql"].lstrip().upper().startswith("SELECT")]
    assert writes == []


@pytest.mark.parametrize("headers", [{}, {"A2A-Version": "1.0"}], ids=["union", "1.0"])
def test_the_card_with_the_oauth2_schemes_verifies_with_the_sdk(
    secure: Agent, headers: dict[str, str]
) -> None:
    client = Client()
    card = parse_agent_card(
        client.get("/agents/secure/.well-known/agent-card.json", headers=headers).json()
    )

    card_verifier(client)(card)
    assert set(card.security_schemes) == {"oauth2", "oauth2AuthorizationCode"}
