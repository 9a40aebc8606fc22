"""The operators' API on the real stack (PostgreSQL, Redis, a Celery worker): a staff user's
API key lists a running task of the demo's slow agent and cancels it; the cancel reaches the
worker that runs the turn, and the SDK client then reads the task canceled. The schema is
served by the running hub and validates."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Iterator

import httpx
import pytest
from a2a.types import Task, TaskState
from openapi_spec_validator import validate

from tests.factories.messages import user_message
from tests.integration.clients import a2a_client, read_task, send, wait_for_state
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    with own_small_hub("api", tmp_path_factory.mktemp("operators-api")) as running:
        yield running


def staff_key(hub: Hub) -> str:
    """A staff user and a hub-wide key of theirs, written as the admin would write them."""
    [(user_id,)] = hub.query(
        "INSERT INTO auth_user (username, password, is_staff, is_superuser, is_active, "
        "first_name, last_name, email, date_joined) "
        "VALUES ('ops', '!', true, true, true, '', '', '', now()) RETURNING id"
    )
    prefix = secrets.token_hex(6)
    raw = f"a2a_{prefix}_{secrets.token_urlsafe(32)}"
    hub.query(
        "INSERT INTO agents_apikey (name, owner_id, prefix, key_hash, scopes, created_at) "
        "VALUES (%s, %s, %s, %s, '[]', now()) RETURNING id",
        ("operations", user_id, prefix, hashlib.sha256(raw.encode()).hexdigest()),
    )
    return raw


def start_slow_task(hub: Hub) -> Task:
    async def scenario() -> Task:
        async with a2a_client(hub.web_a, "slow", "1.0") as client:
            started = await send(client, user_message("60"), immediately=True)
            return await wait_for_state(client, started.id, {TaskState.TASK_STATE_WORKING}, 15)

    return asyncio.run(scenario())


def test_a_staff_key_lists_and_cancels_a_running_task(hub: Hub) -> None:
    headers = {"Authorization": f"Bearer {staff_key(hub)}", "Accept": "application/json"}
    api = f"{hub.web_a}/api"
    started = start_slow_task(hub)
    worker = hub.process_running(started.id)
    assert worker is not None and worker.name.startswith("worker")

    listed = httpx.get(f"{api}/tasks?agent=slow&state=working", headers=headers, timeout=10)
    assert listed.status_code == 200, listed.text
    assert [t["id"] for t in listed.json()["results"]] == [started.id]
    assert httpx.get(f"{api}/tasks", timeout=10).status_code == 401

    canceled = httpx.post(f"{api}/tasks/{started.id}/cancel", headers=headers, timeout=10)
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["state"] == "canceled"
    # The cancel reached the worker through Redis: it stopped the turn, not just the row.
    hub.wait_for_log(worker, f"task {started.id} stopped", timeout=10)
    task = asyncio.run(read_task(hub.web_a, "slow", "1.0", started.id))
    assert task.status.state == TaskState.TASK_STATE_CANCELED

    again = httpx.post(f"{api}/tasks/{started.id}/cancel", headers=headers, timeout=10)
    assert again.status_code == 409


def test_the_running_hub_serves_a_valid_schema(hub: Hub) -> None:
    schema = httpx.get(f"{hub.web_a}/api/schema/", timeout=30)
    assert schema.status_code == 200
    validate(schema.json())
