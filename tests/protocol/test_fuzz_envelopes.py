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
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import ApiKey
from tasks.models import Task, TaskEvent
from tests.factories.agents import KEY_HEADER, SECURED, make_agent
from tests.factories.envelopes import sample, url
from tests.factories.versions import V03, V1

pytestmark = pytest.mark.django_db

# The codes of JSON-RPC 2.0 and of both A2A versions; -32603 (internal error) is not here.
SPEC_CODES = {-32700, -32600, -32601, -32602} | set(range(-32009, -32000))
SECRET = "fuzz-secret-token-6d1e"  # a push config's token and credentials
NASTY = ["\x00", "\ud800", "\udfff", "a\x00b", "\ud83d", "\U0001f600", "", " ", "é" * 300]

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

strings = st.one_of(st.text(max_size=40), st.sampled_from(NASTY))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), strings,
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(strings, inner, max_size=4)
    ),
    max_leaves=12,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def copy_and_parent(document: Any, path: tuple[Any, ...]) -> tuple[Any, Any]:
    """A deep copy of `document` and, in it, the container of the place `path` names."""
    copy = json.loads(json.dumps(document))
    return copy, _at(copy, path[:-1])


def replaced(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy, parent = copy_and_parent(document, path)
    parent[path[-1]] = new
    return copy


def without(document: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return document
    copy, parent = copy_and_parent(document, path)
    del parent[path[-1]]
    return copy


@st.composite
def mutated_requests(draw: st.DrawFn) -> tuple[str, Any]:
    version, seed = draw(st.sampled_from(SEEDS))
    document: Any = seed
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        places = paths(document)
        place = draw(st.sampled_from(places))
        action = draw(st.sampled_from(["replace", "replace", "drop", "add", "nasty"]))
        if action == "replace":
            document = replaced(document, place, draw(json_values))
        elif action == "drop":
            document = without(document, place)
        elif action == "add" and isinstance(_at(document, place), dict):
            document = replaced(
                document, (*place, draw(strings)), draw(json_values)
            )  # fmt: skip
        elif action == "nasty":
            document = replaced(document, place, draw(st.sampled_from(NASTY)))
    return version, document


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


@pytest.fixture
def key() -> str:
    make_agent("fuzzed", push_notifications=True, extended_card=True, **SECURED)
    return ApiKey.issue("fuzzer")[1]


def check_answer(version: str, document: Any, key: str, client: Client) -> None:
    tasks, events = Task.objects.count(), TaskEvent.objects.count()
    headers = {KEY_HEADER: key} | ({"A2A-Version": V1} if version == V1 else {})
    response = client.post(url("fuzzed"), data=json.dumps(document),
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
    check_answer(version, document, key, Client())


@FUZZ
@given(version=st.sampled_from([V1, V03]), document=json_values)
def test_no_json_document_breaks_the_door(key: str, version: str, document: Any) -> None:
    check_answer(version, document, key, Client())
