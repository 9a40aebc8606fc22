"""The HTTP+JSON binding, request by request: every 1.0 operation and its 0.3 (`/v1/`) twin,
the v1.0.1 status codes with `google.rpc.Status` bodies, camelCase queries, isolation between
keys, the shared `/a2a/rest/{tenant}/` base, and bad input answered with the right status
(never a 5xx). Streams are in tests/streaming/test_rest_streams.py."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from agents.models import Agent
from tasks.models import Task
from tests.door_client import Door
from tests.factories.agents import KEY_HEADER, secured_agent
from tests.factories.envelopes import UNKNOWN_TASK
from tests.protocol.callers import Caller

pytestmark = pytest.mark.usefixtures("door")

MEDIA = "application/a2a+json"


class Rest:
    """A client of one agent's REST base, holding one API key (or none)."""

    def __init__(self, key: str | None, base: str = "/agents/echo/rest/") -> None:
        self.key, self.base, self.client = key, base, Door()

    def call(self, verb: str, path: str, body: Any = None, version: str | None = "1.0",
             headers: dict[str, str] | None = None, **extra: Any) -> Any:  # fmt: skip
        sent = dict(headers or {})
        if version:
            sent["A2A-Version"] = version
        if self.key:
            sent[KEY_HEADER] = self.key
        data = body if isinstance(body, str | bytes) or body is None else json.dumps(body)
        return self.client.generic(
            verb, self.base + path, data=data or b"", content_type=extra.pop("content_type",
            MEDIA), headers=sent, **extra,
        )  # fmt: skip

    def send(self, text: str = "hello", **configuration: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"message": message(text)}
        if configuration:
            body["configuration"] = configuration
        response = self.call("POST", "message:send", body)
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == MEDIA
        task: dict[str, Any] = response.json()["task"]
        return task


def message(text: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


def status_error(response: Any) -> tuple[int, str, str]:
    """(HTTP status, google.rpc status, ErrorInfo reason) of an error answer."""
    error = response.json()["error"]
    assert error["code"] == response.status_code
    reason = next((d["reason"] for d in error.get("details", [])), "")
    for detail in error.get("details", []):
        assert detail["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
        assert detail["domain"] == "a2a-protocol.org"
    return response.status_code, error["status"], reason


@pytest.fixture
def echo(db: None) -> Agent:
    return secured_agent("echo", push_notifications=True)


@pytest.fixture
def rest(caller: Caller) -> Rest:
    return Rest(caller.key)


# -- the eleven operations ------------------------------------------------------------------


def test_send_answers_the_completed_task_in_the_a2a_media_type(rest: Rest, echo: Agent) -> None:
    task = rest.send("hello")

    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p["text"] for a in task["artifacts"] for p in a["parts"]] == ["hello"]
    stored = Task.objects.get(id=task["id"])
    assert (stored.protocol_version, stored.binding) == ("1.0", "HTTP+JSON")


def test_get_reads_the_task_and_history_length_limits_its_history(rest: Rest, echo: Agent) -> None:
    task = rest.send("hello")

    whole = rest.call("GET", f"tasks/{task['id']}").json()
    trimmed = rest.call("GET", f"tasks/{task['id']}?historyLength=0").json()

    assert whole["id"] == task["id"] and len(whole["history"]) == 1
    assert "history" not in trimmed


def test_list_pages_newest_first_and_filters_by_camel_case_queries(rest: Rest, echo: Agent) -> None:
    first, second = rest.send("one"), rest.send("two")

    page = rest.call("GET", "tasks?pageSize=1").json()
    rest_page = rest.call("GET", f"tasks?pageSize=1&pageToken={page['nextPageToken']}").json()
    done = rest.call("GET", "tasks?status=TASK_STATE_COMPLETED&contextId=" + first["contextId"])

    assert [t["id"] for t in page["tasks"]] == [second["id"]]
    assert [t["id"] for t in rest_page["tasks"]] == [first["id"]]
    assert page["totalSize"] == 2 and page["pageSize"] == 1
    assert [t["id"] for t in done.json()["tasks"]] == [first["id"]]


def test_cancel_of_a_finished_task_is_400_task_not_cancelable(rest: Rest, echo: Agent) -> None:
    task = rest.send()

    response = rest.call("POST", f"tasks/{task['id']}:cancel", {})

    assert status_error(response) == (400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE")


def test_push_configs_are_created_read_listed_and_deleted_without_their_secrets(
    rest: Rest, echo: Agent, settings: Any
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["receiver.example"]
    task = rest.send()
    base = f"tasks/{task['id']}/pushNotificationConfigs"
    config = {"url": "https://receiver.example/hook", "token": "s3cret",
              "authentication": {"scheme": "Bearer", "credentials": "hunter2"}}  # fmt: skip

    created = rest.call("POST", base, config).json()
    read = rest.call("GET", f"{base}/{created['id']}").json()
    listed = rest.call("GET", base).json()
    deleted = rest.call("DELETE", f"{base}/{created['id']}")
    gone = rest.call("GET", f"{base}/{created['id']}")

    assert created["taskId"] == task["id"] and created["url"] == config["url"]
    assert read == created and listed["configs"] == [created]
    assert "s3cret" not in json.dumps(listed) and "hunter2" not in json.dumps(listed)
    assert deleted.status_code == 200
    assert status_error(gone)[0] == 404


def test_the_extended_card_is_404_free_only_when_configured(rest: Rest, echo: Agent) -> None:
    response = rest.call("GET", "extendedAgentCard")

    assert status_error(response) == (
        400,
        "FAILED_PRECONDITION",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    )


# -- 0.3 paths ------------------------------------------------------------------------------


def test_03_paths_speak_the_03_protobuf_json(rest: Rest, echo: Agent) -> None:
    body = {"request": {"messageId": "m-1", "role": "ROLE_USER", "content": [{"text": "hi"}]}}

    sent = rest.call("POST", "v1/message:send", body, version=None).json()
    task_id = sent["task"]["id"]
    read = rest.call("GET", f"v1/tasks/{task_id}", version=None).json()

    assert sent["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert sent["task"]["artifacts"][0]["parts"] == [{"text": "hi"}]
    assert read["id"] == task_id and read["history"][0]["content"] == [{"text": "hi"}]
    for name in ("historyLength", "history_length"):  # a JSON name or, in 0.3, a proto name
        trimmed = rest.call("GET", f"v1/tasks/{task_id}?{name}=0", version=None).json()
        assert "history" not in trimmed
    assert Task.objects.get(id=task_id).protocol_version == "0.3"


def test_03_errors_also_name_the_error_type_its_clients_read(rest: Rest, echo: Agent) -> None:
    response = rest.call("GET", f"v1/tasks/{UNKNOWN_TASK}", version=None)

    assert status_error(response) == (404, "NOT_FOUND", "TASK_NOT_FOUND")
    assert response.json()["type"] == "TaskNotFoundError"


def test_03_push_configs_round_trip_on_v1_paths(rest: Rest, echo: Agent, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["receiver.example"]
    task = rest.send()
    base = f"v1/tasks/{task['id']}/pushNotificationConfigs"
    body = {"config": {"pushNotificationConfig": {"id": "c1", "url": "https://receiver.example/h",
                                                  "token": "t0k"}}}  # fmt: skip

    created = rest.call("POST", base, body, version=None).json()
    listed = rest.call("GET", base, version=None).json()

    assert created["name"] == f"tasks/{task['id']}/pushNotificationConfigs/c1"
    assert created["pushNotificationConfig"]["url"] == "https://receiver.example/h"
    assert listed["configs"] == [created] and "t0k" not in json.dumps(listed)


# -- who may see what -----------------------------------------------------------------------


def test_another_keys_task_is_not_found(rest: Rest, stranger: Caller, echo: Agent) -> None:
    task = rest.send()
    other = Rest(stranger.key)

    for verb, path in (("GET", f"tasks/{task['id']}"), ("POST", f"tasks/{task['id']}:cancel")):
        assert status_error(other.call(verb, path, {}))[2] == "TASK_NOT_FOUND"
    assert other.call("GET", "tasks").json()["tasks"] == []


def test_a_caller_without_a_key_gets_401_with_a_challenge(anonymous: Caller, echo: Agent) -> None:
    response = Rest(None).call("POST", "message:send", {"message": message("x")})

    assert response.status_code == 401
    assert response["WWW-Authenticate"]
    assert Task.objects.count() == 0


# -- the shared base ------------------------------------------------------------------------


def test_the_shared_base_reaches_the_agent_named_by_the_tenant(rest: Rest, echo: Agent) -> None:
    shared = Rest(rest.key, "/a2a/rest/echo/")

    task = shared.send("via the tenant")
    read = rest.call("GET", f"tasks/{task['id']}").json()

    assert read["artifacts"][0]["parts"] == [{"text": "via the tenant"}]


def test_an_unknown_tenant_is_400_naming_tenant(rest: Rest, echo: Agent) -> None:
    response = Rest(rest.key, "/a2a/rest/nobody/").call("GET", "tasks")

    assert status_error(response) == (400, "INVALID_ARGUMENT", "INVALID_PARAMS")
    assert response.json()["error"]["details"][0]["metadata"] == {"field": "tenant"}


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verb", "path", "status"),
    [("GET", "nothing/here", 404), ("DELETE", "message:send", 405), ("PUT", "tasks", 405)],
)
def test_unknown_paths_are_404_and_wrong_verbs_405(
    rest: Rest, echo: Agent, verb: str, path: str, status: int
) -> None:
    response = rest.call(verb, path)

    assert response.status_code == status
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (status, "NOT_FOUND")
    assert [d["reason"] for d in error["details"]] == ["METHOD_NOT_FOUND"]
    if status == 405:
        assert response["Allow"]


def test_a_body_that_is_not_json_is_400(rest: Rest, echo: Agent) -> None:
    response = rest.call("POST", "message:send", "{not json")

    assert status_error(response)[:2] == (400, "INVALID_ARGUMENT")
    assert Task.objects.count() == 0


def test_a_body_that_is_not_json_media_is_415(rest: Rest, echo: Agent) -> None:
    response = rest.call("POST", "message:send", "hello", content_type="text/plain")

    assert status_error(response)[0] == 415


def test_an_oversize_body_is_413(rest: Rest, echo: Agent, settings: Any) -> None:
    settings.A2A_MAX_REQUEST_BYTES = 1000

    response = rest.call("POST", "message:send", {"message": message("x" * 2000)})

    assert status_error(response)[0] == 413
    assert Task.objects.count() == 0


def test_invalid_params_name_the_field(rest: Rest, echo: Agent) -> None:
    response = rest.call("GET", "tasks?pageSize=many")

    assert status_error(response) == (400, "INVALID_ARGUMENT", "INVALID_PARAMS")


@pytest.mark.parametrize(
    ("path", "version"), [("message:send", "0.3"), ("v1/message:send", "1.0"), ("tasks", "9.9")]
)
def test_a_version_the_path_does_not_serve_is_400_version_not_supported(
    rest: Rest, echo: Agent, path: str, version: str
) -> None:
    response = rest.call("POST" if "send" in path else "GET", path, {}, version=version)

    assert status_error(response)[2] == "VERSION_NOT_SUPPORTED"


def test_a_nul_in_a_text_part_is_refused_naming_the_field(rest: Rest, echo: Agent) -> None:
    response = rest.call("POST", "message:send", {"message": message("a\x00b")})

    assert status_error(response) == (400, "INVALID_ARGUMENT", "INVALID_PARAMS")
    assert Task.objects.count() == 0
