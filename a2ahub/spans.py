"""The spans the hub makes on its hot paths (a call's server span, a task's write, an executor's
turn): OpenTelemetry API spans, sampled by the provider's sampler, named by its id generator,
ended into its batch processor and exported by the SDK's OTLP exporter like any other.

Why not the SDK's own span: on an inline send, its three spans cost more than the rest of
tracing together (bench/results-2026-11-28-tracing.md). Each one took a lock, checked every
attribute value against the abstract `Sequence` twice (on the way in and again in the sampler's
result), and kept bounded lists and limits for events and links a hub span never has. These
spans take the values the hub gives them (strings, numbers, booleans and lists of them; any
other value is dropped, as the SDK drops it) and are ended once, on one task.
The official instrumentations (Celery, httpx, psycopg, Redis) still make the SDK's spans, as
children of these ones.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from time import time_ns
from typing import Any

from opentelemetry import trace as api
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

PLAIN = frozenset((str, bool, int, float))
UNSET = Status(StatusCode.UNSET)


def plain(value: Any) -> bool:
    """A value OTLP can carry as an attribute: a scalar, or a list or tuple of them."""
    if type(value) in PLAIN:
        return True
    return type(value) in (list, tuple) and all(type(item) in PLAIN for item in value)


class Spans:
    """Starts the hub's spans for one provider: its sampler decides, its id generator names,
    its resource describes them, and each one ends into `processor` (the provider's batch
    processor)."""

    def __init__(self, provider: TracerProvider, processor: SpanProcessor, scope: str) -> None:
        self.sampler = provider.sampler
        self.ids = provider.id_generator
        self.resource = provider.resource
        self.processor = processor
        self.scope = InstrumentationScope(scope)
        self.random_ids = self.ids.is_trace_id_random()

    def start(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, Any] | None = None,
        links: Sequence[Link] = (),
    ) -> api.Span:
        """A span begun now, as the SDK's tracer begins one: the child of the span current in
        `context` (or of the current one), else the root of a new trace."""
        parent: SpanContext | None = api.get_current_span(context).get_span_context()
        if parent is not None and parent.is_valid and not parent.is_remote:
            # A child of a span of this process's: the trace was sampled (or not) where it
            # began here, and each of the SDK's samplers decides a local parent's child the
            # same way again (the parent-based ones by the parent's flag, the ratio one by the
            # same trace id), so its decision is taken rather than asked for.
            own = SpanContext(parent.trace_id, self.ids.generate_span_id(), False,
                              parent.trace_flags, parent.trace_state)  # fmt: skip
            if not parent.trace_flags.sampled:
                return NonRecordingSpan(own)
            kept = {k: v for k, v in attributes.items() if plain(v)} if attributes else {}
            return HubSpan(self, name, own, parent, kind, kept, list(links))
        if parent is not None and parent.is_valid:
            trace_id = parent.trace_id
            random_id = parent.trace_flags.random_trace_id
        else:
            parent = None
            trace_id = self.ids.generate_trace_id()
            random_id = self.random_ids
        decision = self.sampler.should_sample(context, trace_id, name, kind, attributes, links)
        flags = TraceFlags.SAMPLED if decision.decision.is_sampled() else TraceFlags.DEFAULT
        if random_id:
            flags |= TraceFlags.RANDOM_TRACE_ID
        own = SpanContext(trace_id, self.ids.generate_span_id(), False, TraceFlags(flags),
                          decision.trace_state)  # fmt: skip
        if not decision.decision.is_recording():
            return NonRecordingSpan(own)
        kept = {k: v for k, v in decision.attributes.items() if plain(v)}
        return HubSpan(self, name, own, parent, kind, kept, list(links))


class HubSpan(api.Span):
    """One recording span: changed only until it ends, then handed to the processor as the
    SDK's `ReadableSpan`, which the exporters read."""

    def __init__(
        self,
        spans: Spans,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: dict[str, Any],
        links: list[Link],
    ) -> None:
        self.spans = spans
        self.name = name
        self.context = context
        self.parent = parent
        self.kind = kind
        self.attributes = attributes
        self.links = links
        self.events: list[Event] = []
        self.status = UNSET
        self.start_time = time_ns()
        self.end_time: int | None = None

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return self.end_time is None

    def set_attribute(self, key: str, value: Any) -> None:
        if self.end_time is None and plain(value):
            self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        if self.end_time is None:
            for key, value in attributes.items():
                if plain(value):
                    self.attributes[key] = value

    def add_event(
        self, name: str, attributes: Mapping[str, Any] | None = None, timestamp: int | None = None
    ) -> None:
        if self.end_time is None:
            self.events.append(Event(name, attributes, timestamp))

    def add_link(self, context: SpanContext, attributes: Mapping[str, Any] | None = None) -> None:
        if self.end_time is None and context.is_valid:
            self.links.append(Link(context, attributes))

    def update_name(self, name: str) -> None:
        if self.end_time is None:
            self.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        # As the SDK's: an OK status is final, and UNSET changes nothing.
        if self.end_time is not None or self.status.status_code is StatusCode.OK:
            return
        if not isinstance(status, Status):
            status = Status(status, description)
        if status.status_code is not StatusCode.UNSET:
            self.status = status

    def record_exception(
        self,
        exception: BaseException,
        attributes: Mapping[str, Any] | None = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        kind = type(exception)
        module = kind.__module__
        described = {
            "exception.type": f"{module}.{kind.__qualname__}"
            if module and module != "builtins"
            else kind.__qualname__,
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped),
            **(attributes or {}),
        }
        self.add_event("exception", described, timestamp)

    def end(self, end_time: int | None = None) -> None:
        if self.end_time is not None:
            return
        self.end_time = end_time or time_ns()
        spans = self.spans
        spans.processor.on_end(ReadableSpan(
            self.name, self.context, self.parent, spans.resource, self.attributes, self.events,
            self.links, self.kind, status=self.status, start_time=self.start_time,
            end_time=self.end_time, instrumentation_scope=spans.scope,
        ))  # fmt: skip
