"""The minute and hour rollups of finished tasks: what the job counts, that it can run twice,
and that the dashboard reads them rather than the task table."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db.models import Sum
from django.utils import timezone

from console import dashboard, rollup
from console.models import FinishedHour, FinishedMinute, RollupMark
from tasks.models import Task, TaskState
from tests.console.factories import finished_task
from tests.factories.agents import make_agent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_earlier_rollup")]


def counted(model: Any, **lookups: Any) -> int:
    return int(model.objects.filter(**lookups).aggregate(n=Sum("count"))["n"] or 0)


def test_the_job_counts_finished_tasks_by_minute_agent_and_state(echo: Any) -> None:
    # The job runs at the time taken first, so that a minute ending while the tasks are made
    # does not count the last one.
    now = timezone.now()
    other = make_agent("other")
    finished_task(echo, TaskState.COMPLETED, took=0.05, minutes_ago=3)
    finished_task(echo, TaskState.COMPLETED, took=7, minutes_ago=3)
    finished_task(echo, TaskState.FAILED, minutes_ago=20)
    finished_task(other, TaskState.CANCELED, minutes_ago=90)
    finished_task(echo, TaskState.COMPLETED, minutes_ago=0)  # this minute has not ended

    run = rollup.roll_up(now)

    assert run is not None
    assert counted(FinishedMinute, agent=echo, state="completed") == 2
    assert counted(FinishedMinute, agent=echo, state="failed") == 1
    assert counted(FinishedMinute, agent=other, state="canceled") == 1
    assert counted(FinishedHour) == 4
    row = FinishedMinute.objects.get(agent=echo, state="completed")
    assert (row.turns_0, row.turns_5) == (1, 1)  # <= 0.1 s and <= 10 s
    mark = RollupMark.objects.get()
    assert mark.rolled_until == rollup.floor_minute(now)


def test_running_the_job_again_changes_nothing(echo: Any) -> None:
    finished_task(echo, TaskState.COMPLETED, minutes_ago=2)
    rollup.roll_up()
    before = list(FinishedMinute.objects.values("period_start", "agent", "state", "count"))

    rollup.roll_up()
    rollup.roll_up(timezone.now() + timedelta(minutes=1))

    after = list(FinishedMinute.objects.values("period_start", "agent", "state", "count"))
    assert after == before
    assert counted(FinishedHour) == 1


def test_a_task_that_commits_late_in_a_counted_minute_is_counted_at_the_next_run(
    echo: Any,
) -> None:
    rollup.roll_up()
    finished_task(echo, TaskState.COMPLETED, minutes_ago=1)  # a minute already rolled up
    rollup.roll_up(timezone.now() + timedelta(minutes=1))
    assert counted(FinishedMinute, agent=echo) == 1


def test_the_dashboard_sums_rollups_even_once_the_tasks_are_gone(echo: Any) -> None:
    for minutes_ago in (3, 30, 300):
        finished_task(echo, TaskState.COMPLETED, minutes_ago=minutes_ago)
    rollup.roll_up()
    Task.objects.all().delete()  # retention, say: the counts stay

    board = dashboard.gather()

    assert not board.rollup_behind
    assert board.finished_hour_total == 2
    assert sum(c.count for c in board.finished_day) == 3
    assert sum(bar.ok for bar in board.finished_per_minute) == 2


def test_the_dashboard_says_when_the_rollup_is_behind(echo: Any) -> None:
    finished_task(echo, TaskState.COMPLETED, minutes_ago=30)
    rollup.roll_up(timezone.now() - timedelta(minutes=40))  # a beat that stopped long ago

    board = dashboard.gather()

    assert board.rollup_behind
    assert board.finished_hour_total == 0  # in neither the rollup nor the last minutes


def test_old_minutes_are_pruned_and_their_hours_kept(echo: Any) -> None:
    finished_task(echo, TaskState.COMPLETED, minutes_ago=200)
    rollup.roll_up()
    assert not FinishedMinute.objects.filter(
        period_start__lt=timezone.now() - rollup.KEEP_MINUTES
    ).exists()
    assert counted(FinishedHour) == 1


def test_percentiles_read_the_bucket_a_share_of_turns_falls_in() -> None:
    assert dashboard.percentile([0] * 10, 0.5) == "—"
    assert dashboard.percentile([9, 0, 0, 0, 1, 0, 0, 0, 0, 0], 0.5) == "≤ 0.1 s"
    assert dashboard.percentile([9, 0, 0, 0, 1, 0, 0, 0, 0, 0], 0.95) == "2\u20135 s"


def test_a_twelve_second_turn_reads_as_the_range_it_fell_in_not_at_most_thirty() -> None:
    # One 12 s turn: it is in the (10 s, 30 s] bucket, and the dashboard says no more.
    assert dashboard.percentile([0, 0, 0, 0, 0, 0, 1, 0, 0, 0], 0.5) == "10\u201330 s"
    # With the shortest and longest turns seen, the one 12 s turn reads as what it was.
    assert dashboard.percentile([0, 0, 0, 0, 0, 0, 1, 0, 0, 0], 0.5, 12.04, 12.04) == "12 s"
    assert dashboard.percentile([0, 0, 0, 0, 0, 0, 3, 0, 0, 0], 0.5, 10.5, 14) == "10.5\u201314 s"
    assert dashboard.percentile([0, 0, 0, 0, 0, 0, 0, 0, 0, 3], 0.5) == "> 300 s"
