"""The hub's own spans and their OTLP encoding, as a collector receives them: what the SDK's
encoder would have sent, field for field, for every kind of value, event, link, status and
parent; the provider's sampler obeyed; and the exporter still sending with the settings the
OTEL_EXPORTER_OTLP_* variables give (headers, compression). The spans of real calls, exported
by real hub processes, are checked in tests/integration/test_tracing_real_stack.py."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from a2ahub import span_wire
from a2ahub.spans import Spans

REMOTE = SpanContext(
    0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True,
    TraceFlags(TraceFlags.SAMPLED), TraceState([("vendor", "v1"), ("b", "2")]),
)  # fmt: skip


def pipeline(**provider_options: Any) -> tuple[Spans, InMemorySpanExporter, TracerProvider]:
    provider = TracerProvider(resource=Resource.create({"service.name": "hub-test"}),
                              **provider_options)  # fmt: skip
    kept = InMemorySpanExporter()
    processor = SimpleSpanProcessor(kept)
    provider.add_span_processor(processor)
    return Spans(provider, processor, "a2ahub"), kept, provider


def assert_encoded_as_the_sdks_encoder_would(spans: tuple[ReadableSpan, ...]) -> None:
    ours = ExportTraceServiceRequest.FromString(span_wire.request(spans))
    assert ours == encode_spans(spans)
    assert ours.resource_spans  # not two empty requests


def test_every_kind_of_span_is_encoded_as_the_sdks_encoder_encodes_it() -> None:
    spans, kept, provider = pipeline()
    remote = set_span_in_context(NonRecordingSpan(REMOTE))
    door = spans.start("A2A SendMessage", remote, SpanKind.SERVER, {"a2a.binding": "jsonrpc"})
    door.set_attributes({
        "a2a.agent": "échø ✓", "http.response.status_code": 200, "negative": -7,
        "big": 2**62, "ratio": 0.25, "ok": True, "off": False, "empty": "",
        "names": ["a", "b"], "codes": (1, 2, 3), "flags": [True, False], "none": None,
        "a2a.task.id": "7c6c2d4e-9a1d-4b59-a0a7-3f6c2f1c9f00",
    })  # fmt: skip
    write = spans.start("a2a.task.write", set_span_in_context(door), attributes={"n": 1})
    write.add_link(REMOTE, {"why": "the task's first call"})
    write.record_exception(ValueError("the store refused it"), {"extra": 1})
    write.set_status(Status(StatusCode.ERROR, "ValueError: the store refused it"))
    write.end()
    for kind in (SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.INTERNAL):
        spans.start(f"a {kind.name} span", set_span_in_context(door), kind).end()
    root = spans.start("a root", Context())
    root.add_event("plain event")
    root.set_status(StatusCode.OK)
    root.end()
    door.end()
    # A span of the official instrumentations: the SDK's, under a scope with a version.
    sdk_tracer = provider.get_tracer(
        "opentelemetry.instrumentation.httpx", "0.66b1",
        schema_url="https://opentelemetry.io/schemas/1.11.0",
    )  # fmt: skip
    with sdk_tracer.start_as_current_span("POST", kind=SpanKind.CLIENT) as sdk_span:
        sdk_span.set_attribute("http.request.method", "POST")
    # And one from another resource (another process's provider).
    other, other_kept, _ = pipeline()
    other.start("elsewhere").end()

    finished = kept.get_finished_spans() + other_kept.get_finished_spans()
    assert len(finished) == 9
    assert_encoded_as_the_sdks_encoder_would(finished)
    one = ExportTraceServiceRequest.FromString(span_wire.request(finished))
    decoded = {s.name: s for r in one.resource_spans for sc in r.scope_spans for s in sc.spans}
    server = decoded["A2A SendMessage"]
    assert server.trace_id.hex() == f"{REMOTE.trace_id:032x}"
    assert server.parent_span_id.hex() == f"{REMOTE.span_id:016x}"
    assert server.trace_state == "vendor=v1,b=2"
    assert server.flags == 0x300  # its parent is known to be remote
    attributes = {a.key: a.value for a in server.attributes}
    assert attributes["a2a.agent"].string_value == "échø ✓"
    assert attributes["negative"].int_value == -7
    assert [v.int_value for v in attributes["codes"].array_value.values] == [1, 2, 3]
    assert "none" not in attributes  # not a value OTLP carries: dropped, as the SDK drops it
    failed = decoded["a2a.task.write"]
    assert failed.status.code == 2 and failed.status.message.startswith("ValueError")
    assert failed.events[0].name == "exception"
    assert failed.links[0].span_id.hex() == f"{REMOTE.span_id:016x}"


def test_the_providers_sampler_decides_and_a_parents_decision_is_followed() -> None:
    spans, kept, _ = pipeline(sampler=ParentBased(ALWAYS_OFF))
    dropped = spans.start("a root, not sampled", Context())
    assert not dropped.is_recording() and dropped.get_span_context().is_valid
    dropped.end()
    unsampled = SpanContext(REMOTE.trace_id, REMOTE.span_id, True, TraceFlags(TraceFlags.DEFAULT))
    spans.start(
        "child of an unsampled caller", set_span_in_context(NonRecordingSpan(unsampled))
    ).end()
    child = spans.start("child of a sampled caller", set_span_in_context(NonRecordingSpan(REMOTE)))
    assert child.get_span_context().trace_flags.sampled
    assert child.get_span_context().trace_id == REMOTE.trace_id
    child.end()
    assert [s.name for s in kept.get_finished_spans()] == ["child of a sampled caller"]


def test_a_span_is_exported_once_and_unchanged_after_it_ends() -> None:
    spans, kept, _ = pipeline()
    span = spans.start("a2a.executor echo", attributes={"kept": "yes", "object": object()})
    span.set_status(StatusCode.OK)
    span.set_status(Status(StatusCode.ERROR, "too late: OK is final"))
    span.end()
    span.set_attribute("after", "the end")
    span.update_name("renamed after the end")
    span.end()
    (only,) = kept.get_finished_spans()
    assert only.name == "a2a.executor echo"
    assert dict(only.attributes or {}) == {"kept": "yes"}
    assert only.status.status_code is StatusCode.OK
    assert not span.is_recording()


class Collector:
    """An OTLP/HTTP receiver on 127.0.0.1 that keeps each export's headers and spans."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], ExportTraceServiceRequest]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                collector.received.append((
                    {k.lower(): v for k, v in self.headers.items()},
                    ExportTraceServiceRequest.FromString(body),
                ))  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"


@pytest.fixture
def collector() -> Iterator[Collector]:
    found = Collector()
    yield found
    found.server.shutdown()
    found.server.server_close()


def test_the_exporter_sends_with_the_otlp_variables_settings(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=blue")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    spans, kept, _ = pipeline()
    spans.start("A2A SendMessage", kind=SpanKind.SERVER, attributes={"a2a.agent": "echo"}).end()

    exporter = span_wire.OtlpExporter()
    assert exporter.export(kept.get_finished_spans()) is SpanExportResult.SUCCESS
    ((headers, sent),) = collector.received
    assert headers["x-tenant"] == "blue"
    assert headers["content-encoding"] == "gzip"
    assert headers["content-type"] == "application/x-protobuf"
    assert sent == encode_spans(kept.get_finished_spans())
    exporter.shutdown()
    assert exporter.export(kept.get_finished_spans()) is SpanExportResult.FAILURE
    assert len(collector.received) == 1
