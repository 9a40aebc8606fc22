"""The console's own rows: finished tasks counted per minute and per hour, by agent and state,
with a histogram of their turn times, so the dashboard never counts the task table itself.

A periodic job (`console.rollup`) fills them from the finished tasks of the minutes that have
passed, read through the task table's partial index on finished tasks' `updated_at`; the
dashboard sums at most an hour of minutes and a day of hours, whatever the number of tasks.
"""

from __future__ import annotations

from django.db import models

from agents.models import Agent

# Upper bounds, in seconds, of the turn-time histogram's buckets (the last one is open): a
# percentile read from it is "at most this long", exact enough to read at a glance and
# summable across minutes and processes, which stored percentiles would not be.
TURN_BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, float("inf"))


class FinishedTasks(models.Model):
    """Tasks of one agent that reached one final state in one period, and how long they took
    from creation to that state (the whole life of a multi-turn task)."""

    period_start = models.DateTimeField()
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=20)
    count = models.PositiveIntegerField(default=0)
    turns_0 = models.PositiveIntegerField(default=0)
    turns_1 = models.PositiveIntegerField(default=0)
    turns_2 = models.PositiveIntegerField(default=0)
    turns_3 = models.PositiveIntegerField(default=0)
    turns_4 = models.PositiveIntegerField(default=0)
    turns_5 = models.PositiveIntegerField(default=0)
    turns_6 = models.PositiveIntegerField(default=0)
    turns_7 = models.PositiveIntegerField(default=0)
    turns_8 = models.PositiveIntegerField(default=0)
    turns_9 = models.PositiveIntegerField(default=0)
    # The shortest and the longest turn, in seconds: a percentile's bucket narrowed to what
    # was seen ("12 s" for one 12 s turn rather than its bucket, 10 to 30 s).
    turn_min = models.FloatField(null=True, blank=True)
    turn_max = models.FloatField(null=True, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.period_start:%Y-%m-%d %H:%M} {self.agent_id} {self.state}: {self.count}"


BUCKET_FIELDS = tuple(f"turns_{i}" for i in range(len(TURN_BUCKETS)))


class FinishedMinute(FinishedTasks):
    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["period_start", "agent", "state"], name="finished_minute_unique"
            )
        ]


class FinishedHour(FinishedTasks):
    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["period_start", "agent", "state"], name="finished_hour_unique"
            )
        ]


class RollupMark(models.Model):
    """One row: the minutes before `rolled_until` are in the tables above. Its lock also keeps
    two runs of the job (two beats) from interleaving."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    rolled_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"rolled up until {self.rolled_until}"
