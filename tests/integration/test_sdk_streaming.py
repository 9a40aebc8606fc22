"""The official a2a-sdk client streams from the distributed hub through every door (its 1.0
transports and its 0.3 compat ones, JSON-RPC and HTTP+JSON, own and shared URLs): a streamed
send, and a resubscription (through the other web process) to a task that is still running."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from a2a.types import SendMessageRequest, StreamResponse, SubscribeToTaskRequest, TaskState

from tests.factories.messages import user_message
from tests.integration.clients import DOORS, Door, a2a_client, send
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration
every_door = pytest.mark.parametrize("door", DOORS, ids=str)
STREAM_TIMEOUT = 20.0


async def collect(events: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    async def read() -> list[StreamResponse]:
        return [event async for event in events]

    return await asyncio.wait_for(read(), STREAM_TIMEOUT)


def kinds(events: list[StreamResponse]) -> list[str]:
    return [str(event.WhichOneof("payload")) for event in events]


def essay_chunks(events: list[StreamResponse]) -> str:
    return "".join(
        part.text
        for event in events
        if event.HasField("artifact_update")
        for part in event.artifact_update.artifact.parts
    )


def last_state(events: list[StreamResponse]) -> int:
    updates = [e.status_update.status.state for e in events if e.HasField("status_update")]
    return updates[-1]


@every_door
def test_the_official_client_streams_a_message(hub: Hub, door: Door) -> None:
    async def scenario() -> list[StreamResponse]:
        async with a2a_client(hub.web_a, "writer", *door, streaming=True) as client:
            request = SendMessageRequest(message=user_message("lighthouses"))
            return await collect(client.send_message(request))

    events = asyncio.run(scenario())

    assert kinds(events)[0] == "task"
    assert set(kinds(events)[1:]) == {"status_update", "artifact_update"}
    assert last_state(events) == TaskState.TASK_STATE_COMPLETED
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert [c.append for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.last_chunk for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert essay_chunks(events).startswith("On lighthouses.\n\n")


@every_door
def test_the_official_client_resubscribes_to_a_running_task(hub: Hub, door: Door) -> None:
    async def scenario() -> tuple[str, list[StreamResponse]]:
        async with (
            a2a_client(hub.web_a, "slow", *door) as sender,
            a2a_client(hub.web_b, "slow", *door, streaming=True) as follower,
        ):
            task = await send(sender, user_message("2"), immediately=True)
            events = await collect(follower.subscribe(SubscribeToTaskRequest(id=task.id)))
        return task.id, events

    task_id, events = asyncio.run(scenario())

    assert kinds(events)[0] == "task" and events[0].task.id == task_id
    assert events[0].task.status.state in {
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    }
    assert last_state(events) == TaskState.TASK_STATE_COMPLETED
    assert essay_chunks(events) == "Worked for 2 seconds."
