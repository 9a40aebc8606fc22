"""Push gauges for `/metrics`, read at each scrape: deliveries waiting to be sent, those of
them that failed at least once and wait for a retry, and those given up on. Delivered ones are
never counted (the bulk of the table); each count is capped and uses the `(state, ...)` index."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from a2ahub.metrics import COUNT_CAP, capped_count
from push.models import Delivery, DeliveryState


def deliveries() -> Iterable[Metric]:
    family = GaugeMetricFamily(
        "a2ahub_push_deliveries",
        "Webhook deliveries: pending, retrying (pending after a failed attempt) and abandoned "
        f"(counted up to {COUNT_CAP:,}).",
        labels=["state"],
    )
    pending = Delivery.objects.filter(state=DeliveryState.PENDING)
    family.add_metric(["pending"], capped_count(pending))
    family.add_metric(["retrying"], capped_count(pending.filter(attempts__gt=0)))
    abandoned = Delivery.objects.filter(state=DeliveryState.ABANDONED)
    family.add_metric(["abandoned"], capped_count(abandoned))
    yield family
