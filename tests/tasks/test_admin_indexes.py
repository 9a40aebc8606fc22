"""The admin's task list reads its pages through the indexes made for it (PostgreSQL): with
sequential and bitmap scans priced out, the plan of each page, filter and search names the
index that serves it, and none sorts the table."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from push.models import Delivery, DeliveryState, PushNotificationConfig
from tasks.models import Binding, Task, TaskEvent
from tests.factories.agents import make_agent
from tests.factories.versions import V03, V1

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="plans of PostgreSQL"),
]


@pytest.fixture
def agents(db: None) -> list[Agent]:
    return [make_agent(f"agent-{n}") for n in range(2)]


@pytest.fixture
def many_tasks(agents: list[Agent]) -> Iterator[list[Task]]:
    """3,000 tasks, a second apart, most of the first agent, one in twenty of the second: a
    tenth came through 0.3, a seventh through HTTP+JSON, one in a hundred from a pre-0.2
    client that named it."""
    start = timezone.now() - timedelta(days=1)
    tasks = Task.objects.bulk_create(
        Task(
            agent=agents[1 if n % 20 == 0 else 0], owner=f"apikey:{n % 7}", context_id=f"ctx-{n}",
            client_id=f"order-{n}" if n % 100 == 0 else "", state="completed",
            status_timestamp=start, protocol_version=V03 if n % 10 == 0 else V1,
            binding=Binding.HTTP_JSON if n % 7 == 0 else Binding.JSONRPC,
            execution_mode="inline", created_at=start + timedelta(seconds=n), updated_at=start,
        )
        for n in range(3000)
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{Task._meta.db_table}"')
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
    yield tasks


PAGE_ORDER = 'ORDER BY "tasks_task"."created_at" DESC, "tasks_task"."id" DESC'


def page_plan(client: Client, **params: str) -> str:
    """The plan of the query that reads the page of tasks shown."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("admin:tasks_task_changelist"), params)
    assert response.status_code == 200
    (sql,) = [q["sql"] for q in queries.captured_queries if PAGE_ORDER in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize(
    ("params", "index"),
    [
        ({}, "task_newest"),
        ({"protocol_version__exact": V03}, "task_other_versions"),
        ({"binding__exact": Binding.HTTP_JSON}, "task_other_bindings"),
    ],
)
def test_the_list_and_its_filters_read_an_index_in_the_lists_order(
    operator_client: Client, many_tasks: list[Task], params: dict[str, str], index: str
) -> None:
    plan = page_plan(operator_client, **params)

    assert f"Index Scan using {index} on" in plan
    assert "Sort" not in plan


def test_the_agent_filter_reads_the_agents_index(
    operator_client: Client, many_tasks: list[Task], agents: list[Agent]
) -> None:
    plan = page_plan(operator_client, agent__id__exact=str(agents[1].pk))

    assert "Index Scan using task_agent_newest on" in plan
    assert "Sort" not in plan


@pytest.mark.parametrize(
    ("term", "index"),
    [
        (lambda tasks: str(tasks[5].id)[:8], "tasks_task_pkey"),
        (lambda tasks: "ctx-12", "task_context"),
        (lambda tasks: "order-3", "task_client_id_search"),
    ],
)
def test_the_search_reads_an_index_for_each_thing_it_finds(
    operator_client: Client, many_tasks: list[Task], term: Any, index: str
) -> None:
    with connection.cursor() as cursor:
        # Only the search's own indexes can narrow it down: the ordered scan is out too.
        cursor.execute("SET LOCAL enable_bitmapscan = on")
        cursor.execute("SET LOCAL enable_indexscan = off")

    plan = page_plan(operator_client, q=term(many_tasks))

    assert f"Bitmap Index Scan on {index}" in plan
    assert "Seq Scan" not in plan


def test_the_delivery_list_reads_the_due_index_in_its_order(
    operator_client: Client, many_tasks: list[Task]
) -> None:
    """Pending first, then the others, latest due first: a backward scan of `delivery_due`,
    whatever the number of deliveries."""
    event = TaskEvent.objects.create(
        task=many_tasks[0], sequence=1, kind="status", payload={}, created_at=timezone.now()
    )
    config = PushNotificationConfig.objects.create(
        task=many_tasks[0], config_id="hook", url="https://receiver.example.com/hook",
        protocol_version=V1,
    )  # fmt: skip
    start = timezone.now() - timedelta(days=1)
    Delivery.objects.bulk_create(
        Delivery(config=config, event=event, sequence=1, attempts=1,
                 state=DeliveryState.PENDING if n % 50 == 0 else DeliveryState.DELIVERED,
                 next_attempt_at=start + timedelta(seconds=n))
        for n in range(3000)
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{Delivery._meta.db_table}"')

    with CaptureQueriesContext(connection) as queries:
        response = operator_client.get(reverse("admin:push_delivery_changelist"))
    assert response.status_code == 200
    (sql,) = [
        q["sql"] for q in queries.captured_queries if 'ORDER BY "push_delivery"."state"' in q["sql"]
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "Index Scan Backward using delivery_due on" in plan
    # The primary key breaks ties among deliveries due at the same instant: a sort of those
    # few, never of the table.
    assert "Seq Scan" not in plan
    assert "Sort" not in plan or "Incremental Sort" in plan
