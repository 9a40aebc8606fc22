"""The dashboard stays fast however many tasks are stored: on PostgreSQL, a fixed number of
queries, each one either LIMITed or bounded in time, and each one able to use an index.

(Timing with a million tasks is for the bench scripts; here the shape of every query is
checked, which is what keeps its cost from growing with the tables.)
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from console import dashboard, rollup, rows
from tasks.models import TaskState
from tests.console.factories import finished_task, stuck_task, waiting_deliveries
from tests.factories.agents import make_agent
from tests.helpers import postgresql_only

pytestmark = [pytest.mark.django_db, postgresql_only("query plans are PostgreSQL's")]

# The tables that grow with traffic; a query on them must be bounded.
GROWING = ("tasks_task", "push_delivery", "console_finishedminute", "console_finishedhour")
MOST_QUERIES = 25


def busy_hub(name: str = "agent") -> None:
    """Agents with tasks in every state, old and new, rolled up and not, and webhooks."""
    agents = [make_agent(f"{name}-{n}") for n in range(4)]
    for n, agent in enumerate(agents):
        for state in (TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED):
            finished_task(agent, state, took=n + 0.5, minutes_ago=90 + n)
            finished_task(agent, state, took=n + 0.5, minutes_ago=20 + n)
        stuck_task(agent, minutes=30)
        task = finished_task(agent, minutes_ago=n)
        waiting_deliveries(task, f"https://hooks-{n}.example.com/in", pending=3, retrying=n)
    rollup.roll_up()
    finished_task(agents[0], TaskState.COMPLETED)  # after the rollup: from the live minutes


def gathered_queries() -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        dashboard.gather()
    return [query["sql"] for query in captured.captured_queries]


def bounded(sql: str) -> bool:
    """LIMITed, a range of a time column, or rows named by their primary keys."""
    keys = r"(\d+|'[0-9a-f]{32}'::uuid)"
    if " LIMIT " in sql or re.search(rf'\."id" IN \({keys}(, {keys})*\)', sql):
        return True
    times = r'"(updated_at|period_start|next_attempt_at)" (>=|<|<=|>) '
    return len(re.findall(times, sql)) >= 2 or bool(re.search(r'"period_start" = ', sql))


def plan(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def test_the_number_of_queries_does_not_grow_with_the_data() -> None:
    empty = gathered_queries()
    busy_hub("first")
    busy = gathered_queries()
    busy_hub("second")
    busier = gathered_queries()
    # (With no webhook queue at all, their configs are not looked up: one query less.)
    assert len(empty) <= len(busy) == len(busier) <= MOST_QUERIES


def test_every_query_on_a_growing_table_is_limited_or_time_bounded() -> None:
    busy_hub()
    growing = [sql for sql in gathered_queries() if any(t in sql for t in GROWING)]
    assert growing
    unbounded = [sql for sql in growing if not bounded(sql)]
    assert unbounded == []


def test_every_query_on_a_growing_table_can_use_an_index() -> None:
    # With sequential scans priced out, a plan still scanning a whole growing table has no
    # index to use for it.
    busy_hub()
    for sql in gathered_queries():
        if any(t in sql for t in GROWING):
            explained = plan(sql)
            for table in GROWING:
                assert f"Seq Scan on {table}" not in explained, f"{sql}\n{explained}"


def test_the_home_page_renders_in_a_bounded_number_of_queries(
    operator_client: Client, django_assert_max_num_queries: Any
) -> None:
    busy_hub()
    # The dashboard's, the admin's own (session, user, app list, recent actions), no more.
    with django_assert_max_num_queries(MOST_QUERIES + 8):
        response = operator_client.get(reverse("admin:index"))
    assert response.status_code == 200


def test_the_task_lists_look_at_each_tick_is_bounded_and_indexed() -> None:
    # What each web process with a task list open runs every tick, whatever the traffic.
    busy_hub()
    with CaptureQueriesContext(connection) as queries:
        changed = rows.changed_since(timezone.now() - timedelta(hours=1))
        rows.task_rows(changed, 20)
    assert changed
    growing = [q["sql"] for q in queries.captured_queries if "tasks_task" in q["sql"]]
    assert len(growing) == 4
    for sql in growing:
        assert bounded(sql) or re.search(r'"tasks_task"\."id" IN \(', sql), sql
        assert "Seq Scan on tasks_task" not in plan(sql), sql
