"""The pre-0.2 methods of the first A2A guide (seed 004, `tests/fixtures/jsonrpc-0.1/`): its
exchanges replayed and answered in its shapes, under the id the client chose for the task.

A client's id is its own: another caller using the same id gets a task of its own, and neither
sees the other's. Bad params and strings the hub cannot carry are refused naming the field, and
0.3 requests to the method names the guide shares (`tasks/get`...) are still answered in 0.3.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import IntegrityError, transaction

from a2ahub.errors import InvalidParamsError
from agents.models import Agent
from push.models import PushNotificationConfig
from tasks import writer
from tasks.changes import NewTask
from tasks.models import Task
from tasks.wire import V01
from tests.factories.agents import KEY_HEADER, secured_agent
from tests.factories.envelopes import url
from tests.factories.errors import invalid_params, task_not_found
from tests.factories.messages import user_message
from tests.factories.pre02 import SEED_TASK, exchange, old_request, old_send, sse_frames
from tests.factories.push import CREDENTIALS, TOKEN
from tests.factories.versions import V03, V1
from tests.helpers import postgresql_only
from tests.protocol.answers import error_of, result_of, texts
from tests.protocol.callers import AsyncCaller, Caller
from tests.push.receiver import Receiver

pytestmark = pytest.mark.django_db

# Every member name of the guide's objects: an answer holds no other (no `kind`, `contextId`,
# `messageId`, `artifactId`...). `metadata` and a data part's `data` are free-form JSON.
VOCABULARY = {
    "id", "sessionId", "status", "artifacts", "history", "metadata", "state", "message",
    "timestamp", "role", "parts", "type", "text", "file", "data", "name", "mimeType", "bytes",
    "uri", "description", "index", "append", "lastChunk", "final", "artifact",
    "pushNotificationConfig", "url", "authentication", "schemes",
}  # fmt: skip
FREE_FORM = {"metadata", "data"}
PNG = (  # a picture of one pixel, as base64
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5Er"
    "kJggg=="
)


def assert_shaped_like(ours: Any, seed: Any, literal: frozenset[str], where: str = "") -> None:
    """`ours` has every member the guide's answer has, with the same JSON types, and the same
    values for the members named `literal`."""
    if isinstance(seed, dict):
        assert isinstance(ours, dict), where
        assert seed.keys() <= ours.keys(), (where, seed.keys() - ours.keys())
        for key in seed.keys() - FREE_FORM:
            if key in literal:
                assert ours[key] == seed[key], (f"{where}.{key}", ours[key], seed[key])
            assert_shaped_like(ours[key], seed[key], literal, f"{where}.{key}")
    elif isinstance(seed, list):
        assert isinstance(ours, list) and len(ours) == len(seed), (where, ours, seed)
        for n, (mine, theirs) in enumerate(zip(ours, seed, strict=True)):
            assert_shaped_like(mine, theirs, literal, f"{where}[{n}]")
    else:
        assert type(ours) is type(seed), (where, ours, seed)


def assert_in_vocabulary(value: Any, where: str = "") -> None:
    if isinstance(value, dict):
        assert value.keys() <= VOCABULARY, (where, value.keys() - VOCABULARY)
        for key, item in value.items():
            if key not in FREE_FORM:
                assert_in_vocabulary(item, f"{where}.{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            assert_in_vocabulary(item, f"{where}[{n}]")


def assert_answers_like(
    ours: Any, seed: Any, literal: frozenset[str] = frozenset({"state", "role", "type"})
) -> None:
    """The guide's shape, byte for byte in its members, and in its states, roles and part
    types (`literal`)."""
    assert_shaped_like(ours, seed, literal)
    assert_in_vocabulary(ours)


def replayed(caller: Caller, slug: str, request: dict[str, Any]) -> Any:
    """The result of a request sent as 0.1 clients send it: without A2A-Version."""
    answer = caller.post(slug, request, version=None)
    assert answer.json()["id"] == request["id"], answer.json()
    return result_of(answer)


@pytest.fixture
def echo_all(db: None) -> Agent:
    """An echo agent taking every media type: the guide sends text, pictures and PDFs."""
    return secured_agent("echo", default_input_modes=["*/*"])


@pytest.fixture
def pusher(db: None) -> Agent:
    return secured_agent("pusher", push_notifications=True)


# -- the guide's exchanges ---------------------------------------------------------------------


def test_a_send_makes_the_task_under_the_id_the_client_chose(
    caller: Caller, echo_all: Agent
) -> None:
    seed = exchange("send")  # its message's parts spelled `data`, as the guide has them

    result = replayed(caller, "echo", seed["request"])

    assert_answers_like(result, seed["response"]["result"])
    assert result["id"] == SEED_TASK
    assert result["artifacts"][0]["parts"] == [{"type": "text", "text": "告诉我一个笑话"}]
    assert "history" not in result, "0.1 answers without history unless asked"
    stored = Task.objects.get(client_id=SEED_TASK)
    assert str(stored.id) != SEED_TASK, "the hub's own id stays the primary key"
    assert (stored.context_id, stored.protocol_version) == (result["sessionId"], "0.1")


def test_get_answers_the_task_with_as_much_history_as_asked(
    caller: Caller, echo_all: Agent
) -> None:
    replayed(caller, "echo", exchange("send")["request"])
    seed = exchange("get")

    result = replayed(caller, "echo", seed["request"])
    plain = replayed(caller, "echo", old_request("tasks/get", id=SEED_TASK))

    assert_answers_like(result, seed["response"]["result"])
    assert [texts(m) for m in result["history"]] == [["告诉我一个笑话"]]
    assert "history" not in plain, "0.1's default history length is 0"


def test_cancel_cancels_the_task_the_client_named(caller: Caller, interview: Agent) -> None:
    waiting = replayed(caller, "interview", old_send(SEED_TASK, text="hi"))
    seed = exchange("cancel")

    result = replayed(caller, "interview", seed["request"])
    again = error_of(caller.post("interview", seed["request"], version=None))

    assert waiting["status"]["state"] == "input-required"
    assert_answers_like(result, seed["response"]["result"])
    assert again["code"] == -32002


def test_push_set_and_get_answer_the_webhook_without_its_secrets(
    caller: Caller, pusher: Agent
) -> None:
    replayed(caller, "pusher", old_send(SEED_TASK))
    seed_set, seed_get = exchange("push-set"), exchange("push-get")
    config = seed_set["request"]["params"]["pushNotificationConfig"]
    config["token"] = TOKEN
    config["authentication"]["credentials"] = CREDENTIALS

    created = replayed(caller, "pusher", seed_set["request"])
    read = replayed(caller, "pusher", seed_get["request"])

    assert created == seed_set["response"]["result"]
    assert read == seed_get["response"]["result"]
    stored = PushNotificationConfig.objects.get(task__client_id=SEED_TASK)
    assert (stored.token, stored.auth_credentials, stored.auth_scheme) == (
        TOKEN, CREDENTIALS, "jwt",
    )  # fmt: skip
    assert stored.protocol_version == "0.1"


def test_setting_the_webhook_again_replaces_it(caller: Caller, pusher: Agent) -> None:
    replayed(caller, "pusher", old_send(SEED_TASK))
    for hook in ("https://one.example.com/hook", "https://two.example.com/hook"):
        config = {"url": hook}
        replayed(caller, "pusher", old_request("tasks/pushNotification/set", id=SEED_TASK,
                                               pushNotificationConfig=config))  # fmt: skip

    read = replayed(caller, "pusher", exchange("push-get")["request"])

    latest = {"url": "https://two.example.com/hook"}
    assert read == {"id": SEED_TASK, "pushNotificationConfig": latest}
    assert PushNotificationConfig.objects.count() == 1


@pytest.mark.django_db(transaction=True)  # deliveries run on the hub's thread pool
def test_the_webhook_hears_the_task_in_the_guides_shape_under_the_clients_id(
    caller: Caller, pusher: Agent, settings: Any
) -> None:
    settings.REDIS_URL = ""  # deliveries on the in-process pool: no Celery worker here
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    receiver = Receiver()
    hook = {"url": receiver.url, "token": TOKEN,
            "authentication": {"schemes": ["Bearer"], "credentials": CREDENTIALS}}  # fmt: skip
    try:
        replayed(caller, "pusher", old_send(SEED_TASK, text="ahoy", pushNotification=hook))
        got = receiver.wait_for(4)  # the task, working, its artifact, completed
    finally:
        receiver.down()

    # Each delivery is the task as it is when sent (as for 0.3), with the id its client gave it.
    bodies = [r.json() for r in got]
    assert {b["status"]["state"] for b in bodies} <= {"submitted", "working", "completed"}
    assert bodies[-1]["status"]["state"] == "completed"
    assert {b["id"] for b in bodies} == {SEED_TASK}
    assert bodies[-1]["artifacts"][0]["parts"] == [{"type": "text", "text": "ahoy"}]
    assert_in_vocabulary(bodies)
    assert {(r.header("Authorization"), r.header("X-A2A-Notification-Token")) for r in got} == {
        (f"Bearer {CREDENTIALS}", TOKEN)
    }


def test_a_task_waiting_for_input_goes_on_under_the_same_id(
    caller: Caller, interview: Agent
) -> None:
    seed = exchange("multi-turn")
    first = replayed(caller, "interview", seed["requests"][0])
    seed["requests"][1]["params"]["sessionId"] = first["sessionId"]

    second = replayed(caller, "interview", seed["requests"][1])

    assert_answers_like(first, seed["responses"][0]["result"])
    assert_answers_like(second, seed["responses"][1]["result"])
    assert (second["id"], second["sessionId"]) == (SEED_TASK, first["sessionId"])
    assert texts(first["status"]["message"]) == ["What is your name?"]
    assert texts(second["artifacts"][0]) == ["Nice to meet you, Android!"]
    assert Task.objects.filter(client_id=SEED_TASK).count() == 1


def test_files_and_data_go_through_as_the_guide_spells_them(
    caller: Caller, echo_all: Agent
) -> None:
    seed = exchange("send-file")  # its file content spelled `data`, as the guide has it
    sent = seed["requests"][0]
    sent["params"]["message"]["parts"] += [
        {"type": "file", "file": {"name": "map.png", "uri": "https://example.com/map.png"}},
        {"type": "data", "data": {"tickets": [{"n": 1}]}, "metadata": {"schema": "t"}},
    ]

    replayed(caller, "echo", sent)
    result = replayed(caller, "echo", seed["requests"][1])

    assert result["artifacts"][0]["parts"] == [
        {"type": "text", "text": "分析附带的报告并生成高级概述"},
        {"type": "file", "file": {"mimeType": "application/pdf",
                                  "bytes": "JVBERi0xLjcKJcOkw7zDtsOfCg=="}},
        {"type": "file", "file": {"name": "map.png", "uri": "https://example.com/map.png"}},
        {"type": "data", "data": {"tickets": [{"n": 1}]}, "metadata": {"schema": "t"}},
    ]  # fmt: skip
    assert result["sessionId"] == sent["params"]["sessionId"]
    assert_in_vocabulary(result)


# -- streams -----------------------------------------------------------------------------------


async def post(caller: AsyncCaller, slug: str, body: dict[str, Any]) -> Any:
    return await caller.client.post(
        url(slug), data=json.dumps(body), content_type="application/json",
        headers={KEY_HEADER: caller.key or ""},
    )  # fmt: skip


async def events_of(response: Any, request_id: int = 1) -> list[dict[str, Any]]:
    """Every event of a stream (each frame's result), once the stream has ended."""
    assert response["Content-Type"] == "text/event-stream"

    async def read() -> bytes:
        content: AsyncIterator[bytes] = response.streaming_content
        return b"".join([chunk async for chunk in content])

    frames = sse_frames((await asyncio.wait_for(read(), 15)).decode())
    assert all(f["id"] == request_id and "error" not in f for f in frames), frames
    return [f["result"] for f in frames]


def without_parts(event: dict[str, Any]) -> dict[str, Any]:
    return event | {"artifact": {k: v for k, v in event["artifact"].items() if k != "parts"}}


def assert_stream_like(events: list[dict[str, Any]], seed: list[dict[str, Any]]) -> None:
    """Status and artifact events shaped as the guide's; only the last one says final. (Their
    states and chunk flags are the test's to check: they follow the agent.)"""
    statuses = [e for e in events if "status" in e]
    for event in statuses:
        assert_answers_like(event, seed[-1], frozenset({"role", "type"}))
    for event in (e for e in events if "artifact" in e):
        assert_answers_like(without_parts(event), without_parts(seed[1]), frozenset())
    assert [e["final"] for e in statuses] == [False] * (len(statuses) - 1) + [True]
    assert events[-1] is statuses[-1]
    assert {e["id"] for e in events} == {SEED_TASK}


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_send_subscribe_streams_the_guides_events_and_ends_with_final(
    async_caller: AsyncCaller,
) -> None:
    # An echo that writes its artifact in three chunks, as the guide's stream has three.
    await sync_to_async(secured_agent)(
        "chunky", default_input_modes=["*/*"], executor_settings={"chunks": 3}
    )
    seed = exchange("send-subscribe")
    seed["request"]["params"]["message"]["parts"][1]["file"]["data"] = PNG

    events = await events_of(await post(async_caller, "chunky", seed["request"]))

    assert_stream_like(events, seed["events"])
    assert [e["status"]["state"] for e in events if "status" in e] == [
        "submitted", "working", "completed",
    ]  # fmt: skip
    chunks = [e["artifact"] for e in events if "artifact" in e]
    flags = [(c["index"], c["append"], c["lastChunk"]) for c in chunks]
    assert flags == [(a["artifact"]["index"], a["artifact"]["append"], a["artifact"]["lastChunk"])
                     for a in seed["events"][1:4]]  # fmt: skip
    assert chunks[0]["parts"] == [
        {"type": "text", "text": "写一篇长文描述附带的图片"},
        {"type": "file", "file": {"mimeType": "image/png", "bytes": PNG}},
    ]
    stored = await Task.objects.aget(client_id=SEED_TASK)
    assert stored.context_id == seed["request"]["params"]["sessionId"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_resubscribe_follows_a_waiting_task_to_its_end(async_caller: AsyncCaller) -> None:
    await sync_to_async(secured_agent)("interview", "interview")
    waiting = result_of(await post(async_caller, "interview", old_send(SEED_TASK, text="hi")))
    seed = exchange("resubscribe")

    stream = await post(async_caller, "interview", seed["request"])
    answer = old_send(SEED_TASK, text="Grace", sessionId=waiting["sessionId"], request_id=2)
    answered = result_of(await post(async_caller, "interview", answer))
    events = await events_of(stream)

    assert answered["status"]["state"] == "completed"
    assert_stream_like(events, seed["events"])
    assert [e["status"]["state"] for e in events if "status" in e] == [
        "input-required", "working", "working", "completed",
    ]  # fmt: skip
    greeting = [e["artifact"] for e in events if "artifact" in e]
    assert [(a["index"], a["append"], a["lastChunk"], texts(a)) for a in greeting] == [
        (0, False, True, ["Nice to meet you, Grace!"]),
    ]


# -- whose task it is ---------------------------------------------------------------------------


def test_another_caller_using_the_same_id_gets_a_task_of_its_own(
    caller: Caller, stranger: Caller, interview: Agent
) -> None:
    mine = replayed(caller, "interview", old_send(SEED_TASK, text="hi"))
    theirs = replayed(stranger, "interview", old_send(SEED_TASK, text="hi"))

    answered = replayed(stranger, "interview", old_send(SEED_TASK, text="Eve"))
    kept = replayed(caller, "interview", old_request("tasks/get", id=SEED_TASK, historyLength=9))

    assert theirs["id"] == mine["id"] == SEED_TASK
    assert theirs["sessionId"] != mine["sessionId"]
    assert texts(answered["artifacts"][0]) == ["Nice to meet you, Eve!"]
    assert kept["status"]["state"] == "input-required"
    assert [texts(m) for m in kept["history"]] == [["hi"], ["What is your name?"]]
    assert Task.objects.filter(client_id=SEED_TASK).count() == 2


def test_the_database_holds_a_callers_ids_unique_on_an_agent(
    caller: Caller, echo_all: Agent
) -> None:
    replayed(caller, "echo", old_send(SEED_TASK))
    caller.send("echo", V03)
    caller.send("echo", V03)  # tasks without a client's id are many: the constraint skips them
    twin = Task.objects.get(client_id=SEED_TASK)
    twin.pk = uuid.uuid4()

    with pytest.raises(IntegrityError), transaction.atomic():
        twin.save(force_insert=True)
    assert Task.objects.filter(client_id="").count() == 2


def second_opening(task: Task) -> NewTask:
    """What a second first send naming the same id would store, had it lost the race."""
    return NewTask(
        agent_id=task.agent_id, owner=task.owner, context_id="ctx-2", client_id=task.client_id,
        message=user_message("me too"), protocol_version=V01, execution_mode="inline",
    )  # fmt: skip


def test_a_first_send_that_loses_the_race_for_its_id_is_told_why(
    caller: Caller, echo_all: Agent
) -> None:
    replayed(caller, "echo", old_send(SEED_TASK))
    winner = Task.objects.get(client_id=SEED_TASK)

    with pytest.raises(InvalidParamsError) as refused:
        async_to_sync(writer.open)(second_opening(winner))

    assert refused.value.data == {"field": "id"}
    assert Task.objects.filter(client_id=SEED_TASK).count() == 1


@postgresql_only("the event loop's writer is PostgreSQL's")
@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_event_loops_writer_tells_the_loser_of_the_race_too(
    caller: Caller, echo_all: Agent
) -> None:
    await sync_to_async(replayed)(caller, "echo", old_send(SEED_TASK))
    winner = await Task.objects.aget(client_id=SEED_TASK)

    with pytest.raises(InvalidParamsError) as refused:
        await writer.open(second_opening(winner))

    assert refused.value.data == {"field": "id"}
    assert await Task.objects.filter(client_id=SEED_TASK).acount() == 1


NAMING_THE_TASK = {
    "get": old_request("tasks/get", id=SEED_TASK),
    "cancel": old_request("tasks/cancel", id=SEED_TASK),
    "push get": old_request("tasks/pushNotification/get", id=SEED_TASK),
    "push set": old_request("tasks/pushNotification/set", id=SEED_TASK,
                            pushNotificationConfig={"url": "https://example.com/callback"}),
}  # fmt: skip


@pytest.mark.parametrize("request_body", NAMING_THE_TASK.values(), ids=NAMING_THE_TASK.keys())
def test_another_callers_task_is_not_found(
    caller: Caller, stranger: Caller, pusher: Agent, request_body: dict[str, Any]
) -> None:
    replayed(caller, "pusher", old_send(SEED_TASK))

    error = error_of(stranger.post("pusher", request_body, version=None))

    assert error == task_not_found(V03, SEED_TASK)
    assert not PushNotificationConfig.objects.exists()


# A stream's reads give their connection back at once: no test transaction may hold it.
@pytest.mark.django_db(transaction=True)
def test_another_caller_cannot_follow_the_task(
    caller: Caller, stranger: Caller, interview: Agent
) -> None:
    replayed(caller, "interview", old_send(SEED_TASK, text="hi"))

    response = stranger.post("interview", exchange("resubscribe")["request"], version=None)

    frames = sse_frames(response.text)
    assert frames == [{"jsonrpc": "2.0", "id": 1, "error": task_not_found(V03, SEED_TASK)}]


def test_a_caller_without_a_good_key_is_refused_before_anything_runs(
    anonymous: Caller, impostor: Caller, echo_all: Agent
) -> None:
    for outsider in (anonymous, impostor):
        answer = outsider.post("echo", old_send(SEED_TASK), version=None)

        assert answer.status_code == 401 and answer.headers["WWW-Authenticate"]
    assert not Task.objects.exists()


# -- what is refused ------------------------------------------------------------------------------

BAD_PARAMS = {
    "no id": ({"message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}}, "id"),
    "a number for id": ({"id": 7, "message": {"role": "user", "parts": []}}, "id"),
    "no message": ({"id": SEED_TASK}, "message"),
    "no role": ({"id": SEED_TASK, "message": {"parts": [{"type": "text", "text": "hi"}]}},
                "message.role"),
    "no parts": ({"id": SEED_TASK, "message": {"role": "user", "parts": []}}, "message.parts"),
    "an unknown part type": (
        {"id": SEED_TASK, "message": {"role": "user", "parts": [{"type": "video"}]}},
        "message.parts[0].type",
    ),
    "a part with kind, not type": (
        {"id": SEED_TASK, "message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}},
        "message.parts[0].type",
    ),
    "a text that is no string": (
        {"id": SEED_TASK, "message": {"role": "user", "parts": [{"type": "text", "text": 5}]}},
        "message.parts[0].text",
    ),
    "a file without content": (
        {"id": SEED_TASK, "message": {"role": "user",
                                      "parts": [{"type": "file", "file": {"name": "a"}}]}},
        "message.parts[0].file",
    ),
    "a file that is not base64": (
        {"id": SEED_TASK, "message": {"role": "user",
                                      "parts": [{"type": "file", "file": {"bytes": "<b64>"}}]}},
        "message.parts[0].file.bytes",
    ),
    "data that is no object": (
        {"id": SEED_TASK, "message": {"role": "user", "parts": [{"type": "data", "data": [1]}]}},
        "message.parts[0].data",
    ),
    "a negative history length": (
        {"id": SEED_TASK, "historyLength": -1,
         "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}},
        "historyLength",
    ),
    "a webhook without url": (
        {"id": SEED_TASK, "pushNotification": {"token": "t"},
         "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}},
        "pushNotification.url",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("params", "field"), BAD_PARAMS.values(), ids=BAD_PARAMS.keys())
def test_bad_params_are_refused_naming_the_field(
    caller: Caller, echo_all: Agent, params: dict[str, Any], field: str
) -> None:
    error = error_of(caller.post("echo", old_request("tasks/send", **params), version=None))

    assert (error["code"], error["data"]) == (-32602, {"field": field}), error
    assert not Task.objects.exists()


def test_a_push_config_without_its_webhook_is_refused(caller: Caller, pusher: Agent) -> None:
    replayed(caller, "pusher", old_send(SEED_TASK))

    error = error_of(caller.post("pusher", old_request("tasks/pushNotification/set", id=SEED_TASK),
                                 version=None))  # fmt: skip

    assert (error["code"], error["data"]) == (-32602, {"field": "pushNotificationConfig"})


NUL, SURROGATE = "\x00", "\ud800"
PROBLEM = {
    NUL: "holds U+0000 (NUL), which the hub cannot store",
    SURROGATE: "holds a lone UTF-16 surrogate, which is not Unicode",
}


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (lambda bad: old_send(SEED_TASK, text=f"hello {bad}"), "message.parts[0].text"),
        (lambda bad: old_send(f"task-{bad}"), "id"),
        (lambda bad: old_send(SEED_TASK, sessionId=f"s-{bad}"), "sessionId"),
    ],
    ids=["text part", "task id", "session id"],
)
def test_a_string_the_hub_cannot_carry_is_refused_as_in_the_other_versions(
    caller: Caller, echo_all: Agent, bad: str, body: Any, field: str
) -> None:
    error = error_of(caller.post("echo", body(bad), version=None))

    assert error == invalid_params(V03, field, PROBLEM[bad])
    assert not Task.objects.exists()


def test_a_finished_task_takes_no_more_messages(caller: Caller, echo_all: Agent) -> None:
    replayed(caller, "echo", old_send(SEED_TASK))

    error = error_of(caller.post("echo", old_send(SEED_TASK, text="again"), version=None))

    assert error["code"] == -32004


def test_a_follow_up_in_another_session_is_refused(caller: Caller, interview: Agent) -> None:
    replayed(caller, "interview", old_send(SEED_TASK, text="hi"))

    answer = old_send(SEED_TASK, text="Ada", sessionId="another-session")
    error = error_of(caller.post("interview", answer, version=None))

    assert (error["code"], error["data"]) == (-32602, {"field": "sessionId"})


def test_an_unknown_task_is_not_found(caller: Caller, echo_all: Agent) -> None:
    error = error_of(caller.post("echo", exchange("get")["request"], version=None))

    assert error == task_not_found(V03, SEED_TASK)


def test_the_guides_methods_are_not_1_0_methods(caller: Caller, echo_all: Agent) -> None:
    error = error_of(caller.post("echo", old_send(SEED_TASK), version=V1))

    assert error["code"] == -32601
    assert not Task.objects.exists()


# -- 0.3 beside it ------------------------------------------------------------------------------


def test_0_3_requests_to_the_shared_names_still_answer_in_0_3(
    caller: Caller, echo_all: Agent
) -> None:
    task = caller.send("echo", V03)

    got = caller.get("echo", V03, task["id"])

    assert (got["kind"], got["id"], got["contextId"]) == ("task", task["id"], task["contextId"])
    assert got["history"], "0.3's default is every message"


def test_a_task_the_hub_named_keeps_its_name_for_0_3_requests(
    caller: Caller, echo_all: Agent
) -> None:
    # A 0.1 client may choose, as its own, an id the hub gave a 0.3 task: that makes a task
    # of its own, and the shared names still find the hub's task by it.
    hubs = caller.send("echo", V03, "the hub's")
    clients = replayed(caller, "echo", old_send(hubs["id"], text="the client's"))

    got = caller.get("echo", V03, hubs["id"])

    assert clients["id"] == hubs["id"]
    assert got["kind"] == "task" and texts(got["history"][0]) == ["the hub's"]
    assert Task.objects.count() == 2
