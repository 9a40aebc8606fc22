"""ListTasks over many tasks: cursor pages hold every task once (tasks updated at the same
instant too), with filters and deep in the listing; `totalSize` is exact up to
A2A_LIST_EXACT_TOTAL_LIMIT and PostgreSQL's estimate past it, told on the first page and carried
by the token; a page costs the same number of queries whatever its size."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import Agent
from tasks.models import Task, TaskState
from tests.factories.errors import invalid_params
from tests.factories.tasks import ended, open_task
from tests.factories.versions import V1
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's planner makes the estimate"
)


def listed(caller: Caller, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = caller.result("tck", V1, "list", params)
    return result


def ids(result: dict[str, Any]) -> list[str]:
    return [task["id"] for task in result.get("tasks", [])]


def walk(caller: Caller, **params: Any) -> list[dict[str, Any]]:
    """Every page of one listing, following the tokens."""
    pages = [listed(caller, **params)]
    while pages[-1]["nextPageToken"]:
        pages.append(listed(caller, **params, pageToken=pages[-1]["nextPageToken"]))
    return pages


def stored(agent: Agent, owner: str, count: int, **fields: Any) -> list[Task]:
    return [open_task(agent, owner=owner, **fields) for _ in range(count)]


def newest_first(tasks: list[Task]) -> list[str]:
    """The listing's order worked out here: status time, then id, both descending."""
    ordered = sorted(tasks, key=lambda t: (t.status_timestamp, uuid.UUID(str(t.id))), reverse=True)
    return [str(t.id) for t in ordered]


def made_at(tasks: list[Task], when: Any) -> list[Task]:
    # Test setup only: tasks whose status changed in the same instant, as on a busy hub.
    Task.objects.filter(id__in=[t.id for t in tasks]).update(status_timestamp=when)
    return list(Task.objects.filter(id__in=[t.id for t in tasks]))


def token(*fields: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(fields)).encode()).decode()


# Pages hold every task once.


def test_tasks_updated_at_the_same_instant_are_each_listed_once(caller: Caller, tck: Agent) -> None:
    now = timezone.now()
    tasks = made_at(stored(tck, caller.principal, 9), now)
    tasks += made_at(stored(tck, caller.principal, 2), now - timedelta(seconds=1))
    tasks += made_at(stored(tck, caller.principal, 2), now + timedelta(seconds=1))

    pages = walk(caller, pageSize=4)

    assert [len(ids(page)) for page in pages] == [4, 4, 4, 1]
    assert [task for page in pages for task in ids(page)] == newest_first(tasks)


def test_a_filtered_listing_pages_through_its_own_tasks_only(caller: Caller, tck: Agent) -> None:
    now = timezone.now()
    done = made_at([open_task(tck, ended(), caller.principal, "ctx-a") for _ in range(5)], now)
    failed = [open_task(tck, ended(TaskState.FAILED), caller.principal, "ctx-a") for _ in range(2)]
    elsewhere = [open_task(tck, ended(), caller.principal, "ctx-b") for _ in range(3)]

    by_state = walk(caller, status="TASK_STATE_COMPLETED", pageSize=2)
    by_context = walk(caller, contextId="ctx-a", pageSize=3)

    assert [t for page in by_state for t in ids(page)] == newest_first(done + elsewhere)
    assert [t for page in by_context for t in ids(page)] == newest_first(done + failed)
    assert {page["totalSize"] for page in by_state} == {8}
    assert {page["totalSize"] for page in by_context} == {7}


def test_a_token_many_pages_deep_goes_on_where_its_page_ended(caller: Caller, tck: Agent) -> None:
    tasks = made_at(stored(tck, caller.principal, 45), timezone.now())

    pages = walk(caller, pageSize=2)

    assert len(pages) == 23
    assert ids(pages[20]) == newest_first(tasks)[40:42]
    assert listed(caller, pageSize=2, pageToken=pages[19]["nextPageToken"]) == pages[20]
    assert [t for page in pages for t in ids(page)] == newest_first(tasks)


def test_a_token_from_before_the_size_was_carried_still_pages(caller: Caller, tck: Agent) -> None:
    tasks = newest_first(stored(tck, caller.principal, 3))
    first = Task.objects.get(id=tasks[0])

    older = listed(caller, pageToken=token(first.status_timestamp.isoformat(), tasks[0]))

    assert ids(older) == tasks[1:]
    assert older["totalSize"] == 3


@pytest.mark.parametrize(
    "fields",
    [
        ("2026-11-24T10:00:00+00:00", str(uuid.uuid4()), -1),
        ("2026-11-24T10:00:00+00:00", str(uuid.uuid4()), "many"),
        ("2026-11-24T10:00:00+00:00", str(uuid.uuid4()), 3, 4),
        ("2026-11-24T10:00:00", str(uuid.uuid4()), 3),
        ("2026-11-24T10:00:00+00:00", "not-an-id", 3),
    ],
)
def test_it_refuses_a_token_it_could_not_have_issued(
    caller: Caller, tck: Agent, fields: tuple[Any, ...]
) -> None:
    error = caller.error("tck", V1, "list", {"pageToken": token(*fields)})

    assert error == invalid_params(V1, "pageToken", "is not a token this server issued")


# totalSize.


def test_the_size_is_exact_up_to_the_limit(caller: Caller, tck: Agent, settings: Any) -> None:
    settings.A2A_LIST_EXACT_TOTAL_LIMIT = 5
    stored(tck, caller.principal, 5)

    assert listed(caller, pageSize=2)["totalSize"] == 5


def test_the_first_pages_size_is_carried_to_the_later_pages(
    caller: Caller, tck: Agent, settings: Any
) -> None:
    stored(tck, caller.principal, 6)
    first = listed(caller, pageSize=2)

    stored(tck, caller.principal, 3)
    second = listed(caller, pageSize=2, pageToken=first["nextPageToken"])

    assert first["totalSize"] == second["totalSize"] == 6
    assert listed(caller, pageSize=2)["totalSize"] == 9


@on_postgresql
def test_past_the_limit_the_size_is_the_planners_estimate(
    caller: Caller, stranger: Caller, tck: Agent, settings: Any
) -> None:
    settings.A2A_LIST_EXACT_TOTAL_LIMIT = 5
    stored(tck, caller.principal, 12)
    stored(tck, stranger.principal, 4)
    analyze_tasks()

    first = listed(caller, pageSize=5)
    second = listed(caller, pageSize=5, pageToken=first["nextPageToken"])

    assert first["totalSize"] == second["totalSize"] == 12


@on_postgresql
def test_past_the_limit_the_size_is_never_below_what_was_counted(
    caller: Caller, stranger: Caller, tck: Agent, settings: Any
) -> None:
    settings.A2A_LIST_EXACT_TOTAL_LIMIT = 5
    stored(tck, stranger.principal, 4)
    analyze_tasks()  # statistics from before the caller had any task: an estimate of ~0
    stored(tck, caller.principal, 12)

    assert listed(caller)["totalSize"] == 6


@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL estimates instead")
def test_past_the_limit_a_database_with_no_estimate_counts_exactly(
    caller: Caller, tck: Agent, settings: Any
) -> None:
    settings.A2A_LIST_EXACT_TOTAL_LIMIT = 5
    stored(tck, caller.principal, 12)

    assert listed(caller)["totalSize"] == 12


def analyze_tasks() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{Task._meta.db_table}"')


# Queries.


def test_a_page_costs_the_same_queries_whatever_its_size(caller: Caller, tck: Agent) -> None:
    for _ in range(12):
        caller.send("tck", V1, message={"messageId": f"tck-artifact-text-{uuid.uuid4()}"})
    asked = {"historyLength": 3, "includeArtifacts": True}

    small, small_deep = queries_of(caller, pageSize=2, **asked)
    large, large_deep = queries_of(caller, pageSize=10, **asked)

    assert small == large
    assert small_deep == large_deep
    assert large <= 8


def queries_of(caller: Caller, **params: Any) -> tuple[int, int]:
    """The queries of a first page, and of the page its token leads to."""
    with CaptureQueriesContext(connection) as first:
        page = listed(caller, **params)
    assert len(page["tasks"]) == params["pageSize"]
    assert all(task["artifacts"] and task["history"] for task in page["tasks"])
    with CaptureQueriesContext(connection) as deep:
        listed(caller, **params, pageToken=page["nextPageToken"])
    return len(first.captured_queries), len(deep.captured_queries)
