"""Skill scopes: a token scoped `skill:<agent>:<skill>` runs that skill and no other of the
agent, through every send method and binding; a message naming no skill runs the agent's
first skill (as its card lists them), so such a message runs only if that one is reached.
A refusal is the doors' 403 with `insufficient_scope` naming the scope that would do."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.models import Agent
from tasks.models import Task
from tests.door_client import Door
from tests.factories.envelopes import envelope
from tests.factories.oauth import machine, token_for
from tests.factories.versions import METHODS, V03, V1
from tests.protocol.answers import artifact_texts, state_of
from tests.protocol.test_oauth import Bearer
from tests.protocol.test_python_skills import make_toolbox

pytestmark = pytest.mark.usefixtures("door")
both_versions = pytest.mark.parametrize("version", [V03, V1])


@pytest.fixture
def toolbox(db: None) -> Agent:
    return make_toolbox()  # skills in card order: reverse, count, countdown


def bearer(scope: str) -> Bearer:
    app, secret = machine()
    return Bearer(token_for(app, secret, scope=scope)["access_token"])


def asking(skill: str | None) -> dict[str, Any]:
    return {"message": {"metadata": {"skillId": skill}}} if skill else {}


def send(caller: Bearer, version: str, skill: str | None, op: str = "send") -> Any:
    body = envelope(version, "send", text="one two", **asking(skill))
    body["method"] = METHODS[version][op]
    return caller.post("toolbox", body, version)


@both_versions
def test_a_skill_scoped_token_runs_its_own_skill(toolbox: Agent, version: str) -> None:
    task = bearer("skill:toolbox:reverse").send("toolbox", version, "stressed",
                                                **asking("reverse"))  # fmt: skip

    assert state_of(task) == "completed" and artifact_texts(task) == ["desserts"]


@both_versions
@pytest.mark.parametrize("op", ["send", "stream"])
def test_a_skill_scoped_token_is_refused_another_skill_of_the_agent(
    toolbox: Agent, version: str, op: str
) -> None:
    response = send(bearer("skill:toolbox:reverse"), version, "count", op)

    assert response.status_code == 403
    error = response.json()["error"]
    assert error["status"] == "PERMISSION_DENIED"
    assert "reverse" in error["message"] and "'count'" in error["message"]
    challenge = response["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="skill:toolbox:count a2a:invoke agent:toolbox"' in challenge
    assert not Task.objects.exists()


def test_the_rest_binding_refuses_another_skill_the_same_way(toolbox: Agent) -> None:
    body = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "a b"}],
                        "metadata": {"skillId": "count"}}}  # fmt: skip
    caller = bearer("skill:toolbox:reverse")
    response = Door().post("/agents/toolbox/rest/message:send", json.dumps(body),
                             content_type="application/json",
                             headers={"Authorization": f"Bearer {caller.token}",
                                      "A2A-Version": V1})  # fmt: skip

    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response["WWW-Authenticate"]
    assert not Task.objects.exists()


@both_versions
def test_a_message_naming_no_skill_runs_only_if_the_first_skill_is_reached(
    toolbox: Agent, version: str
) -> None:
    runs = bearer("skill:toolbox:reverse").send("toolbox", version, "stressed")
    refused = send(bearer("skill:toolbox:count"), version, None)

    assert artifact_texts(runs) == ["desserts"]
    assert refused.status_code == 403
    message = refused.json()["error"]["message"]
    assert "names no skill" in message and "'reverse'" in message
    assert Task.objects.count() == 1


@pytest.mark.parametrize("scope", ["agent:toolbox", "a2a:invoke"])
def test_a_token_for_the_whole_agent_runs_every_skill(toolbox: Agent, scope: str) -> None:
    task = bearer(scope).send("toolbox", V1, "one two three", **asking("count"))

    assert task["artifacts"][0]["parts"][0]["data"] == {"words": 3, "characters": 13}


def test_a_follow_up_message_is_held_to_the_same_scope(toolbox: Agent) -> None:
    caller = bearer("skill:toolbox:reverse")
    first = caller.send("toolbox", V1, "abc", **asking("reverse"))
    follow_up = {"taskId": first["id"], "metadata": {"skillId": "countdown"}}
    again = caller.rpc("toolbox", V1, "send", text="abc", message=follow_up)

    assert again.status_code == 403
