"""ListTasks reads its pages through the indexes made for it (PostgreSQL): the plan of each
query, with sequential scans priced out, names the index that matches its filter and order, and
a deep page starts its index scan at the cursor instead of reading the newer tasks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from a2a.types import a2a_pb2 as pb
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import Agent
from agents.principals import Principal
from protocol.calls import Call
from protocol.handlers.tasks import list_page
from tasks.models import Task, TaskState
from tests.factories.versions import V1

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="plans of PostgreSQL"),
]

OWNERS = [f"apikey:{n}" for n in range(1, 6)]
STATES = [TaskState.COMPLETED] * 8 + [TaskState.FAILED, TaskState.INPUT_REQUIRED]


@pytest.fixture
def many_tasks(tck: Agent) -> Iterator[None]:
    """600 tasks of five callers, a second apart, in contexts of three, mostly completed;
    then fresh statistics, and sequential and bitmap scans priced out: at this size reading
    everything and sorting it would win, at a million the index's order does (bench/scale.py
    --explain shows those plans)."""
    start = timezone.now() - timedelta(days=1)
    Task.objects.bulk_create(
        Task(
            agent=tck, owner=OWNERS[n % 5], context_id=f"ctx-{n // 3}", state=STATES[n % 10],
            status_timestamp=start + timedelta(seconds=n + 1), protocol_version=V1,
            execution_mode="inline", created_at=start + timedelta(seconds=n),
            updated_at=start + timedelta(seconds=n + 1),
        )
        for n in range(600)
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{Task._meta.db_table}"')
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
    yield


def call_of(agent: Agent, owner: str) -> Call:
    return Call(agent=agent, principal=Principal(owner, owner), version=V1,
                base_url_of=lambda: "http://testserver")  # fmt: skip


def plans_of(agent: Agent, request: pb.ListTasksRequest) -> list[str]:
    """The plan of every query on tasks that one ListTasks page runs."""
    with CaptureQueriesContext(connection) as queries:
        list_page(call_of(agent, OWNERS[0]), request)
    plans = []
    for query in queries.captured_queries:
        if query["sql"].startswith("SELECT") and '"tasks_task"' in query["sql"].split("WHERE")[0]:
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN {query['sql']}")
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return plans


def test_the_first_page_reads_the_callers_index(tck: Agent, many_tasks: None) -> None:
    count, page = plans_of(tck, pb.ListTasksRequest())

    assert "Index Scan using task_list on" in page
    assert "Sort" not in page
    # The count stops at the limit, reading an index rather than the table (which index is
    # the planner's choice: the caller's, or the agent's with the owner filtered, depending
    # on the statistics and on how much of the table is all-visible).
    assert "Limit" in count
    assert "Seq Scan" not in count
    assert "Index Cond:" in count


def test_a_status_filter_reads_the_index_with_the_state(tck: Agent, many_tasks: None) -> None:
    plans = plans_of(tck, pb.ListTasksRequest(status=pb.TASK_STATE_INPUT_REQUIRED))

    assert all("task_list_state" in plan for plan in plans)


def test_a_context_filter_reads_the_context_index(tck: Agent, many_tasks: None) -> None:
    plans = plans_of(tck, pb.ListTasksRequest(context_id="ctx-60"))

    assert all("task_context" in plan for plan in plans)


def test_a_status_time_filter_is_a_range_of_the_callers_index(tck: Agent, many_tasks: None) -> None:
    request = pb.ListTasksRequest()
    newest = Task.objects.order_by("-status_timestamp").values_list("status_timestamp")[0][0]
    request.status_timestamp_after.FromDatetime(newest - timedelta(seconds=20))

    count, page = plans_of(tck, request)

    assert "Index Scan using task_list on" in page
    assert "Sort" not in page
    index_condition = next(line for line in page.split("\n") if "Index Cond" in line)
    assert "status_timestamp >=" in index_condition
    assert "Seq Scan" not in count


def test_a_deep_page_starts_its_scan_at_the_cursor(tck: Agent, many_tasks: None) -> None:
    first = list_page(call_of(tck, OWNERS[0]), pb.ListTasksRequest(page_size=50))

    (page,) = plans_of(tck, pb.ListTasksRequest(page_size=50, page_token=first.next_page_token))

    assert "Sort" not in page
    index_condition = next(line for line in page.split("\n") if "Index Cond" in line)
    assert "status_timestamp <=" in index_condition
