"""The task and push lists of the admin as they stay fast on big tables: the count stops at
10,000 and says "10,000+", the search finds exact values and beginnings (and says so), the
filters list their choices without reading the tasks, and the push lists count deliveries
for the page shown only."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from push.models import DeliveryState
from tasks import writer
from tasks.admin import SEARCH_HELP
from tasks.changes import NewTask
from tasks.models import Binding, Task
from tests.factories.messages import user_message
from tests.factories.push import stored_delivery
from tests.factories.tasks import ended, open_task
from tests.factories.versions import V03, V1

pytestmark = pytest.mark.django_db

TASKS = "admin:tasks_task_changelist"


def changelist(client: Client, **params: str) -> set[Task]:
    response = client.get(reverse(TASKS), params)
    assert response.status_code == 200
    return set(response.context["cl"].result_list)


def old_client_task(agent: Agent, client_id: str) -> Task:
    """A task of a pre-0.2 client, which named it itself."""
    spec = NewTask(agent_id=agent.pk, owner="apikey:3", context_id="conversation-9",
                   message=user_message("hi"), protocol_version="0.1",
                   execution_mode="inline", client_id=client_id)  # fmt: skip
    async_to_sync(writer.open)(spec)
    return Task.objects.get(id=spec.id)


# The count.


def test_past_ten_thousand_tasks_the_list_says_so_without_counting_them_all(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("busy")
    now = timezone.now()
    Task.objects.bulk_create(
        Task(agent=agent, owner="apikey:1", context_id=f"ctx-{n}", state="completed",
             status_timestamp=now, protocol_version=V1, execution_mode="inline",
             created_at=now - timedelta(seconds=n), updated_at=now)
        for n in range(10_001)
    )  # fmt: skip

    with CaptureQueriesContext(connection) as queries:
        response = operator_client.get(reverse(TASKS))

    page = response.content.decode()
    assert len(response.context["cl"].result_list) == 100
    assert re.search(r"10,000\+\s+tasks", page)
    assert "Select all 10,000+ tasks" in page
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"]]
    assert counts and all("LIMIT 10001" in sql for sql in counts)


def test_below_ten_thousand_the_list_gives_the_exact_number(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("quiet")
    for _ in range(3):
        open_task(agent)

    page = operator_client.get(reverse(TASKS)).content.decode()

    assert re.search(r"\b3\s+tasks", page)


# The search.


def test_the_search_finds_a_task_by_the_beginning_of_its_id(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("searched")
    task, other = open_task(agent), open_task(agent)

    shown = str(task.id)[:8]  # what the list's "task" column shows

    assert changelist(operator_client, q=shown) == {task}
    assert changelist(operator_client, q=str(task.id).upper()) == {task}
    assert changelist(operator_client, q=str(other.id).replace("-", "")) == {other}


def test_the_search_finds_contexts_owners_and_old_clients_ids(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("searched")
    alpha = open_task(agent, owner="apikey:5", context_id="ctx-alpha-7")
    beta = open_task(agent, owner="user:9", context_id="ctx-beta")
    named = old_client_task(agent, "order-2026-0042")

    assert changelist(operator_client, q="ctx-alpha") == {alpha}
    assert changelist(operator_client, q="ctx-") == {alpha, beta}
    assert changelist(operator_client, q="user:9") == {beta}
    assert changelist(operator_client, q="order-2026") == {named}
    assert changelist(operator_client, q="  ctx-beta  ") == {beta}


def test_the_search_matches_beginnings_not_any_substring(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("searched")
    open_task(agent, owner="apikey:5", context_id="ctx-alpha")

    assert changelist(operator_client, q="alpha") == set()
    assert changelist(operator_client, q="apikey") == set()


def test_the_list_says_what_the_search_finds(operator_client: Client) -> None:
    page = operator_client.get(reverse(TASKS)).content.decode()

    assert SEARCH_HELP.startswith("Finds a task by its id or the id's first characters")
    assert "by its owner, written exactly (apikey:12, user:3, anonymous)" in page


# The filters.


def test_the_protocol_version_filter_offers_every_version_without_reading_tasks(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("versions")
    current = open_task(agent)
    old = old_client_task(agent, "mine-1")

    assert changelist(operator_client, protocol_version__exact=V1) == {current}
    assert changelist(operator_client, protocol_version__exact="0.1") == {old}
    assert changelist(operator_client, protocol_version__exact=V03) == set()
    page = operator_client.get(reverse(TASKS)).content.decode()
    assert "0.1 (pre-0.2 methods)" in page and "?protocol_version__exact=0.3" in page


def test_the_binding_and_date_filters_select_their_tasks(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("doors")
    rest = open_task(agent, ended())
    Task.objects.filter(id=rest.id).update(binding=Binding.HTTP_JSON)
    old = open_task(agent)
    Task.objects.filter(id=old.id).update(created_at=timezone.now() - timedelta(days=40))
    now = timezone.now()

    assert changelist(operator_client, binding__exact=Binding.HTTP_JSON) == {rest}
    week = {"created_at__gte": str(now - timedelta(days=7)),
            "created_at__lt": str(now + timedelta(days=1))}  # fmt: skip
    assert changelist(operator_client, **week) == {rest}


def test_the_list_offers_no_counts_per_filter_choice(
    operator_client: Client, agent_factory: Any
) -> None:
    open_task(agent_factory("facets"))

    page = operator_client.get(reverse(TASKS), {"_facets": "True"}).content.decode()

    assert "Show counts" not in page
    assert not re.search(r"completed \(\d+\)", page)


# The push lists.


def test_the_config_list_counts_the_deliveries_of_each_config_shown(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("hooked"), ended())
    stored_delivery(task)
    stored_delivery(task)
    stored_delivery(task, state=DeliveryState.PENDING)

    response = operator_client.get(reverse("admin:push_pushnotificationconfig_changelist"))

    (config,) = response.context["cl"].result_list
    assert (config._pending, config._delivered) == (1, 2)
    cells = re.findall(
        r'<td class="field-(pending|delivered)">(\d+)</td>', response.content.decode()
    )
    assert sorted(cells) == [("delivered", "2"), ("pending", "1")]


def test_the_delivery_list_finds_a_tasks_deliveries_by_the_beginning_of_its_id(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("hooked")
    first, second = open_task(agent, ended()), open_task(agent, ended())
    mine = stored_delivery(first)
    theirs = stored_delivery(second)
    url = reverse("admin:push_delivery_changelist")

    def found(term: str) -> set[Any]:
        return set(operator_client.get(url, {"q": term}).context["cl"].result_list)

    assert found(str(first.id)[:8]) == {mine}
    assert found(str(theirs.id)) == {theirs}
    assert found("not an id") == set()


# Queries per page.


def page_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries.captured_queries)


def test_a_page_of_tasks_costs_the_same_queries_for_a_few_tasks_or_a_full_page(
    operator_client: Client, agent_factory: Any
) -> None:
    agents = [agent_factory(f"agent-{n}") for n in range(3)]
    for n in range(3):
        open_task(agents[n % 3], ended())
    few = page_queries(operator_client, reverse(TASKS))

    for n in range(120):
        open_task(agents[n % 3], ended() if n % 2 else ())
    full = page_queries(operator_client, reverse(TASKS))

    assert few == full


def test_a_page_of_deliveries_costs_the_same_queries_for_a_few_or_a_full_page(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("hooked")
    url = reverse("admin:push_delivery_changelist")
    stored_delivery(open_task(agent, ended()))
    few = page_queries(operator_client, url)

    for n in range(60):
        task = open_task(agent, ended())
        stored_delivery(task, state=DeliveryState.PENDING if n % 3 else DeliveryState.DELIVERED)
        stored_delivery(task)
    full = page_queries(operator_client, url)

    assert few == full
