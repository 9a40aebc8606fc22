"""The `python` executor kind: developers' functions answer A2A messages in both versions."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.models import Agent, Skill
from tasks import runner
from tests.factories.agents import secured_agent
from tests.factories.envelopes import envelope
from tests.factories.versions import METHODS, V03, V1
from tests.protocol.answers import artifact_texts, event_log, state_of, texts
from tests.protocol.callers import AsyncCaller, Caller

pytestmark = pytest.mark.django_db
both_versions = pytest.mark.parametrize("version", [V03, V1])

FUNCTIONS = {
    "reverse": "demo.reverse",
    "count": "demo.word_count",
    "countdown": "demo.countdown",
}


def make_toolbox() -> Agent:
    agent = secured_agent(
        "toolbox", "python", executor_settings={"functions": FUNCTIONS},
        default_output_modes=["text/plain", "application/json"],
    )  # fmt: skip
    agent.skills.all().delete()
    for position, skill_id in enumerate(FUNCTIONS):
        Skill.objects.create(agent=agent, skill_id=skill_id, name=skill_id.title(),
                             description=f"The {skill_id} tool.", tags=["tool"],
                             position=position)  # fmt: skip
    return agent


@pytest.fixture
def toolbox(db: None) -> Agent:
    return make_toolbox()


def ask(caller: Caller, version: str, skill: str, text: str, **message: Any) -> dict[str, Any]:
    return caller.send("toolbox", version, text=text, message={"metadata": {"skillId": skill},
                                                               **message})  # fmt: skip


@both_versions
def test_a_sync_function_answers_with_a_text_artifact(
    caller: Caller, toolbox: Agent, version: str
) -> None:
    task = ask(caller, version, "reverse", "stressed")

    assert state_of(task) == "completed"
    assert artifact_texts(task) == ["desserts"]


@both_versions
def test_an_async_function_answers_with_data(caller: Caller, toolbox: Agent, version: str) -> None:
    task = ask(caller, version, "count", "one two three")

    part = task["artifacts"][0]["parts"][0]
    assert part["data"] == {"words": 3, "characters": 13}


@both_versions
def test_a_generator_streams_one_artifact_with_progress(
    caller: Caller, toolbox: Agent, version: str
) -> None:
    task = ask(caller, version, "countdown", "3")

    assert state_of(task) == "completed"
    assert "".join(artifact_texts(task)) == "3\n2\n1\nlift-off\n"
    progress = [t for m in task["history"] for t in texts(m) if t.endswith("to go")]
    assert progress == ["3 to go", "2 to go", "1 to go"]


def test_a_number_in_another_script_is_no_number_to_count_down_from(
    caller: Caller, toolbox: Agent
) -> None:
    task = ask(caller, V1, "countdown", "² ٣ 99999999999999999999999 2")

    assert state_of(task) == "completed"
    assert "".join(artifact_texts(task)) == "2\n1\nlift-off\n"


@both_versions
def test_input_required_asks_and_the_answer_continues_the_task(
    caller: Caller, toolbox: Agent, version: str
) -> None:
    asked = ask(caller, version, "reverse", "   ")
    assert state_of(asked) == "input-required"
    assert texts(asked["status"]["message"]) == ["What should I reverse?"]

    answered = ask(caller, version, "reverse", "drawer", taskId=asked["id"],
                   contextId=asked["contextId"])  # fmt: skip
    assert state_of(answered) == "completed"
    assert artifact_texts(answered) == ["reward"]


def test_without_a_skill_id_the_cards_first_skill_answers(caller: Caller, toolbox: Agent) -> None:
    task = caller.send("toolbox", V1, text="abc")

    assert artifact_texts(task) == ["cba"]

    Skill.objects.filter(agent=toolbox, skill_id="reverse").update(position=10)
    toolbox.save()  # clears the hub's agent cache, as an edit in the admin would
    counted = caller.send("toolbox", V1, text="abc")
    assert counted["artifacts"][0]["parts"][0]["data"] == {"words": 1, "characters": 3}


def test_an_unregistered_function_fails_the_task_and_says_why(caller: Caller, db: None) -> None:
    secured_agent("broken", "python", executor_settings={"function": "nowhere.to_be_found"})

    task = caller.send("broken", V1, text="hi")

    assert state_of(task) == "failed"
    assert "nowhere.to_be_found" in " ".join(texts(task["status"]["message"]))


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_canceling_stops_a_streaming_function_mid_way(async_caller: AsyncCaller) -> None:
    await sync_to_async(make_toolbox)()
    task = await async_caller.send(
        "toolbox", V1, "20", configuration={"returnImmediately": True},
        message={"metadata": {"skillId": "countdown"}},
    )  # fmt: skip
    task_id = task["id"]
    while len(await sync_to_async(event_log)(task_id)) < 7:
        await asyncio.sleep(0.02)

    canceled = await async_caller.result("toolbox", V1, "cancel", {"id": task_id})
    for _ in range(100):
        if task_id not in runner.RUNNING:
            break
        await asyncio.sleep(0.02)

    assert state_of(canceled) == "canceled"
    assert task_id not in runner.RUNNING
    stored = await async_caller.get("toolbox", task_id)
    written = "".join(artifact_texts(stored))
    assert written.startswith("20\n") and "lift-off" not in written


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@both_versions
async def test_a_function_answers_over_a_stream(async_caller: AsyncCaller, version: str) -> None:
    await sync_to_async(make_toolbox)()
    body = envelope(version, "send", text="2", message={"metadata": {"skillId": "countdown"}})
    body["method"] = METHODS[version]["stream"]
    headers = {"A2A-Version": V1} if version == V1 else {}
    response = await async_caller.client.post(
        "/agents/toolbox/jsonrpc/", data=json.dumps(body), content_type="application/json",
        headers={"X-API-Key": async_caller.key or "", **headers},
    )  # fmt: skip
    text = b"".join([chunk async for chunk in response.streaming_content]).decode()
    results = [json.loads(line[6:])["result"] for line in text.splitlines()
               if line.startswith("data: ")]  # fmt: skip
    updates = [r.get("artifactUpdate", r) for r in results if "artifact" in r.get(
        "artifactUpdate", r)]  # fmt: skip

    assert "".join(p["text"] for u in updates for p in u["artifact"]["parts"]) == "2\n1\nlift-off\n"
    assert [u.get("lastChunk", False) for u in updates] == [False, False, True]
