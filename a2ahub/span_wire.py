"""Finished spans in OTLP's protobuf wire format (`ExportTraceServiceRequest`), and the OTLP/HTTP
exporter that sends them.

Why written by hand: the SDK's encoder builds a protobuf object for every span, attribute and
value before serializing them. That came to about 30 µs a span, a third of what tracing cost
an inline send (bench/results-2026-11-28-tracing.md); these bytes are written at about a
tenth of that. The output is the SDK encoder's, field for field
(tests/test_span_wire.py decodes both with `opentelemetry-proto` and compares them).
The exporter is the SDK's own: its endpoint, headers, timeout, compression, certificates and
retries, all read from the `OTEL_EXPORTER_OTLP_*` variables. Only its encoding is replaced.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from struct import Struct
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from a2ahub.spans import PLAIN

logger = logging.getLogger(__name__)

FIXED64 = Struct("<Q")
FIXED32 = Struct("<I")
DOUBLE = Struct("<d")
INT64 = range(-(2**63), 2**63)
# opentelemetry.proto.trace.v1.Span.SpanFlags: the parent's remoteness is known (and is it).
HAS_IS_REMOTE, IS_REMOTE = 0x100, 0x200
_SMALL = [bytes((n,)) for n in range(128)]
# Attributes repeat from span to span (a method, an agent, a binding): each one's bytes are kept,
# up to this many, then forgotten all at once (ids never repeat; spelling them again is cheap).
KEPT_ATTRIBUTES = 8192
_kept: dict[tuple[int, str, type, Any], bytes] = {}


def varint(n: int) -> bytes:
    if n < 128:
        return _SMALL[n]
    out = bytearray()
    while n > 127:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_TAGS = [varint(n << 3 | 2) for n in range(16)]  # a length-delimited field's tag, by number


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or a message)."""
    n = len(payload)
    return _TAGS[number] + (_SMALL[n] if n < 128 else varint(n)) + payload


def text(value: str) -> bytes:
    return value.encode("utf-8", "replace")


# -- values (opentelemetry.proto.common.v1) --------------------------------------------------------


def any_value(value: Any) -> bytes:
    """An AnyValue, as the SDK encodes each kind of value."""
    if isinstance(value, str):
        return field(1, text(value))
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        if value in INT64:
            return b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF)
        return field(1, text(str(value)))  # past int64: kept as its digits
    if isinstance(value, float):
        return b"\x21" + DOUBLE.pack(value)
    if isinstance(value, bytes):
        return field(7, value)
    if value is None:
        return b""
    if isinstance(value, Mapping):
        return field(6, b"".join(field(1, key_value(str(k), v)) for k, v in value.items()))
    if isinstance(value, Sequence):
        return field(5, b"".join(field(1, any_value(v)) for v in value))
    return field(1, text(str(value)))


def key_value(key: str, value: Any) -> bytes:
    return (field(1, text(key)) if key else b"") + field(2, any_value(value))


def attributes(number: int, values: Mapping[str, Any] | None) -> bytes:
    if not values:
        return b""
    out = []
    for k, v in values.items():
        kind = type(v)
        if kind not in PLAIN:
            out.append(field(number, key_value(k, v)))
            continue
        known = (number, k, kind, v)  # the type too: True and 1 are equal keys
        encoded = _kept.get(known)
        if encoded is None:
            if len(_kept) >= KEPT_ATTRIBUTES:
                _kept.clear()
            encoded = _kept[known] = field(number, key_value(k, v))
        out.append(encoded)
    return b"".join(out)


def count(number: int, n: int) -> bytes:
    return varint(number << 3) + varint(n) if n else b""


# -- spans (opentelemetry.proto.trace.v1) ----------------------------------------------------------


def span(s: ReadableSpan) -> bytes:
    context = s.context
    assert context is not None
    parent = s.parent
    parts = [
        b"\x0a\x10", context.trace_id.to_bytes(16, "big"),
        b"\x12\x08", context.span_id.to_bytes(8, "big"),
    ]  # fmt: skip
    if context.trace_state:
        parts.append(field(3, text(",".join(f"{k}={v}" for k, v in context.trace_state.items()))))
    if parent:
        parts += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
    if s.name:
        parts.append(field(5, text(s.name)))
    parts += (b"\x30", _SMALL[s.kind.value + 1])  # the API's kinds count from 0, OTLP's from 1
    parts += (b"\x39", FIXED64.pack(s.start_time or 0), b"\x41", FIXED64.pack(s.end_time or 0))
    parts.append(attributes(9, s.attributes))
    parts.append(count(10, s.dropped_attributes))
    for event in s.events:
        named = field(2, text(event.name)) if event.name else b""
        parts.append(field(11, b"".join((
            b"\x09", FIXED64.pack(event.timestamp), named,
            attributes(3, event.attributes), count(4, event.dropped_attributes),
        ))))  # fmt: skip
    parts.append(count(12, s.dropped_events))
    for link in s.links:
        parts.append(field(13, b"".join((
            b"\x0a\x10", link.context.trace_id.to_bytes(16, "big"),
            b"\x12\x08", link.context.span_id.to_bytes(8, "big"),
            attributes(4, link.attributes), count(5, link.dropped_attributes),
            b"\x35", FIXED32.pack(remoteness(link.context)),
        ))))  # fmt: skip
    parts.append(count(14, s.dropped_links))
    status = s.status
    if status is not None:
        parts.append(field(15, (field(2, text(status.description)) if status.description else b"")
                           + count(3, status.status_code.value)))  # fmt: skip
    parts += (b"\x85\x01", FIXED32.pack(remoteness(parent)))
    return b"".join(parts)


def remoteness(parent: Any) -> int:
    return HAS_IS_REMOTE | IS_REMOTE if parent is not None and parent.is_remote else HAS_IS_REMOTE


def scope(s: InstrumentationScope | None) -> bytes:
    if s is None:
        return b""
    return (
        (field(1, text(s.name)) if s.name else b"")
        + (field(2, text(s.version)) if s.version else b"")
        + attributes(3, s.attributes)
    )


def request(spans: Sequence[ReadableSpan]) -> bytes:
    """An ExportTraceServiceRequest of these spans, grouped by resource, then by scope."""
    grouped: dict[Resource, dict[InstrumentationScope | None, list[bytes]]] = {}
    for s in spans:
        by_scope = grouped.setdefault(s.resource, {})
        by_scope.setdefault(s.instrumentation_scope or None, []).append(field(2, span(s)))
    out = []
    for r, by_scope in grouped.items():
        scopes = b"".join(
            field(2, field(1, scope(sc)) + b"".join(encoded)
                  + (field(3, text(sc.schema_url)) if sc is not None and sc.schema_url else b""))
            for sc, encoded in by_scope.items()
        )  # fmt: skip
        schema = field(3, text(r.schema_url)) if r.schema_url else b""
        out.append(field(1, field(1, attributes(1, r.attributes)) + scopes + schema))
    return b"".join(out)


class OtlpExporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter, sending spans encoded by `request`."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            data = request(spans)
        except Exception:
            logger.exception("a batch of %d spans could not be encoded", len(spans))
            return SpanExportResult.FAILURE
        sent = self._client.export(data)
        return SpanExportResult.SUCCESS if sent.success else SpanExportResult.FAILURE
