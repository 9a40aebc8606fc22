"""HTTP+JSON as the real clients speak it: a 0.3 push config created with the bare config
(the JavaScript SDK) or wrapped in the request (the Python SDK), 0.3 errors a client can map
by their JSON-RPC code, and answers in the JSON media type the client spoke."""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.utils.errors import TaskNotFoundError

from agents.models import Agent
from protocol.rest import stream_framing
from tests.factories.agents import secured_agent
from tests.factories.envelopes import UNKNOWN_TASK
from tests.protocol.callers import Caller
from tests.protocol.test_rest import MEDIA, Rest, message, status_error

pytestmark = pytest.mark.usefixtures("door")

PLAIN = "application/json"


@pytest.fixture
def echo(db: None) -> Agent:
    return secured_agent("echo", push_notifications=True)


@pytest.fixture
def rest(caller: Caller) -> Rest:
    return Rest(caller.key)


@pytest.fixture
def receiver(settings: Any) -> str:
    settings.OUTBOUND_ALLOWED_HOSTS = ["receiver.example"]
    return "https://receiver.example/hook"


# -- 0.3 push config bodies -----------------------------------------------------------------


def test_a_03_push_config_is_created_from_the_bare_config(
    rest: Rest, echo: Agent, receiver: str
) -> None:
    task = rest.send()
    base = f"v1/tasks/{task['id']}/pushNotificationConfigs"
    bare = {"name": f"tasks/{task['id']}/pushNotificationConfigs/js",
            "pushNotificationConfig": {"id": "js", "url": receiver, "token": "t0k"}}  # fmt: skip

    response = rest.call("POST", base, bare, version=None, content_type=PLAIN)
    listed = rest.call("GET", base, version=None).json()

    assert response.status_code == 200, response.content
    assert response.json()["name"] == f"tasks/{task['id']}/pushNotificationConfigs/js"
    assert response.json()["pushNotificationConfig"]["url"] == receiver
    assert [c["pushNotificationConfig"]["id"] for c in listed["configs"]] == ["js"]


def test_a_03_push_config_is_created_from_the_wrapped_request_too(
    rest: Rest, echo: Agent, receiver: str
) -> None:
    task = rest.send()
    base = f"v1/tasks/{task['id']}/pushNotificationConfigs"
    wrapped = {"config": {"pushNotificationConfig": {"id": "py", "url": receiver}}}

    created = rest.call("POST", base, wrapped, version=None).json()

    assert created["name"] == f"tasks/{task['id']}/pushNotificationConfigs/py"


def test_a_bare_03_push_config_without_a_url_names_the_url(rest: Rest, echo: Agent) -> None:
    task = rest.send()
    bare = {"pushNotificationConfig": {"id": "x"}}

    response = rest.call(
        "POST", f"v1/tasks/{task['id']}/pushNotificationConfigs", bare, version=None
    )

    assert response.status_code == 400
    assert "url" in response.json()["message"]


# -- 0.3 error bodies -----------------------------------------------------------------------


def test_a_03_error_carries_its_json_rpc_code_and_message_beside_the_status(
    rest: Rest, echo: Agent
) -> None:
    response = rest.call("GET", f"v1/tasks/{UNKNOWN_TASK}", version=None)
    body = response.json()

    assert status_error(response) == (404, "NOT_FOUND", "TASK_NOT_FOUND")
    assert (body["code"], body["type"]) == (-32001, "TaskNotFoundError")
    assert body["message"] == body["error"]["message"]


def test_a_03_path_the_binding_does_not_know_is_a_method_not_found(rest: Rest, echo: Agent) -> None:
    response = rest.call("GET", "v1/tasks/x:nothing", version=None)

    assert response.status_code == 404
    assert response.json()["code"] == -32601


def test_a_03_stream_ending_in_an_error_says_its_json_rpc_code_too() -> None:
    frame = stream_framing("0.3").error(TaskNotFoundError("gone"))
    lines = frame.decode().splitlines()

    assert lines[0] == "event: error"
    body = json.loads(lines[1].removeprefix("data: "))
    assert (body["code"], body["message"], body["error"]["status"]) == (-32001, "gone", "NOT_FOUND")


def test_a_10_error_keeps_the_bare_status_shape(rest: Rest, echo: Agent) -> None:
    body = rest.call("GET", f"tasks/{UNKNOWN_TASK}").json()

    assert set(body) == {"error"}


# -- media types ----------------------------------------------------------------------------


def test_a_client_sending_plain_json_gets_plain_json_back(rest: Rest, echo: Agent) -> None:
    sent = rest.call("POST", "message:send", {"message": message("hi")}, content_type=PLAIN)
    refused = rest.call(
        "POST", f"tasks/{UNKNOWN_TASK}:cancel", {}, content_type="application/json; charset=utf-8"
    )

    assert (sent.status_code, sent["Content-Type"]) == (200, PLAIN)
    assert (refused.status_code, refused["Content-Type"]) == (404, PLAIN)


def test_a_client_sending_the_a2a_media_type_gets_it_back(rest: Rest, echo: Agent) -> None:
    sent = rest.call("POST", "message:send", {"message": message("hi")}, content_type=MEDIA)

    assert sent["Content-Type"] == MEDIA


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (PLAIN, PLAIN),
        (f"{MEDIA}, {PLAIN};q=0.9", MEDIA),
        # Naming neither (the conformance kit's GETs, curl): plain JSON, which the kit checks.
        ("*/*", PLAIN),
        ("", PLAIN),
    ],
)
def test_a_get_answers_in_the_media_type_it_accepts(
    rest: Rest, echo: Agent, accept: str, expected: str
) -> None:
    task = rest.send()
    headers = {"Accept": accept} if accept else {}

    for path, version in ((f"tasks/{task['id']}", "1.0"), (f"v1/tasks/{task['id']}", None)):
        response = rest.call("GET", path, version=version, content_type=None, headers=headers)
        assert (response.status_code, response["Content-Type"]) == (200, expected)


def test_a_refusal_before_any_agent_speaks_the_clients_media_type(rest: Rest, echo: Agent) -> None:
    unknown = Rest(rest.key, "/agents/nobody/rest/").call(
        "GET", "tasks", content_type=None, headers={"Accept": PLAIN}
    )
    anonymous = Rest(None).call(
        "POST", "message:send", {"message": message("x")}, content_type=PLAIN
    )

    assert (unknown.status_code, unknown["Content-Type"]) == (404, PLAIN)
    assert (anonymous.status_code, anonymous["Content-Type"]) == (401, PLAIN)
