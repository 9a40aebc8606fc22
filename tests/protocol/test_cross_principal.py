"""The cross-principal probe table: principal A (a user holding an API key) has a live task with
a push config; principal B (another user's key, another user's bearer token, an application's
client-credentials token, a key without an owner, an anonymous caller) tries every method that
names a task, in both versions and both bindings. Each probe must be answered exactly as the
same request naming a task that does not exist, B's lists never show A's task, and A's task,
its events and its configs are unchanged afterwards."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from agents.models import Agent, ApiKey
from push.models import PushNotificationConfig
from tasks.models import Task
from tests.door_client import Door
from tests.factories.agents import KEY_HEADER, make_agent
from tests.factories.envelopes import UNKNOWN_TASK, rpc_body, url
from tests.factories.messages import wire_message
from tests.factories.oauth import machine, token_for, user_token
from tests.factories.pre02 import sse_frames
from tests.factories.push import create_params, named_params, webhook
from tests.factories.versions import V03, V1
from tests.protocol.answers import event_log, state_of

pytestmark = pytest.mark.usefixtures("door")

SLUG = "probe"
HOOK = "https://receiver.example/hook"
CONFIG = "c1"  # the id of A's push config
REST = f"/agents/{SLUG}/rest/"
SHARED_RPC = "/a2a/jsonrpc/"
SHARED_REST = f"/a2a/rest/{SLUG}/"
MEDIA = "application/a2a+json"


class Principal:
    """A client presenting one credential (or none) on every door of the probed agent."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers
        self.client = Door()

    def rpc(self, version: str, op: str, params: dict[str, Any], shared: bool = False) -> Any:
        """The JSON-RPC answer: the response object, or a stream's frames. `shared`: through
        the shared door, the agent named by the 1.0 `tenant`."""
        headers = self.headers | ({"A2A-Version": V1} if version == V1 else {})
        if shared:
            params = params | {"tenant": SLUG}
        response = self.client.post(
            SHARED_RPC if shared else url(SLUG), content_type="application/json",
            data=json.dumps(rpc_body(version, op, params, request_id=7)), headers=headers,
        )  # fmt: skip
        assert response.status_code == 200, response.content
        if response.streaming:
            return sse_frames(response.text)
        return response.json()

    def rest(self, version: str, verb: str, path: str, body: Any = None, base: str = REST,
             ) -> tuple[int, Any]:  # fmt: skip
        """The HTTP status and JSON body of a call on the agent's REST base (0.3 under v1/)."""
        headers = self.headers | ({"A2A-Version": V1} if version == V1 else {})
        prefix = "" if version == V1 else "v1/"
        response = self.client.generic(
            verb, base + prefix + path, data=json.dumps(body) if body is not None else b"",
            content_type=MEDIA, headers=headers,
        )  # fmt: skip
        if response.streaming:
            return response.status_code, sse_frames(response.text)
        return response.status_code, response.json()


def rest_config(version: str) -> dict[str, Any]:
    if version == V1:
        return {"url": HOOK, "token": "t0k"}
    return {"config": {"pushNotificationConfig": {"url": HOOK, "token": "t0k"}}}


def rest_follow_up(version: str, task: str) -> dict[str, Any]:
    if version == V1:
        return {"message": {"messageId": "follow-up", "role": "ROLE_USER", "taskId": task,
                            "parts": [{"text": "Bob"}]}}  # fmt: skip
    return {"request": {"messageId": "follow-up", "role": "ROLE_USER", "taskId": task,
                        "content": [{"text": "Bob"}]}}  # fmt: skip


def rpc_follow_up(version: str, task: str) -> dict[str, Any]:
    return {"message": wire_message(version, "Bob", message_id="follow-up", task_id=task)}


Probe = Callable[[Principal, str], Any]


def rpc_probes(version: str, shared: bool = False) -> dict[str, Probe]:
    def call(op: str, params: Callable[[str], dict[str, Any]]) -> Probe:
        return lambda who, task: who.rpc(version, op, params(task), shared)

    return {
        "get": call("get", lambda t: {"id": t}),
        "cancel": call("cancel", lambda t: {"id": t}),
        "subscribe": call("subscribe", lambda t: {"id": t}),
        "create config": call(
            "create_config", lambda t: create_params(version, t, webhook(version, HOOK))
        ),
        "get config": call("get_config", lambda t: named_params(version, t, CONFIG)),
        "list configs": call("list_configs", lambda t: named_params(version, t)),
        "delete config": call("delete_config", lambda t: named_params(version, t, CONFIG)),
        "follow-up message": call("send", lambda t: rpc_follow_up(version, t)),
    }


def rest_probes(version: str, base: str = REST) -> dict[str, Probe]:
    def call(verb: str, path: str, body: Callable[[str], Any] | None = None) -> Probe:
        return lambda who, task: who.rest(
            version, verb, path.format(task=task), body(task) if body else None, base
        )

    configs = "tasks/{task}/pushNotificationConfigs"
    return {
        "get": call("GET", "tasks/{task}"),
        "cancel": call("POST", "tasks/{task}:cancel", lambda t: {}),
        "subscribe (POST)": call("POST", "tasks/{task}:subscribe"),
        "subscribe (GET)": call("GET", "tasks/{task}:subscribe"),
        "create config": call("POST", configs, lambda t: rest_config(version)),
        "get config": call("GET", f"{configs}/{CONFIG}"),
        "list configs": call("GET", configs),
        "delete config": call("DELETE", f"{configs}/{CONFIG}"),
        "follow-up message": call("POST", "message:send", lambda t: rest_follow_up(version, t)),
    }


PROBES: dict[str, Probe] = {
    **{f"1.0 JSON-RPC {name}": probe for name, probe in rpc_probes(V1).items()},
    **{f"0.3 JSON-RPC {name}": probe for name, probe in rpc_probes(V03).items()},
    **{f"1.0 REST {name}": probe for name, probe in rest_probes(V1).items()},
    **{f"0.3 REST {name}": probe for name, probe in rest_probes(V03).items()},
    # The shared doors of 1.0, the agent named by the tenant.
    **{f"1.0 shared JSON-RPC {name}": probe for name, probe in rpc_probes(V1, True).items()},
    **{f"1.0 shared REST {name}": probe for name, probe in rest_probes(V1, SHARED_REST).items()},
}


def key_of(owner: User | None) -> dict[str, str]:
    _, raw = ApiKey.issue("probe key", owner=owner)
    return {KEY_HEADER: raw}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def another_users_key() -> dict[str, str]:
    return key_of(User.objects.create_user("bob"))


def another_users_token() -> dict[str, str]:
    return bearer(user_token(User.objects.create_user("bob"))["access_token"])


def an_applications_token() -> dict[str, str]:
    app, secret = machine()
    return bearer(token_for(app, secret)["access_token"])


def a_key_without_an_owner() -> dict[str, str]:
    return key_of(None)


def no_credential() -> dict[str, str]:
    return {}


OTHERS = [another_users_key, another_users_token, an_applications_token,
          a_key_without_an_owner, no_credential]  # fmt: skip
# How the owner of a task each of them makes is spelled: each is the principal it claims.
OWNED_AS = {another_users_key: "user:", another_users_token: "user:",
            an_applications_token: "app:", a_key_without_an_owner: "apikey:",
            no_credential: "anonymous"}  # fmt: skip


@pytest.fixture
def agent(settings: Any) -> Agent:
    """An agent open to anyone (so anonymous callers reach its methods) that asks a question
    first, so A's task stays open, and sends push notifications."""
    settings.REDIS_URL = ""  # turns and deliveries on the in-process pool
    settings.OUTBOUND_ALLOWED_HOSTS = ["receiver.example"]
    return make_agent(SLUG, executor_kind="interview", push_notifications=True)


@pytest.fixture
def alice() -> Principal:
    return Principal(key_of(User.objects.create_user("alice")))


@pytest.fixture
def alices_task(agent: Agent, alice: Principal) -> str:
    sent = alice.rpc(V1, "send", {"message": wire_message(V1, "hello")})
    task = sent["result"]["task"]
    assert state_of(task) == "input-required", task
    created = alice.rpc(V1, "create_config", create_params(
        V1, task["id"], webhook(V1, HOOK, id=CONFIG)))  # fmt: skip
    assert created["result"]["id"] == CONFIG, created
    return str(task["id"])


def snapshot(alice: Principal, task: str) -> Any:
    """What A sees of her task, its stored events and its configs."""
    read = alice.rpc(V1, "get", {"id": task})["result"]
    configs = list(
        PushNotificationConfig.objects.filter(task_id=task).values_list("config_id", "url")
    )
    return read, event_log(task), configs


def as_unknown(answer: Any, task: str) -> Any:
    """The answer to a probe of the unknown task, with its id written as A's task's: what B
    must get if A's task is, for B, a task that does not exist."""
    return json.loads(json.dumps(answer).replace(UNKNOWN_TASK, task))


@pytest.mark.parametrize("other", OTHERS, ids=lambda f: f.__name__)
def test_another_principal_gets_task_not_found_on_every_method_and_changes_nothing(
    alice: Principal, alices_task: str, other: Callable[[], dict[str, str]]
) -> None:
    bob = Principal(other())
    before = snapshot(alice, alices_task)

    leaks = {}
    for name, probe in PROBES.items():
        expected = as_unknown(probe(bob, UNKNOWN_TASK), alices_task)
        got = json.loads(json.dumps(probe(bob, alices_task)))
        if got != expected:
            leaks[name] = got

    assert leaks == {}
    assert snapshot(alice, alices_task) == before


@pytest.mark.parametrize("other", OTHERS, ids=lambda f: f.__name__)
def test_another_principals_lists_never_show_the_task(
    alice: Principal, alices_task: str, other: Callable[[], dict[str, str]]
) -> None:
    bob = Principal(other())
    sent = bob.rpc(V1, "send", {"message": wire_message(V1, "Bob's own")})  # B's own task
    owner = Task.objects.get(id=sent["result"]["task"]["id"]).owner

    listed = bob.rpc(V1, "list", {})["result"]["tasks"]
    status, rest_listed = bob.rest(V1, "GET", "tasks")

    assert owner.startswith(OWNED_AS[other]) and owner != Task.objects.get(id=alices_task).owner
    assert len(listed) == 1 and alices_task not in {t["id"] for t in listed}
    assert status == 200 and [t["id"] for t in rest_listed["tasks"]] == [listed[0]["id"]]
    assert alice.rpc(V1, "list", {})["result"]["tasks"][0]["id"] == alices_task


def test_the_probes_reach_the_methods_for_the_tasks_owner(
    alice: Principal, alices_task: str
) -> None:
    """The table is not vacuous: A herself gets real answers from the same probes."""
    probes = {name: probe for name, probe in PROBES.items()
              if not any(w in name for w in ("delete", "cancel", "subscribe"))}  # fmt: skip
    answers = {name: json.loads(json.dumps(probe(alice, alices_task)))
               for name, probe in probes.items()}  # fmt: skip
    unknown = {name: as_unknown(probe(alice, UNKNOWN_TASK), alices_task)
               for name, probe in probes.items()}  # fmt: skip

    same = [name for name in answers if answers[name] == unknown[name]]
    assert same == []
