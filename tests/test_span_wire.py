"""A collector reads the hub's own OTLP encoding of spans (a2ahub/span_wire.py) exactly as it
would read the OpenTelemetry SDK's: the same request, byte for byte, for spans holding every
kind of attribute value, events, links, a remote parent, statuses and two scopes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)
from opentelemetry.trace.span import TraceState

from a2ahub.span_wire import request_bytes

CALLER = SpanContext(
    0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True, TraceFlags(1),
    TraceState([("vendor", "value")]),
)  # fmt: skip


class Kept(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def finished_spans() -> list[ReadableSpan]:
    kept = Kept()
    provider = TracerProvider(resource=Resource.create({"service.name": "a2a-hub"}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    hub = provider.get_tracer("a2ahub")
    other = provider.get_tracer("other", "1.2", schema_url="https://example.com/schema")
    attributes: dict[str, Any] = {
        "text": "x", "empty": "", "long": "y" * 300, "count": 7, "negative": -3,
        "large": 2**40, "flag": True, "off": False, "ratio": 1.5, "names": ["a", "b"],
        "numbers": [1, 2], "é": "ü",
    }  # fmt: skip
    caller = set_span_in_context(NonRecordingSpan(CALLER))
    with hub.start_as_current_span("A2A SendMessage", context=caller, kind=SpanKind.SERVER,
                                   attributes=attributes) as door:  # fmt: skip
        with hub.start_as_current_span("a2a.task.write", links=[Link(CALLER, {"why": "later"})]):
            pass
        try:
            with other.start_as_current_span("call", kind=SpanKind.CLIENT):
                raise ValueError("refused")
        except ValueError:
            pass
        with hub.start_as_current_span("a2a.turn.queue", kind=SpanKind.PRODUCER) as queued:
            queued.set_status(Status(StatusCode.OK))
        door.add_event("answered", {"code": 200})
    return kept.spans


def test_the_hubs_encoding_is_the_sdks_byte_for_byte() -> None:
    spans = finished_spans()

    ours = request_bytes(spans)

    theirs = encode_spans(spans)
    assert ExportTraceServiceRequest.FromString(ours) == theirs
    assert ours == theirs.SerializeToString()
