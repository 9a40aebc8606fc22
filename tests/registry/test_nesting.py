"""Documents nested past the hub's limit (`a2ahub.nesting.MAX_DEPTH`, 100 objects and
arrays) at every entrance: a precise 4xx or protocol error naming the limit, never a 500.
~900 levels is what a hostile tester sent (the SDK's card reader recursed past Python's
limit); 50,000 is more than json itself will read."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents.models import Agent, ApiKey
from tests.door_client import Door
from tests.factories.agents import agent_data, make_agent
from tests.registry.conftest import CARD_V1, CardServer, Registrar

pytestmark = pytest.mark.django_db
DEPTHS = pytest.mark.parametrize("depth", [101, 900, 50_000])
LIMIT_NAMED = "more than 100 levels deep"


def nested(depth: int) -> str:
    """`depth` arrays one inside another, as JSON text."""
    return "[" * depth + "1" + "]" * depth


def with_member(document: dict[str, Any], name: str, depth: int) -> str:
    """The document's JSON with one more member nested `depth` deep."""
    return json.dumps(document)[:-1] + f', "{name}": {nested(depth)}}}'


@DEPTHS
def test_the_registry_refuses_a_card_nested_past_the_limit(owner: Registrar, depth: int) -> None:
    response = owner.client.post("/registry/agents", with_member(CARD_V1, "x", depth),
                                 content_type="application/json", **owner.headers)  # fmt: skip

    assert response.status_code == 400
    error = response.json()["error"]
    assert LIMIT_NAMED in error["message"] and error["field"] == "body"
    assert not Agent.objects.exists()


def test_a_card_at_a_url_nested_past_the_limit_is_refused_naming_it(
    owner: Registrar, card_server: CardServer
) -> None:
    document = copy.deepcopy(CARD_V1)
    document["skills"][0]["x"] = json.loads(nested(900))
    card_server.document = document

    response = owner.register({"cardUrl": card_server.url})

    assert response.status_code == 400
    assert LIMIT_NAMED in response.json()["error"]["message"]
    assert not Agent.objects.exists()


@DEPTHS
@pytest.mark.parametrize(("version", "method"), [("1.0", "SendMessage"), ("0.3", "message/send")])
@pytest.mark.usefixtures("door")
def test_the_json_rpc_door_answers_invalid_request_naming_the_limit(
    depth: int, version: str, method: str
) -> None:
    make_agent("echo")
    message = {"messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
    envelope = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}

    response = Door().post("/agents/echo/jsonrpc/", with_member(envelope, "x", depth),
                             content_type="application/json",
                             headers={"A2A-Version": version})  # fmt: skip

    error = response.json()["error"]
    assert response.status_code == 200 and error["code"] == -32600
    assert LIMIT_NAMED in error["message"]


@DEPTHS
@pytest.mark.usefixtures("door")
def test_the_rest_door_answers_400_naming_the_limit(depth: int) -> None:
    make_agent("echo")
    response = Door().post("/agents/echo/rest/message:send", f'{{"message": {nested(depth)}}}',
                             content_type="application/json")  # fmt: skip

    assert response.status_code == 400
    assert LIMIT_NAMED in response.json()["error"]["message"]


@pytest.mark.parametrize("depth", [50, 90])
@pytest.mark.usefixtures("door")
def test_a_0_3_message_whose_data_protobuf_cannot_nest_is_invalid_params(depth: int) -> None:
    """Within the hub's limit, but past protobuf's own in the SDK's conversion to 1.0."""
    make_agent("echo", default_input_modes=["*/*"])
    message = {"kind": "message", "messageId": "m-1", "role": "user",
               "parts": [{"kind": "data", "data": {"x": json.loads(nested(depth))}}]}  # fmt: skip
    envelope = {"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": message}}

    answer = Door().post("/agents/echo/jsonrpc/", envelope, content_type="application/json")

    error = answer.json()["error"]
    # The hub's own depth cap (A2A_MAX_JSON_DEPTH) may answer first; either way, invalid params.
    assert error["code"] == -32602 and "deep" in error["message"], error


@DEPTHS
def test_the_operators_api_answers_400_naming_the_limit(operator: Any, depth: int) -> None:
    _, key = ApiKey.issue("operations script", owner=operator)
    body = with_member({"slug": "deep", "name": "Deep", "description": "d"}, "executor_settings",
                       depth)  # fmt: skip

    response = Client().post("/api/agents", body, content_type="application/json",
                             headers={"Authorization": f"Bearer {key}",
                                      "Accept": "application/json"})  # fmt: skip

    assert response.status_code == 400
    assert LIMIT_NAMED in response.json()["error"]["message"]
    assert not Agent.objects.exists()


@pytest.mark.parametrize("depth", [101, 900, 5000])
@pytest.mark.parametrize("path", ["/dev/register/", "/dev/register/preview/"])
def test_the_developer_form_refuses_json_nested_past_the_limit(
    developer: User, depth: int, path: str
) -> None:
    # The one input a script may still post as JSON: the executor's raw settings.
    browser = Client()
    browser.force_login(developer)

    response = browser.post(path, agent_data() | {"executor_settings": f'{{"x": {nested(depth)}}}'})

    assert response.status_code in (200, 400)
    assert LIMIT_NAMED in response.content.decode()
    assert not Agent.objects.exists()


@pytest.mark.parametrize("depth", [101, 5000])
def test_the_admin_form_refuses_json_nested_past_the_limit(
    operator_client: Client, depth: int
) -> None:
    response = operator_client.post("/admin/agents/agent/add/", {
        "slug": "deep", "name": "Deep", "description": "d", "version": "1",
        "executor_kind": "echo", "execution_mode": "inline", "executor_settings": nested(depth),
        "extensions": "[]", "default_input_modes": "[]", "default_output_modes": "[]",
        "security_schemes": "{}", "security_requirements": "[]",
        "skills-TOTAL_FORMS": "0", "skills-INITIAL_FORMS": "0",
    })  # fmt: skip

    assert response.status_code == 200
    assert LIMIT_NAMED in response.content.decode()
    assert not Agent.objects.exists()
