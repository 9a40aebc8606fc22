"""A webhook receiver that is down for a long outage, seen from the receiver once it is back:
every event of every config arrives after it returns, in order per config, each exactly once
per `webhook-id`.

The outage is time-compressed: retries start 0.1 s apart and back off to a 1 s cap (the
operator's PUSH_RETRY_BASE_SECONDS and PUSH_RETRY_MAX_SECONDS), and it lasts until every queue
has failed often enough to reach that cap. The receiver refuses connections (its port is
closed) or answers 503 meanwhile.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import NON_BLOCKING
from tests.factories.push import create_params, send_params, webhook
from tests.factories.versions import V03, V1, VERSIONS
from tests.helpers import eventually
from tests.integration.stack import Hub, hub_of_its_own
from tests.protocol.answers import TERMINAL
from tests.push.receiver import Behaviour, Received, Receiver
from tests.streaming.sse import call, payload

pytestmark = pytest.mark.integration

OUTAGE_ENV = {
    # The receiver runs on loopback, which webhooks may not reach unless allow-listed.
    "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
    "PUSH_RETRY_BASE_SECONDS": "0.1",
    "PUSH_RETRY_MAX_SECONDS": "1",
}
# Failed attempts of each queue's first delivery before the receiver comes back: the backoff
# (0.1, 0.2, 0.4, 0.8, then 1 s) has been at its cap for a few of them.
OUTAGE_ATTEMPTS = 8
OUTAGE_TIMEOUT = 40.0
CATCH_UP_TIMEOUT = 30.0
# The conformance agent's scenarios, chosen by the message id's prefix.
CHUNKED = "tck-stream-artifact-chunked"  # working, two artifact chunks, completed
LONG = "test-resubscribe-message-id"  # progress every 0.5 s for 4 s
QUEUES = 3 * len(VERSIONS)  # per version: the quick task's config, the long one's two


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The session hub's recipe (see conftest.py) with compressed retries and loopback
    webhooks; named `hub` so a failing test's report carries the hub's process logs."""
    root = tmp_path_factory.mktemp("outage-hub")
    with hub_of_its_own("a2ahub_outage", root, OUTAGE_ENV) as running:
        yield running


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver()
    yield started
    started.down()


@dataclass
class Outage:
    """How the receiver is away, and how it comes back."""

    kind: str

    def begin(self, receiver: Receiver) -> None:
        if self.kind == "refused":
            receiver.down()
        else:
            receiver.behaviour = Behaviour(status=503)

    def end(self, receiver: Receiver) -> None:
        if self.kind == "refused":
            receiver.up()  # the same port: the configs' URLs hold it
        else:
            receiver.behaviour = Behaviour()


@dataclass
class Row:
    """One delivery as the hub stored it."""

    id: str
    path: str
    sequence: int
    state: str
    attempts: int
    task_id: str


def deliveries(hub: Hub, receiver: Receiver) -> list[Row]:
    rows = hub.query(
        "SELECT d.id, c.url, d.sequence, d.state, d.attempts, c.task_id FROM push_delivery d "
        "JOIN push_pushnotificationconfig c ON c.id = d.config_id "
        "WHERE c.url LIKE %s ORDER BY c.url, d.sequence",
        (f"{receiver.url}/%",),
    )
    prefix = len(receiver.url) - len("/webhook")
    return [Row(str(i), url[prefix:], s, st, a, str(t)) for i, url, s, st, a, t in rows]


def by_path(rows: list[Row]) -> dict[str, list[Row]]:
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        grouped.setdefault(row.path, []).append(row)
    return grouped


def start_tasks(http: httpx.Client, receiver: Receiver) -> list[str]:
    """Per version: a quick task with a webhook, and a long one with two (one given with the
    send, one added while it works, in the other version)."""
    task_ids = []
    for version in VERSIONS:
        quick = tck_params(version, CHUNKED, webhook(version, f"{receiver.url}/{version}-quick"))
        task_ids.append(payload(call(http, "tck", version, "send", quick)["result"], version)["id"])
        long = tck_params(version, LONG, webhook(version, f"{receiver.url}/{version}-long"))
        long["configuration"] |= NON_BLOCKING[version]
        task_id = payload(call(http, "tck", version, "send", long)["result"], version)["id"]
        other = V03 if version == V1 else V1
        added = webhook(other, f"{receiver.url}/{version}-long-added")
        assert "result" in call(
            http, "tck", other, "create_config", create_params(other, task_id, added)
        )
        task_ids.append(task_id)
    return task_ids


def tck_params(version: str, scenario: str, push: dict[str, Any]) -> dict[str, Any]:
    params = send_params(version, "push, please", push)
    params["message"]["messageId"] = f"{scenario}-{uuid.uuid4().hex}"
    return params


def states(hub: Hub, task_ids: list[str]) -> list[str]:
    rows = hub.query("SELECT state FROM tasks_task WHERE id::text = ANY(%s)", (task_ids,))
    return [state for (state,) in rows]


def long_outage_passed(hub: Hub, receiver: Receiver, task_ids: list[str]) -> bool:
    """Every task has ended and every queue's head has failed OUTAGE_ATTEMPTS times."""
    if not set(states(hub, task_ids)) <= TERMINAL:
        return False
    queues = by_path(deliveries(hub, receiver))
    return len(queues) == QUEUES and all(q[0].attempts >= OUTAGE_ATTEMPTS for q in queues.values())


def all_delivered(hub: Hub, receiver: Receiver) -> bool:
    return all(row.state == "delivered" for row in deliveries(hub, receiver))


def stored_events(hub: Hub, task_id: str) -> dict[int, Any]:
    rows = hub.query("SELECT sequence, payload FROM tasks_taskevent WHERE task_id = %s", (task_id,))
    return dict(rows)


def assert_once_in_order(hub: Hub, rows: list[Row], got: list[Received], back: float) -> None:
    """One config's queue, as its receiver saw it once it was back."""
    sequence_of = {row.id: row.sequence for row in rows}
    events = stored_events(hub, rows[0].task_id)
    assert [row.sequence for row in rows] == list(range(rows[0].sequence, max(events) + 1))
    assert all(row.state == "delivered" for row in rows)
    assert all(r.at >= back for r in got), "a delivery was accepted during the outage"
    webhook_ids = [r.header("webhook-id") for r in got]
    assert set(webhook_ids) <= set(sequence_of), "a request with a webhook-id of no delivery"
    arrived = [sequence_of[i] for i in webhook_ids]
    # Duplicates (at least once) repeat the one in flight; they never reorder the queue.
    assert arrived == sorted(arrived)
    deduplicated = [sequence_of[i] for i in dict.fromkeys(webhook_ids)]
    assert deduplicated == [row.sequence for row in rows]
    for request in got:
        body = request.json()
        if "kind" in body:  # a 0.3 config: the task as it was when the delivery went out
            assert (body["kind"], body["id"]) == ("task", rows[0].task_id)
        else:  # a 1.0 config: the event itself
            assert body == events[sequence_of[request.header("webhook-id")]]


@pytest.mark.parametrize("outage", [Outage("refused"), Outage("503")], ids=lambda o: o.kind)
def test_every_event_reaches_a_receiver_after_a_long_outage_once_per_webhook_id_in_order(
    hub: Hub, receiver: Receiver, outage: Outage
) -> None:
    """Guarantee: deliveries outlast a receiver's outage (connections refused, or 503) of many
    retries: once it is back, each config gets every one of its task's events from its
    creation on, in order, and deduplicating by webhook-id leaves each event exactly once."""
    outage.begin(receiver)
    with httpx.Client(base_url=hub.web_a, timeout=30) as http:
        task_ids = start_tasks(http, receiver)
    assert eventually(lambda: long_outage_passed(hub, receiver, task_ids), OUTAGE_TIMEOUT, 0.2)
    assert states(hub, task_ids) == ["completed"] * len(task_ids)

    back = time.monotonic()
    outage.end(receiver)
    assert eventually(lambda: all_delivered(hub, receiver), CATCH_UP_TIMEOUT, 0.2)

    accepted = receiver.accepted()
    queues = by_path(deliveries(hub, receiver))
    assert len(queues) == QUEUES
    for path, rows in queues.items():
        assert_once_in_order(hub, rows, [r for r in accepted if r.path == path], back)
        if not path.endswith("-added"):
            assert rows[0].sequence == 1  # given with the send: the whole task
