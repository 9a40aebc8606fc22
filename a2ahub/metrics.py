"""The hub's Prometheus metrics: what the A2A doors record per request (counters, latency,
open streams), and gauges that higher layers compute at scrape time through a hook.

Each web process counts its own requests in memory and serves them at its own `/metrics`;
Prometheus scrapes every process and sums them, as it does for any multi-process service.
Recording is a counter increment and a histogram observation: no lock held across an await,
no database.

What happens in other processes (webhook attempts on the workers) is counted with
`shared_count`: in Redis when distributed, so that any web process's `/metrics` shows the
sum over every process; in memory when embedded, where the jobs run in the web process. The
jobs waiting for a worker are read at each scrape too.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import redis
from django.conf import settings
from django.db.models import QuerySet
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from a2ahub import outages, redis_clients, worker

logger = logging.getLogger(__name__)

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


@dataclass(frozen=True)
class SharedCounter:
    """A counter that any process adds to, and every web process's `/metrics` shows whole."""

    name: str
    documentation: str
    labelnames: tuple[str, ...]

    def field(self, labels: Mapping[str, str]) -> bytes:
        """The labels' values, in the declared order, as the Redis hash field that counts them."""
        if labels.keys() != set(self.labelnames):
            raise ValueError(f"{self.name} takes the labels {self.labelnames}, not {tuple(labels)}")
        return orjson.dumps([str(labels[name]) for name in self.labelnames])

    @property
    def key(self) -> str:
        return f"a2ahub:counter:{self.name}"


SHARED: dict[str, SharedCounter] = {}
# Embedded, every process that counts is this one.
_counted: dict[str, Tally[bytes]] = {}
_counted_lock = threading.Lock()


def shared_counter(name: str, documentation: str, labelnames: Sequence[str]) -> None:
    """Declare a shared counter (at import, or from an app's `AppConfig.ready()`); every
    process that counts or serves `/metrics` must have declared it."""
    SHARED[name] = SharedCounter(name, documentation, tuple(labelnames))


def shared_count(name: str, labels: Mapping[str, str], n: int = 1) -> None:
    shared_counts(name, [(labels, n)])


def shared_counts(name: str, counts: Iterable[tuple[Mapping[str, str], int]]) -> None:
    """Add each `n` to the series of its labels: a batch is one round trip to Redis. Counting
    never fails the caller: while Redis is away the batch is lost (the outage is logged once)."""
    counter = SHARED[name]
    fields = Tally[bytes]()
    for labels, n in counts:
        fields[counter.field(labels)] += n
    if not fields:
        return
    if not settings.REDIS_URL:
        with _counted_lock:
            _counted.setdefault(name, Tally()).update(fields)
        return
    outage = outages.redis_at(settings.REDIS_URL)
    try:
        pipeline = redis_clients.short_client(settings.REDIS_URL).pipeline(transaction=False)
        for field, n in fields.items():
            pipeline.hincrby(counter.key, field, n)
        pipeline.execute()
    except redis.RedisError as exc:
        outage.failed(f"{name}: {fields.total()} counted lost: {outages.describe(exc)}")
    else:
        outage.answered()


shared_counter(
    "a2ahub_push_attempts",
    "Webhook delivery attempts, by outcome: delivered, retry (failed, tried again later), "
    "gone (the receiver answered 410: the config is disabled) or abandoned (failed past the "
    "retry horizon).",
    ["outcome"],
)
shared_counter(
    "a2ahub_push_wakeups",
    "What the delivery engines' wake-ups led to: claimed (a claim found queues), empty (it "
    "found none), held (the engine already works the task's queue) or full (no room).",
    ["outcome"],
)
shared_counter(
    "a2ahub_llm_tokens",
    "Tokens used by `llm` agents' model calls, by agent, model and kind (prompt or completion).",
    ["agent", "model", "kind"],
)


class SharedAndQueued(Collector):
    """At each scrape: the shared counters, and the jobs waiting for a worker. Distributed,
    both are read from Redis in one round trip; a Redis that is away leaves them out."""

    def collect(self) -> Iterable[Metric]:
        if settings.REDIS_URL:
            counted, waiting = self.from_redis(settings.REDIS_URL)
            queue = worker.queue_name()
        else:
            with _counted_lock:
                counted = {name: dict(tally) for name, tally in _counted.items()}
            waiting = worker.jobs_waiting()  # the backlog of this process's own pool
            queue = "in-process"
        for counter in SHARED.values():
            family = CounterMetricFamily(counter.name, counter.documentation,
                                         labels=counter.labelnames)  # fmt: skip
            for field, value in counted.get(counter.name, {}).items():
                values = orjson.loads(field)
                if len(values) == len(counter.labelnames):  # not from an older declaration
                    family.add_metric(values, float(value))
            yield family
        if waiting is not None:
            gauge = GaugeMetricFamily(
                "a2ahub_jobs_waiting",
                "Jobs waiting for a worker: the Celery queue's length in Redis (distributed), "
                "the backlog of this process's own pool (embedded).",
                labels=["queue"],
            )
            gauge.add_metric([queue], waiting)
            yield gauge

    def from_redis(self, url: str) -> tuple[dict[str, dict[bytes, int]], int | None]:
        counters = list(SHARED.values())
        pipeline = redis_clients.short_client(url).pipeline(transaction=False)
        for counter in counters:
            pipeline.hgetall(counter.key)
        # Every job the hub sends has the default priority, which kombu keeps in this list.
        pipeline.llen(worker.queue_name())
        try:
            *hashes, waiting = pipeline.execute()
        except redis.RedisError as exc:
            logger.warning("metrics: Redis is away, shared counters and queues left out: %s", exc)
            return {}, None
        counted = {
            counter.name: {field: int(value) for field, value in found.items()}
            for counter, found in zip(counters, hashes, strict=True)
        }
        return counted, int(waiting)

    def describe(self) -> Iterable[Metric]:
        return []  # as ScrapeTimeGauges: nothing is read before a scrape


REGISTRY.register(SharedAndQueued())
