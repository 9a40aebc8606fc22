"""Property-based fuzzing of the HTTP+JSON door in both versions: requests made from a valid
call of every non-streaming operation, then mutated (the body as in the JSON-RPC fuzz, path
segments and query values swapped for any string, NUL and lone surrogates included, the verb
changed).

For every request: no 5xx; the answer is a `google.rpc.Status` body whose `code` is the HTTP
status, with an ErrorInfo reason of the spec's when the error is an A2A one; a refused request
stores no task and no event; neither the caller's key nor a push config's secrets come back.
`make fuzz` runs the same properties far longer (HYPOTHESIS_PROFILE=deep).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from a2a.utils.errors import A2A_ERROR_MAPPING
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import ApiKey
from tasks.models import Task, TaskEvent
from tests.door_client import Door
from tests.factories.agents import KEY_HEADER, SECURED, make_agent
from tests.fuzzing import NASTY, mutate, strings

pytestmark = pytest.mark.usefixtures("door")

REASONS = {mapping.reason for mapping in A2A_ERROR_MAPPING.values()}
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
SECRET = "fuzz-secret-token-91c4"
TASK = "3f1c2a44-0000-4000-8000-00000000abcd"
MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
CONFIG = {"url": "https://example.com/hook", "token": SECRET,
          "authentication": {"scheme": "Bearer", "credentials": SECRET}}  # fmt: skip

# (version, verb, path segments, query, body): one valid call of each operation.
SEEDS: list[tuple[str, str, list[str], dict[str, str], Any]] = [
    ("1.0", "POST", ["message:send"], {}, {"message": MESSAGE}),
    ("1.0", "GET", ["tasks"], {"pageSize": "5", "status": "TASK_STATE_WORKING"}, None),
    ("1.0", "GET", ["tasks", TASK], {"historyLength": "1"}, None),
    ("1.0", "POST", ["tasks", f"{TASK}:cancel"], {}, {}),
    ("1.0", "POST", ["tasks", TASK, "pushNotificationConfigs"], {}, CONFIG),
    ("1.0", "GET", ["tasks", TASK, "pushNotificationConfigs", "c1"], {}, None),
    ("1.0", "DELETE", ["tasks", TASK, "pushNotificationConfigs", "c1"], {}, None),
    ("1.0", "GET", ["extendedAgentCard"], {}, None),
    ("0.3", "POST", ["v1", "message:send"], {},
     {"request": {"messageId": "m-2", "role": "ROLE_USER", "content": [{"text": "hi"}]}}),
    ("0.3", "GET", ["v1", "tasks", TASK], {"historyLength": "2"}, None),
    ("0.3", "POST", ["v1", "tasks", TASK, "pushNotificationConfigs"], {},
     {"config": {"pushNotificationConfig": CONFIG}}),
    ("0.3", "GET", ["v1", "card"], {}, None),
]  # fmt: skip
VERBS = ["GET", "POST", "DELETE", "PUT", "PATCH"]


@st.composite
def mutated_calls(draw: st.DrawFn) -> tuple[str, str, str, Any]:
    version, verb, segments, query, body = draw(st.sampled_from(SEEDS))
    segments, query = list(segments), dict(query)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        action = draw(st.sampled_from(["body", "body", "segment", "query", "verb"]))
        if action == "body" and body is not None:
            body = mutate(draw, body)
        elif action == "segment":
            index = draw(st.integers(min_value=0, max_value=len(segments) - 1))
            segments[index] = draw(st.one_of(strings, st.sampled_from(NASTY)))
        elif action == "query":
            query[draw(st.sampled_from(["pageSize", "historyLength", "status", "x"]))] = draw(
                strings
            )
        elif action == "verb":
            verb = draw(st.sampled_from(VERBS))
    path = "/".join(quote(s.encode("utf-8", "surrogatepass"), safe=":") for s in segments)
    encoded = urlencode({k: v.encode("utf-8", "surrogatepass") for k, v in query.items()})
    return version, verb, path + (f"?{encoded}" if encoded else ""), body


@pytest.fixture
def key() -> str:
    make_agent("fuzzed", push_notifications=True, extended_card=True, **SECURED)
    return ApiKey.issue("fuzzer")[1]


FUZZ = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)


@FUZZ
@given(call=mutated_calls())
def test_no_mutated_rest_call_breaks_the_door(key: str, call: tuple[str, str, str, Any]) -> None:
    version, verb, path, body = call
    tasks, events = Task.objects.count(), TaskEvent.objects.count()
    headers = {KEY_HEADER: key} | ({"A2A-Version": version} if version == "1.0" else {})
    data = b"" if body is None else json.dumps(body).encode("utf-8", "surrogatepass")

    response = Door().generic(verb, f"/agents/fuzzed/rest/{path}", data=data,
                                content_type="application/json", headers=headers)  # fmt: skip

    assert response.status_code < 500, response.content
    text = response.content.decode()
    assert SECRET not in text and key not in text
    if response.status_code >= 400:
        error = json.loads(text)["error"]
        assert error["code"] == response.status_code, error
        assert isinstance(error["status"], str) and isinstance(error["message"], str)
        for detail in error.get("details", []):
            if detail["@type"] == ERROR_INFO:
                assert detail["reason"] in REASONS, detail
        assert (Task.objects.count(), TaskEvent.objects.count()) == (tasks, events)
