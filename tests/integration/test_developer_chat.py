"""The developer pages' chat console on the distributed hub (two web processes, Celery
workers, PostgreSQL, Redis): a reply written by an agent on a worker reaches the page chunk
by chunk, a cancel sent through the other web process ends it, and the streams the console
holds open take no thread of their web process.

Persona: a signed-in user made here (with their own worker-run agent); their session works
on both web processes, as a browser's cookie would behind a load balancer.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from executors.demo_skills import STORY
from tests.developers.chat_client import (
    PASSWORD,
    chat_url,
    form_token,
    lines_to_frames,
    signed_in,
    states,
)
from tests.helpers import ROOT
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

OPEN_STREAMS = 12
SETUP = """
import json, sys
import django
django.setup()
from django.contrib.auth.models import User
from agents.models import Agent, Skill
name = sys.argv[1]
User.objects.create_user(name, "", sys.argv[2])
agent = Agent.objects.create(
    slug=f"{name}-story", name="Story on a worker", description="Streams five chunks.",
    executor_kind="python", execution_mode="worker",
    executor_settings={"functions": {"story": "demo.story"}, "story_pause": 0.4},
)
Skill.objects.create(agent=agent, skill_id="story", name="Story", description="Five chunks.",
                     tags=["demo"])
"""


@pytest.fixture(scope="module")
def chatter(hub: Hub) -> str:
    """A new user, who also owns `<name>-story`: the demo story, run by a Celery worker."""
    name = f"chat-{uuid.uuid4().hex[:8]}"
    subprocess.run([sys.executable, "-c", SETUP, name, PASSWORD], cwd=ROOT, env=hub.env,
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    return name


def stored_state(hub: Hub, task_id: str) -> str:
    return str(hub.query("SELECT state FROM tasks_task WHERE id = %s", (task_id,))[0][0])


def open_stream(stack: ExitStack, http: httpx.Client, slug: str, **data: str) -> Any:
    token = form_token(http, slug)
    response = stack.enter_context(
        http.stream("POST", chat_url(slug, "send"), data={**data, "csrfmiddlewaretoken": token})
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    return lines_to_frames(response.iter_lines())


def test_a_reply_from_a_worker_reaches_the_chat_chunk_by_chunk(hub: Hub, chatter: str) -> None:
    http = signed_in(hub.web_a, chatter)
    events: list[tuple[str, dict[str, Any]]] = []
    # Each chunk with the task's stored state when it reached us.
    arrivals: list[tuple[str, str]] = []
    with ExitStack() as stack:
        for name, event in open_stream(stack, http, f"{chatter}-story", text="a story"):
            events.append((name, event))
            if "artifactUpdate" in event:
                update = event["artifactUpdate"]
                text = "".join(part["text"] for part in update["artifact"]["parts"])
                arrivals.append((text, stored_state(hub, update["taskId"])))

    assert [text for text, _ in arrivals] == STORY
    # The worker was still writing when each chunk but the last reached the page.
    assert [state for _, state in arrivals[:-1]] == ["working"] * 4, arrivals
    assert states(events)[-1] == "completed"
    task_id = events[0][1]["task"]["id"]
    runner = hub.process_running(task_id)
    assert runner is not None and runner.name.startswith("worker"), hub.runner_of(task_id)


def test_a_cancel_through_the_other_web_process_ends_the_chat_stream(
    hub: Hub, chatter: str
) -> None:
    http = signed_in(hub.web_a, chatter)
    seen: list[tuple[str, dict[str, Any]]] = []
    with ExitStack() as stack:
        frames = open_stream(stack, http, "slow", text="60")
        for name, event in frames:
            seen.append((name, event))
            if "working" in states(seen):
                break
        task_id = seen[0][1]["task"]["id"]
        token = form_token(http, "slow")
        canceled = http.post(f"{hub.web_b}{chat_url('slow', 'cancel')}",
                             data={"taskId": task_id, "csrfmiddlewaretoken": token})  # fmt: skip
        assert canceled.status_code == 200, canceled.text
        assert canceled.json()["task"]["status"]["state"] == "TASK_STATE_CANCELED"
        seen.extend(frames)  # the stream ends with the cancel

    assert states(seen)[-1] == "canceled"
    assert stored_state(hub, task_id) == "canceled"


def threads_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE)
    assert found is not None
    return int(found.group(1))


def test_open_chat_streams_hold_no_thread_of_the_web_process(hub: Hub, chatter: str) -> None:
    web = next(p for p in hub.processes if p.name == "web-a" and p.alive())
    http = signed_in(hub.web_a, chatter)
    form_token(http, "slow")  # a page served before counting: the process's pools are warm
    before = threads_of(web.pid)
    with ExitStack() as stack:
        streams = [open_stream(stack, http, "slow", text="3") for _ in range(OPEN_STREAMS)]
        for frames in streams:
            next(iter(frames))  # each stream is open and has sent its task
        time.sleep(0.5)
        during = threads_of(web.pid)
        ends = [states([*frames])[-1] for frames in streams]

    assert during - before < OPEN_STREAMS // 2, (before, during)
    assert ends == ["completed"] * OPEN_STREAMS
