"""`/metrics` in Prometheus text: requests counted by agent, method, version, binding and code
through both bindings, their latency, open tasks and webhook queues; served only to the
allowed networks and, when a token is set, to its bearer."""

from __future__ import annotations

import ipaddress
import json
import uuid

import pytest

from agents.models import Agent
from push.models import Delivery, DeliveryState, PushNotificationConfig
from tasks.models import TaskEvent
from tests.door_client import Door
from tests.factories.agents import make_agent
from tests.factories.envelopes import UNKNOWN_TASK
from tests.factories.tasks import open_task
from tests.factories.versions import V1
from tests.operations.metered import sample
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db

REQUESTS = "a2ahub_requests_total"


@pytest.fixture
def metered(door: Door) -> Agent:
    return make_agent("metered")


def scrape(door: Door) -> str:
    response = door.get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return response.content.decode()


def message(text: str) -> dict[str, object]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


def rest_post(path: str, body: object) -> int:
    response = Door().post(
        f"/agents/metered/rest/{path}", json.dumps(body),
        content_type="application/a2a+json", headers={"A2A-Version": V1},
    )  # fmt: skip
    return int(response.status_code)


def test_requests_through_both_bindings_are_counted_exactly(door: Door, metered: Agent) -> None:
    before = scrape(door)
    caller = Caller(None)
    caller.send("metered", V1)
    caller.send("metered", V1)
    assert rest_post("message:send", {"message": message("hi")}) == 200
    assert Door().get(f"/agents/metered/rest/tasks/{UNKNOWN_TASK}",
                      headers={"A2A-Version": V1}).status_code == 404  # fmt: skip
    after = scrape(door)

    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    rpc = {"agent": "metered", "method": "SendMessage", "version": "1.0", "binding": "jsonrpc"}
    assert moved(REQUESTS, **rpc, code="ok") == 2
    rest = {"agent": "metered", "version": "1.0", "binding": "rest"}
    assert moved(REQUESTS, **rest, method="SendMessage", code="200") == 1
    assert moved(REQUESTS, **rest, method="GetTask", code="404") == 1
    assert moved("a2ahub_request_seconds_count", binding="jsonrpc", method="SendMessage") == 2
    assert moved("a2ahub_request_seconds_count", binding="rest", method="SendMessage") == 1


def test_a_json_rpc_error_is_counted_under_its_code(door: Door, metered: Agent) -> None:
    before = scrape(door)
    Caller(None).rpc("metered", V1, "get", {"id": UNKNOWN_TASK})
    labels = {"agent": "metered", "method": "GetTask", "version": "1.0", "binding": "jsonrpc"}
    assert (
        sample(scrape(door), REQUESTS, **labels, code="-32001")
        - sample(before, REQUESTS, **labels, code="-32001")
        == 1
    )


def test_a_method_nobody_defined_is_counted_as_unknown(door: Door, metered: Agent) -> None:
    before = scrape(door)
    body = {"jsonrpc": "2.0", "id": 1, "method": "made/up/by/a/client", "params": {}}
    Caller(None).post("metered", body, V1)
    labels = {"agent": "metered", "method": "unknown", "version": "1.0", "binding": "jsonrpc",
              "code": "-32601"}  # fmt: skip
    assert sample(scrape(door), REQUESTS, **labels) - sample(before, REQUESTS, **labels) == 1
    assert "made/up" not in scrape(door)


def test_open_tasks_and_webhook_queues_are_gauges(door: Door, metered: Agent) -> None:
    task = open_task(metered)
    config = PushNotificationConfig.objects.create(task=task, config_id="c", url="https://x.test/")
    event = TaskEvent.objects.filter(task=task).first()
    assert event is not None
    common = {"config": config, "event": event, "next_attempt_at": task.created_at}
    Delivery.objects.create(sequence=1, attempts=0, **common)
    Delivery.objects.create(sequence=2, attempts=3, **common)
    Delivery.objects.create(sequence=3, state=DeliveryState.ABANDONED, **common)
    text = scrape(door)
    assert sample(text, "a2ahub_open_tasks", state=task.state) == 1
    assert sample(text, "a2ahub_open_tasks", state="input-required") == 0
    assert sample(text, "a2ahub_push_deliveries", state="pending") == 2
    assert sample(text, "a2ahub_push_deliveries", state="retrying") == 1
    assert sample(text, "a2ahub_push_deliveries", state="abandoned") == 1


def test_metrics_needs_the_token_when_one_is_set(
    door: Door, settings: pytest.FixtureRequest
) -> None:
    settings.METRICS_TOKEN = "scrape-secret"
    refused = door.get("/metrics")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")
    wrong = door.get("/metrics", headers={"Authorization": "Bearer guessed"})
    assert wrong.status_code == 401
    right = door.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
    assert right.status_code == 200
    assert "a2ahub_requests" in right.content.decode()


def test_metrics_refuses_an_address_outside_the_allowed_networks(
    door: Door, settings: pytest.FixtureRequest
) -> None:
    settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.0.0.0/8")]
    assert door.get("/metrics").status_code == 403
    assert door.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
