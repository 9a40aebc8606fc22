"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the tests: what the hub's exporters send to
`/v1/traces`, decoded with `opentelemetry-proto` into plain spans."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto

from tests.helpers import answering_posts


@dataclass
class Span:
    service: str
    name: str
    kind: str  # SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    links: list[tuple[str, str]] = field(default_factory=list)  # (trace id, span id)


def value_of(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return getattr(value, which) if which else None


def spans_of(request: ExportTraceServiceRequest) -> list[Span]:
    found = []
    for resource in request.resource_spans:
        resource_attributes = {a.key: value_of(a.value) for a in resource.resource.attributes}
        service = str(resource_attributes.get("service.name", ""))
        for scope in resource.scope_spans:
            for span in scope.spans:
                found.append(Span(
                    service, span.name,
                    SpanProto.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
                    span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                    {a.key: value_of(a.value) for a in span.attributes},
                    [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                ))  # fmt: skip
    return found


class OtlpReceiver:
    """Collects every span exported to it; `url` is what OTEL_EXPORTER_OTLP_ENDPOINT names."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()
        self.server = answering_posts(self.keep)

    def keep(self, headers: dict[str, str], body: bytes) -> tuple[str, bytes]:
        request = ExportTraceServiceRequest.FromString(body)
        with self.lock:
            self.spans.extend(spans_of(request))
        return "application/x-protobuf", ExportTraceServiceResponse().SerializeToString()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def of_trace(self, trace_id: str) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
