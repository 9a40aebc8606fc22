"""Task gauges for `/metrics`, read at each scrape: open tasks by state. Finished tasks are
never counted (there may be millions); each open state is one capped count on the
`(state, heartbeat_at)` index."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from a2ahub.metrics import COUNT_CAP, capped_count
from tasks.models import OPEN_STATES, Task


def open_tasks() -> Iterable[Metric]:
    family = GaugeMetricFamily(
        "a2ahub_open_tasks", f"Open tasks by state (counted up to {COUNT_CAP:,}).",
        labels=["state"],
    )  # fmt: skip
    for state in sorted(OPEN_STATES):
        family.add_metric([state], capped_count(Task.objects.filter(state=state)))
    yield family
