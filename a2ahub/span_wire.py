"""Finished spans as the bytes of an OTLP `ExportTraceServiceRequest` (protobuf), for the
exporter (a2ahub/tracing.py).

The SDK's encoder builds a protobuf object for every span, attribute and value and then
serializes them: in a web process exporting a few spans a send that was most of the
exporter's CPU, taken from the requests under the same GIL. Writing the wire format
directly is several times cheaper. Only what spans hold is written (fields at their
default are left out, as protobuf does), and tests/test_span_wire.py reads the result back
with the official messages and compares it with the SDK's encoding.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Wire types.
_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_pack_fixed64 = struct.Struct("<Q").pack
_pack_fixed32 = struct.Struct("<I").pack
_pack_double = struct.Struct("<d").pack
_CONTEXT_IS_REMOTE = 0x200
_HAS_IS_REMOTE = 0x100


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64: two's complement in ten bytes
    if value < _SMALL:
        return _VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = 1 << 14
_VARINTS = [bytes((n,)) if n < 0x80 else bytes(((n & 0x7F) | 0x80, n >> 7)) for n in range(_SMALL)]


def _tag(number: int, wire: int) -> bytes:
    return _VARINTS[number << 3 | wire]


def _len(number: int, data: bytes) -> bytes:
    return _tag(number, _LEN) + _varint(len(data)) + data


def _string(number: int, value: str) -> bytes:
    return _len(number, value.encode()) if value else b""


def _uint(number: int, value: int) -> bytes:
    return _tag(number, _VARINT) + _varint(value) if value else b""


def _any_value(value: Any) -> bytes:
    """An AnyValue's fields."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return _tag(2, _VARINT) + (b"\x01" if value else b"\x00")
    if isinstance(value, str):
        return _len(1, value.encode())
    if isinstance(value, int):
        return _tag(3, _VARINT) + _varint(value)
    if isinstance(value, float):
        return _tag(4, _FIXED64) + _pack_double(value)
    if isinstance(value, bytes):
        return _len(7, value)
    if isinstance(value, Mapping):
        return _len(6, b"".join(_len(1, _key_value(str(k), v)) for k, v in value.items()))
    if isinstance(value, Sequence):
        return _len(5, b"".join(_len(1, _any_value(v)) for v in value))
    raise TypeError(f"an attribute cannot be a {type(value).__name__}")


# A KeyValue's key field, by key: the same few keys come in every span.
_keys: dict[str, bytes] = {}


def _key_value(key: str, value: Any) -> bytes:
    encoded = _keys.get(key)
    if encoded is None:
        encoded = _len(1, key.encode())
        if len(_keys) < 1000:  # a bound, should some instrumentation make keys up
            _keys[key] = encoded
    if type(value) is str:
        raw = value.encode()
        size = len(raw)
        if size < 0x7E:  # the value field, and the AnyValue around it, are one byte long each
            return encoded + b"\x12" + _VARINTS[size + 2] + b"\x0a" + _VARINTS[size] + raw
    return encoded + _len(2, _any_value(value))


def _attributes(number: int, attributes: Mapping[str, Any] | None) -> bytes:
    if not attributes:
        return b""
    return b"".join(_len(number, _key_value(k, v)) for k, v in attributes.items())


def _flags(context: Any) -> int:
    """A span's (or link's) flags: whether its parent (or the linked span) is remote."""
    remote = context is not None and context.is_remote
    return _HAS_IS_REMOTE | (_CONTEXT_IS_REMOTE if remote else 0)


def _trace_state(state: Any) -> bytes:
    return _string(3, state.to_header()) if state else b""


def span_bytes(span: Any) -> bytes:
    """One `Span` message."""
    context = span.get_span_context()
    parent = span.parent
    parts = [
        _len(1, context.trace_id.to_bytes(16, "big")),
        _len(2, context.span_id.to_bytes(8, "big")),
        _trace_state(context.trace_state),
        _len(4, parent.span_id.to_bytes(8, "big")) if parent is not None else b"",
        _string(5, span.name),
        _uint(6, span.kind.value + 1),  # the SDK counts from INTERNAL=0, OTLP from 1
        _tag(7, _FIXED64) + _pack_fixed64(span.start_time) if span.start_time else b"",
        _tag(8, _FIXED64) + _pack_fixed64(span.end_time) if span.end_time else b"",
        _attributes(9, span.attributes),
        _uint(10, span.dropped_attributes),
    ]
    for event in span.events:
        parts.append(_len(11, b"".join((
            _tag(1, _FIXED64) + _pack_fixed64(event.timestamp) if event.timestamp else b"",
            _string(2, event.name),
            _attributes(3, event.attributes),
            _uint(4, event.dropped_attributes),
        ))))  # fmt: skip
    parts.append(_uint(12, span.dropped_events))
    for link in span.links:
        linked = link.context
        parts.append(_len(13, b"".join((
            _len(1, linked.trace_id.to_bytes(16, "big")),
            _len(2, linked.span_id.to_bytes(8, "big")),
            _attributes(4, link.attributes),
            _uint(5, link.dropped_attributes),
            _tag(6, _FIXED32) + _pack_fixed32(_flags(linked)),
        ))))  # fmt: skip
    parts.append(_uint(14, span.dropped_links))
    status = span.status
    if status is not None:
        code = status.status_code.value
        parts.append(_len(15, _string(2, status.description or "") + _uint(3, code)))
    parts.append(_tag(16, _FIXED32) + _pack_fixed32(_flags(parent)))
    return b"".join(parts)


def _scope(scope: Any) -> bytes:
    if scope is None:
        return _len(1, b"")
    return _len(1, _string(1, scope.name) + _string(2, scope.version or "")
                + _attributes(3, scope.attributes))  # fmt: skip


def request_bytes(spans: Iterable[Any]) -> bytes:
    """An `ExportTraceServiceRequest` holding `spans`, grouped by resource and scope."""
    grouped: dict[Any, dict[Any, list[bytes]]] = defaultdict(lambda: defaultdict(list))
    for span in spans:
        grouped[span.resource][span.instrumentation_scope or None].append(span_bytes(span))
    out = []
    for resource, scopes in grouped.items():
        body = [_len(1, _attributes(1, resource.attributes))]
        for scope, encoded in scopes.items():
            schema = scope.schema_url if scope is not None else ""
            body.append(_len(2, _scope(scope) + b"".join(_len(2, s) for s in encoded)
                             + _string(3, schema or "")))  # fmt: skip
        body.append(_string(3, resource.schema_url or ""))
        out.append(_len(1, b"".join(body)))
    return b"".join(out)
