"""Agents that call themselves, on real hub processes: an `a2a-remote` agent whose card is its
own hub's is refused at once, and a loop through a second hub process (A's agent fronts one on
B, B's fronts A's) ends at the hop limit (`A2A-Hub-Hops`, A2A_MAX_HOPS) with an error, in well
under a second, instead of nesting calls without end.

B is a second web process started by the test on the same database (starting a second hub's
database costs minutes on a busy machine): each process knows only its own listening address
as the hub's, so for the guard B is another hub, and only the hop count ends the loop.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers import ROOT, wait_for_http
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

# Loopback is allow-listed, as for any test whose other servers run on 127.0.0.1: the hub
# itself is refused all the same.
SETTINGS = {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1", "A2A_MAX_HOPS": "8"}
MAKE_REMOTE = """
import django, sys; django.setup()
from agents.models import Agent
Agent.objects.update_or_create(slug=sys.argv[1], defaults=dict(
    name="Loop", description="fronts another agent", executor_kind="a2a-remote",
    executor_settings={"card_url": sys.argv[2], "timeout": 60}))
"""


@pytest.fixture(scope="module")
def two_hubs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hub, Hub]]:
    """A small hub (web process A, one worker) and web process B beside it."""
    with own_small_hub("loops", tmp_path_factory.mktemp("loops"), SETTINGS) as first:
        process, base = first.start_web("web-b")
        wait_for_http(f"{base}/agents/echo/.well-known/agent-card.json", process.popen)
        second = Hub(first.env, first.database_url, first.logs)
        second.web_a = base
        yield first, second


def card_of(hub: Hub, slug: str) -> str:
    return f"{hub.web_a}/agents/{slug}/.well-known/agent-card.json"


def make_remote(hub: Hub, slug: str, card_url: str) -> None:
    """Saved straight to the database: the forms would refuse a card on the hub itself."""
    command = [sys.executable, "-c", MAKE_REMOTE, slug, card_url]
    subprocess.run(command, cwd=ROOT, env=hub.env, check=True, timeout=60)


def send(hub: Hub, slug: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    response = httpx.post(f"{hub.web_a}/agents/{slug}/jsonrpc/", json=body, timeout=60,
                          headers={"A2A-Version": "1.0", **(headers or {})})  # fmt: skip
    answer: dict[str, Any] = response.json()
    return answer


def status_text(task: dict[str, Any]) -> str:
    parts = task["status"].get("message", {}).get("parts", [])
    return " ".join(part.get("text", "") for part in parts)


def test_an_agent_whose_card_is_its_own_hubs_fails_at_once_without_calling_it(
    two_hubs: tuple[Hub, Hub],
) -> None:
    hub, _ = two_hubs
    make_remote(hub, "mirror", card_of(hub, "mirror"))

    started = time.monotonic()
    task = send(hub, "mirror")["result"]["task"]

    assert time.monotonic() - started < 5
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "points at this hub itself" in status_text(task)
    # One task: the hub never called its own door.
    tasks = hub.query("SELECT count(*) FROM tasks_task t JOIN agents_agent a ON a.id = t.agent_id"
                      " WHERE a.slug = 'mirror'")  # fmt: skip
    assert tasks[0][0] == 1


def test_a_loop_through_a_second_hub_ends_at_the_hop_limit_in_under_a_second(
    two_hubs: tuple[Hub, Hub],
) -> None:
    first, second = two_hubs
    make_remote(first, "ping", card_of(second, "pong"))
    make_remote(second, "pong", card_of(first, "ping"))
    send(first, "ping")  # the first turn of each process warms its imports and connections
    timings = []
    for _ in range(3):
        before = count_tasks(first)
        started = time.monotonic()
        task = send(first, "ping")["result"]["task"]
        timings.append(time.monotonic() - started)

        assert task["status"]["state"] == "TASK_STATE_FAILED", task
        assert "A2A_MAX_HOPS" in status_text(task), status_text(task)
        # Hops 0 to 8 were accepted, nine tasks in all (one database); the tenth was refused.
        assert count_tasks(first) - before == 9
    # The best of three: the machine running the suite is shared, and one slow second there
    # says nothing of the loop (which, unbounded, would still be nesting after minutes).
    assert min(timings) < 1.0, f"the loop took {timings} s"
    assert max(timings) < 10.0, f"the loop took {timings} s"


def count_tasks(hub: Hub) -> int:
    return int(hub.query("SELECT count(*) FROM tasks_task")[0][0])


def test_a_request_past_the_hop_limit_is_refused_at_the_door(two_hubs: tuple[Hub, Hub]) -> None:
    hub, _ = two_hubs

    answer = send(hub, "echo", {"A2A-Hub-Hops": "9"})

    assert answer["error"]["code"] == -32600
    assert "passed through 9 hubs" in answer["error"]["message"]
    assert send(hub, "echo", {"A2A-Hub-Hops": "8"})["result"]
