"""Re-attaching to a task's stream when the task ends just then: a subscribe found the task
still open, but by the time it read the snapshot the task had ended. A client that names its
last event (Last-Event-ID) still gets the events it missed, through the last one."""

from __future__ import annotations

import pytest

from protocol.handlers.streams import released, resubscribed
from tasks import events
from tasks.reading import load_snapshot
from tests.factories.agents import make_agent
from tests.factories.tasks import ended, open_task

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]
# (`released` gives each read's connection back: the thread it runs on outlives the test.)


async def test_a_client_back_as_its_task_ends_still_gets_the_events_it_missed() -> None:
    agent = await released(make_agent)("finisher")
    task = await released(open_task)(agent, ended())  # 1 the task, 2 working, 3 completed
    snapshot, sequence = await released(load_snapshot)(task.id)
    subscription = await events.subscribe(str(task.id), over_redis=False)

    items = [item async for item in resubscribed(subscription, task.id, snapshot, sequence, 1)]

    frames = [(n, event) for n, event in items if event]  # not the stream's pauses
    assert [n for n, _ in frames] == [None, 2, 3]
    assert frames[0][1]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert frames[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_client_that_saw_the_end_gets_only_the_snapshot() -> None:
    agent = await released(make_agent)("finisher")
    task = await released(open_task)(agent, ended())
    snapshot, sequence = await released(load_snapshot)(task.id)
    subscription = await events.subscribe(str(task.id), over_redis=False)

    items = [item async for item in resubscribed(subscription, task.id, snapshot, sequence, 3)]

    assert [n for n, event in items if event] == [None]
