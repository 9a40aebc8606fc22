"""Property-based fuzzing of the JSON-RPC door in both versions: requests made from the
stored wire samples of every non-streaming method, then mutated (a value swapped for any JSON
value, a key dropped or added, NUL and lone surrogates in strings, odd ids and methods).

For every request: no 5xx; the answer is one JSON-RPC envelope with a result or an error
whose code is one of the spec's (never -32603, which would be a bug of ours); a refused
request stores no task and no event; neither the caller's key nor a push config's secrets
come back. `make fuzz` runs the same properties far longer (HYPOTHESIS_PROFILE=deep).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import ApiKey
from tasks.models import Task, TaskEvent
from tests.door_client import Door
from tests.factories.agents import KEY_HEADER, SECURED, make_agent
from tests.factories.envelopes import sample, url
from tests.factories.versions import V03, V1
from tests.fuzzing import json_values, mutate

pytestmark = pytest.mark.usefixtures("door")

# The codes of JSON-RPC 2.0 and of both A2A versions; -32603 (internal error) is not here.
SPEC_CODES = {-32700, -32600, -32601, -32602} | set(range(-32009, -32000))
SECRET = "fuzz-secret-token-6d1e"  # a push config's token and credentials

push_config = {"url": "https://example.com/hook", "token": SECRET,
               "authentication": {"scheme": "Bearer", "credentials": SECRET}}  # fmt: skip
SEEDS: list[tuple[str, dict[str, Any]]] = [
    *[(V1, sample(V1, op)) for op in ("send", "get", "list", "cancel", "card")],
    *[(V03, sample(V03, op)) for op in ("send", "get", "cancel", "card")],
    (V1, {"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig",
          "params": {"taskId": "t-1"} | push_config}),
    (V1, {"jsonrpc": "2.0", "id": 2, "method": "ListTaskPushNotificationConfigs",
          "params": {"taskId": "t-1"}}),
    (V03, {"jsonrpc": "2.0", "id": 3, "method": "tasks/pushNotificationConfig/set",
           "params": {"taskId": "t-1", "pushNotificationConfig": push_config}}),
    (V03, {"jsonrpc": "2.0", "id": 4, "method": "tasks/pushNotificationConfig/get",
           "params": {"id": "t-1"}}),
]  # fmt: skip


@st.composite
def mutated_requests(draw: st.DrawFn) -> tuple[str, Any]:
    version, seed = draw(st.sampled_from(SEEDS))
    return version, mutate(draw, seed)


@pytest.fixture
def key() -> str:
    make_agent("fuzzed", push_notifications=True, extended_card=True, **SECURED)
    return ApiKey.issue("fuzzer")[1]


def check_answer(version: str, document: Any, key: str) -> None:
    tasks, events = Task.objects.count(), TaskEvent.objects.count()
    headers = {KEY_HEADER: key} | ({"A2A-Version": V1} if version == V1 else {})
    response = Door().post(url("fuzzed"), data=json.dumps(document),
                           content_type="application/json", headers=headers)  # fmt: skip

    assert response.status_code < 500, response.content
    answer = json.loads(response.content)
    assert answer.get("jsonrpc") == "2.0" and "id" in answer, answer
    assert ("result" in answer) != ("error" in answer), answer
    text = response.content.decode()
    assert SECRET not in text and key not in text
    if "error" in answer:
        assert answer["error"]["code"] in SPEC_CODES, answer
        assert isinstance(answer["error"]["message"], str)
        assert (Task.objects.count(), TaskEvent.objects.count()) == (tasks, events)


FUZZ = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)


@FUZZ
@given(request=mutated_requests())
def test_no_mutated_request_breaks_the_door(key: str, request: tuple[str, Any]) -> None:
    version, document = request
    check_answer(version, document, key)


@FUZZ
@given(version=st.sampled_from([V1, V03]), document=json_values)
def test_no_json_document_breaks_the_door(key: str, version: str, document: Any) -> None:
    check_answer(version, document, key)
