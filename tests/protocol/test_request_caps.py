"""What one request may carry besides its size: parts per message, nesting depth and metadata
size. Past a cap, every binding refuses it as invalid params (JSON-RPC -32602, HTTP+JSON 400
`INVALID_ARGUMENT`) naming the field and the limit's setting, and stores nothing; at the cap
it is served as before. The caps are lowered here so that the requests stay small."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from agents.models import Agent
from tasks.models import Message, Task
from tests.door_client import Door
from tests.factories.errors import invalid_params
from tests.factories.messages import text_part
from tests.factories.pre02 import old_send
from tests.factories.versions import V03, V1, VERSIONS
from tests.protocol.answers import error_of, result_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.usefixtures("door")

PARTS, DEPTH, METADATA = 3, 8, 200


@pytest.fixture(autouse=True)
def low_caps(settings: Settings) -> None:
    settings.A2A_MAX_MESSAGE_PARTS = PARTS
    settings.A2A_MAX_JSON_DEPTH = DEPTH
    settings.A2A_MAX_METADATA_BYTES = METADATA


def too_many_parts(count: int) -> str:
    return f"holds {count} parts; a message may hold at most {PARTS} (A2A_MAX_MESSAGE_PARTS)"


def nested(levels: int) -> dict[str, Any]:
    """An object `levels` objects deep ({"a": {"a": ... {}}})."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def message(version: str, parts: int = 1, **fields: Any) -> dict[str, Any]:
    texts = [text_part(version, f"part {n}") for n in range(parts)]
    if version == V1:
        return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": texts} | fields
    shape = {"messageId": uuid.uuid4().hex, "kind": "message", "role": "user", "parts": texts}
    return shape | fields


def send(caller: Caller, version: str, sent: dict[str, Any]) -> Any:
    return caller.rpc("echo", version, "send", {"message": sent})


@pytest.mark.parametrize("version", VERSIONS)
def test_a_message_past_the_parts_cap_is_refused_naming_the_limit(
    caller: Caller, echo: Agent, version: str
) -> None:
    error = error_of(send(caller, version, message(version, parts=PARTS + 1)))

    assert error == invalid_params(version, "message.parts", too_many_parts(PARTS + 1))
    assert not Task.objects.exists() and not Message.objects.exists()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_message_at_the_parts_cap_is_served(caller: Caller, echo: Agent, version: str) -> None:
    result_of(send(caller, version, message(version, parts=PARTS)))

    assert len(Message.objects.get(role="user").parts) == PARTS


def test_a_pre02_send_past_the_parts_cap_is_refused(caller: Caller, echo: Agent) -> None:
    parts = [{"type": "text", "text": "hi"}] * (PARTS + 1)
    error = error_of(caller.post("echo", old_send("client-task-1", *parts), version=None))

    assert error == invalid_params(V03, "message.parts", too_many_parts(PARTS + 1))


@pytest.mark.parametrize("version", VERSIONS)
def test_a_request_nested_past_the_depth_cap_is_refused_naming_the_limit(
    caller: Caller, echo: Agent, version: str
) -> None:
    # params (1) > message (2) > metadata (3) > DEPTH - 2 more objects: one level too many.
    sent = message(version, metadata=nested(DEPTH - 1))

    error = error_of(send(caller, version, sent))

    path = "message.metadata" + ".a" * (DEPTH - 2)
    problem = f"is nested {DEPTH + 1} levels deep; a request may nest at most {DEPTH}"
    assert error == invalid_params(version, path, f"{problem} (A2A_MAX_JSON_DEPTH)")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_request_at_the_depth_cap_is_served(caller: Caller, echo: Agent, version: str) -> None:
    result_of(send(caller, version, message(version, metadata=nested(DEPTH - 2))))

    assert Message.objects.get(role="user").metadata == nested(DEPTH - 2)


@pytest.mark.parametrize("version", VERSIONS)
def test_metadata_past_the_size_cap_is_refused_naming_the_limit(
    caller: Caller, echo: Agent, version: str
) -> None:
    sent = message(version)
    sent["parts"][0]["metadata"] = {"note": "x" * METADATA}
    size = len(json.dumps(sent["parts"][0]["metadata"], separators=(",", ":")))

    error = error_of(send(caller, version, sent))

    problem = f"is {size} bytes of JSON; metadata may be at most {METADATA} bytes"
    assert error == invalid_params(
        version, "message.parts[0].metadata", f"{problem} (A2A_MAX_METADATA_BYTES)"
    )


def test_metadata_at_the_size_cap_is_served(caller: Caller, echo: Agent) -> None:
    metadata = {"note": "x" * (METADATA - len('{"note":""}'))}

    result_of(send(caller, V1, message(V1, metadata=metadata)))

    assert Message.objects.get(role="user").metadata == metadata


def rest_send(path: str, version: str, body: dict[str, Any], key: str) -> Any:
    return Door().post(
        f"/agents/echo/rest/{path}", data=json.dumps(body), content_type="application/json",
        headers={"A2A-Version": version, "X-API-Key": key},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("path", "version", "body", "field"),
    [
        ("message:send", V1, {"message": message(V1, parts=PARTS + 1)}, "message.parts"),
        ("v1/message:send", V03, {"request": {"messageId": "m", "role": "ROLE_USER",
                                              "content": [{"text": "hi"}] * (PARTS + 1)}},
         "request.content"),
    ],
    ids=["1.0", "0.3"],
)  # fmt: skip
def test_over_http_json_a_message_past_the_parts_cap_is_a_400_naming_the_limit(
    caller: Caller, echo: Agent, path: str, version: str, body: dict[str, Any], field: str
) -> None:
    assert caller.key is not None
    response = rest_send(path, version, body, caller.key)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["message"] == f"Invalid params: {field}: {too_many_parts(PARTS + 1)}"
    assert not Task.objects.exists()


def test_over_http_json_metadata_past_the_size_cap_is_a_400(caller: Caller, echo: Agent) -> None:
    assert caller.key is not None
    body = {"message": message(V1), "metadata": {"note": "x" * METADATA}}

    response = rest_send("message:send", V1, body, caller.key)

    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("Invalid params: metadata: is ")
    assert "(A2A_MAX_METADATA_BYTES)" in response.json()["error"]["message"]


def test_a_large_body_read_on_a_thread_gets_the_same_answer(
    caller: Caller, echo: Agent, settings: Settings
) -> None:
    settings.A2A_THREAD_BODY_BYTES = 0  # every body is "large"
    task = result_of(send(caller, V1, message(V1, parts=PARTS)))["task"]
    error = error_of(send(caller, V1, message(V1, parts=PARTS + 1)))

    texts = [part["text"] for part in task["artifacts"][0]["parts"]]
    assert texts == ["part 0", "part 1", "part 2"]
    assert error == invalid_params(V1, "message.parts", too_many_parts(PARTS + 1))
