"""The hub's Prometheus metrics: what the A2A doors record per request (counters, latency,
open streams), and gauges that higher layers compute at scrape time through a hook.

Each web process counts its own requests in memory and serves them at its own `/metrics`;
Prometheus scrapes every process and sums them, as it does for any multi-process service.
Recording is a counter increment and a histogram observation: no lock held across an await,
no database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import QuerySet
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

# Our own registry rather than the library's global one: tests and the scrape see only the
# hub's metrics and this process's own (CPU, memory, file descriptors).
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

REQUESTS = Counter(
    "a2ahub_requests",
    "A2A requests answered, by agent, method, protocol version, binding and code (JSON-RPC: "
    "ok or the error code; HTTP+JSON: the HTTP status).",
    ["agent", "method", "version", "binding", "code"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "a2ahub_request_seconds",
    "Time from the request's body read to its answer (a stream's first byte), by binding "
    "and method.",
    ["binding", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
OPEN_STREAMS = Gauge("a2ahub_open_streams", "SSE streams this process is sending.",
                     registry=REGISTRY)  # fmt: skip

# A method name a client made up would make a new series per request; anything the method
# table does not know is counted under this one.
UNKNOWN = "unknown"


def record_request(agent: str, method: str, version: str, binding: str, code: str,
                   seconds: float) -> None:  # fmt: skip
    REQUESTS.labels(agent, method or UNKNOWN, version, binding, code).inc()
    LATENCY.labels(binding, method or UNKNOWN).observe(seconds)


class ScrapeTimeGauges(Collector):
    """Calls the functions apps registered (`register`) at each scrape; each yields metrics
    read from the database with bounded queries."""

    def __init__(self) -> None:
        self.sources: dict[str, Callable[[], Iterable[Metric]]] = {}

    def collect(self) -> Iterable[Metric]:
        for source in list(self.sources.values()):
            yield from source()

    def describe(self) -> Iterable[Metric]:
        # Nothing known before a scrape: the registry must not call `collect` (the database)
        # when a collector is registered.
        return []


_gauges = ScrapeTimeGauges()
REGISTRY.register(_gauges)


def register(name: str, source: Callable[[], Iterable[Metric]]) -> None:
    """Add the metrics `source` yields to every scrape (from an app's `AppConfig.ready()`)."""
    _gauges.sources[name] = source


def exposition() -> bytes:
    return generate_latest(REGISTRY)


# Scrape-time counts stop here: a number past it says "very many" as well as the exact one
# would, and counting stays bounded however many rows pile up.
COUNT_CAP = 100_000


def capped_count(queryset: QuerySet[Any]) -> int:
    return queryset.order_by().values("pk")[:COUNT_CAP].count()
