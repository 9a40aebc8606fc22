"""Scaling out: two hubs' worth of processes (four web processes, four Celery workers and two
Celery beats, each sending the periodic sweeps) on one PostgreSQL database and one Redis. Sends
spread over every web process; the workers of both halves take turns; no task runs twice and no
webhook is delivered twice, although two beats sweep the same delivery queues."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import ROOT, wait_for_http
from tests.integration.stack import Hub, hub_of_its_own
from tests.push.receiver import Behaviour, Receiver

pytestmark = pytest.mark.integration

AGENT = "scaled-out"
TASKS = 48
SETTINGS = {
    "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
    "PUSH_RETRY_BASE_SECONDS": "0.2",
    "PUSH_RETRY_MAX_SECONDS": "1",
    "PUSH_LEASE_SECONDS": "5",
}
# A worker-mode agent with push on: its turns run in the Celery workers, not the web processes.
MAKE_AGENT = f"""
import django; django.setup()
from agents.models import Agent
Agent.objects.update_or_create(slug="{AGENT}", defaults=dict(
    name="Scaled out", description="slow executor in worker mode", executor_kind="slow",
    execution_mode="worker", push_notifications=True))
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The usual hub (two web processes, two workers, beat), then a second hub's processes
    against the same database and Redis: two more web processes, two more workers, a second
    beat."""
    with hub_of_its_own("a2ahub_two", tmp_path_factory.mktemp("two-hubs"), SETTINGS) as first:
        subprocess.run(
            [sys.executable, "-c", MAKE_AGENT], cwd=ROOT, env=first.env, check=True, timeout=60
        )
        second = [first.start_web("web-c"), first.start_web("web-d")]
        workers = [first.start_worker("worker3"), first.start_worker("worker4")]
        first.spawn("beat-2", [sys.executable, "-m", "celery", "-A", "a2ahub", "beat"])
        for process, base in second:
            wait_for_http(f"{base}/agents/echo/.well-known/agent-card.json", process.popen)
        for worker in workers:
            first.wait_for_worker(worker)
        first.more_web = [base for _, base in second]
        yield first


def send(base: str, webhook: str) -> str:
    """A send that returns at once, with an inline webhook; the task's id."""
    params: dict[str, Any] = {
        "message": wire_message(V1, "0"),
        "configuration": {
            "returnImmediately": True,
            "taskPushNotificationConfig": {"url": webhook},
        },
    }
    response = httpx.post(
        f"{base}/agents/{AGENT}/jsonrpc/",
        json=rpc_body(V1, "send", params),
        headers={"A2A-Version": V1},
        timeout=30,
    )
    answer = response.json()
    assert "result" in answer, answer
    return str(answer["result"]["task"]["id"])


def wait_until_done(hub: Hub, task_ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        rows = hub.query(
            "SELECT count(*) FILTER (WHERE t.state <> 'completed'), "
            "(SELECT count(*) FROM push_delivery d JOIN push_pushnotificationconfig c "
            " ON c.id = d.config_id WHERE c.task_id = ANY(%s::uuid[]) AND d.state <> 'delivered') "
            "FROM tasks_task t WHERE t.id = ANY(%s::uuid[])",
            (task_ids, task_ids),
        )
        unfinished, undelivered = rows[0]
        if unfinished == 0 and undelivered == 0:
            return
        assert time.monotonic() < deadline, (
            f"{unfinished} tasks unfinished, {undelivered} deliveries pending after {timeout}s"
        )
        time.sleep(0.25)


def test_two_hubs_on_one_database_run_each_task_and_deliver_each_webhook_once(hub: Hub) -> None:
    receiver = Receiver(Behaviour())
    bases = [hub.web_a, hub.web_b, *hub.more_web]
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            task_ids = list(pool.map(lambda n: send(bases[n % 4], receiver.url), range(TASKS)))
        wait_until_done(hub, task_ids, timeout=90)

        deliveries = hub.query(
            "SELECT d.id::text, d.attempts, "
            " (SELECT count(*) FROM push_deliveryattempt a WHERE a.delivery_id = d.id) "
            "FROM push_delivery d JOIN push_pushnotificationconfig c ON c.id = d.config_id "
            "WHERE c.task_id = ANY(%s::uuid[])",
            (task_ids,),
        )
        received = receiver.wait_for(len(deliveries))
        assert receiver.stays_at(len(deliveries), seconds=2.0), "a webhook came twice"
    finally:
        receiver.down()

    # Each turn ran once: the same request leaves the same events on every task.
    events = hub.query(
        "SELECT t.id::text, t.last_sequence, count(e.id), "
        " count(*) FILTER (WHERE e.payload::text LIKE '%%TASK_STATE_COMPLETED%%') "
        "FROM tasks_task t JOIN tasks_taskevent e ON e.task_id = t.id "
        "WHERE t.id = ANY(%s::uuid[]) GROUP BY t.id, t.last_sequence",
        (task_ids,),
    )
    assert len(events) == TASKS
    assert len({(last, count) for _, last, count, _ in events}) == 1, events
    assert all(last == count and completed == 1 for _, last, count, completed in events)

    # Each delivery went out once, with one attempt recorded, and arrived once.
    assert len(deliveries) == TASKS * events[0][1]
    twice = [row for row in deliveries if row[1:] != (1, 1)]
    assert not twice, twice
    arrivals = Counter(r.header("webhook-id") for r in received)
    assert set(arrivals) == {delivery_id for delivery_id, _, _ in deliveries}
    assert set(arrivals.values()) == {1}

    # Both halves did the work: turns ran on workers of the first hub and of the second.
    runners = {str(row[0]) for row in hub.query(
        "SELECT DISTINCT runner FROM tasks_task WHERE id = ANY(%s::uuid[])", (task_ids,)
    )}  # fmt: skip
    ran = {p.name for p in hub.workers if any(r.endswith(f":{p.pid}") for r in runners)}
    assert ran & {"worker1", "worker2"} and ran & {"worker3", "worker4"}, ran
