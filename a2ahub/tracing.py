"""OpenTelemetry traces of the hub's work, and the W3C trace context that ties them together
across processes and hubs (`traceparent`, `tracestate`, `baggage`).

Off unless configured: the standard `OTEL_*` variables turn it on (an OTLP endpoint, or
`OTEL_TRACES_EXPORTER=otlp`); `OTEL_SDK_DISABLED=true` keeps it off. While off, `enabled` is
False and every helper here returns before making anything: callers on hot paths test that
one boolean, so a hub without an exporter creates no span objects at all.

When on, every process exports its spans in batches over OTLP/HTTP (`OTEL_EXPORTER_OTLP_*`,
`OTEL_BSP_*`), sampled as `OTEL_TRACES_SAMPLER` says (parent-based, always on, by default),
as `OTEL_SERVICE_NAME` (default `a2a-hub`). The official instrumentations add their spans:
Celery (a job's run, whose parent is read from the job message's headers, where
`a2ahub.worker.job_message` wrote the queueing span's context), httpx (every outbound call
of `a2ahub.outbound`, carrying `traceparent` out) and, with TRACE_COMMANDS, psycopg and
Redis (a span per command).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping, MutableMapping
from contextlib import nullcontext
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from a2ahub.spans import Spans

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_SERVICE_NAME = "a2a-hub"
# The headers (and gRPC metadata keys) that carry a trace's context, W3C's.
CONTEXT_HEADERS = ("traceparent", "tracestate", "baggage")

enabled = False
_spans: Spans | None = None
# The OpenTelemetry names the hot paths call, bound by `setup` (an import inside a function
# costs each call a lookup; while tracing is off nothing of OpenTelemetry is imported).
_otel: Any = None


def configured(environ: Mapping[str, str]) -> bool:
    """Whether the environment asks for traces: an OTLP endpoint or an OTLP exporter named."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    return bool(endpoint) or exporter == "otlp"


def setup(environ: Mapping[str, str] | None = None, commands: bool = False) -> bool:
    """Turn tracing on in this process if the environment asks for it (once); whether on.
    `commands` (TRACE_COMMANDS): a span for every PostgreSQL and Redis command too."""
    global enabled, _spans, _otel
    environ = os.environ if environ is None else environ
    if enabled or not configured(environ):
        return enabled
    from opentelemetry import context, trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from a2ahub.span_wire import OtlpExporter

    name = environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    # The sampler comes from OTEL_TRACES_SAMPLER (and _ARG), read by the provider itself.
    provider = TracerProvider(resource=once_hashed(Resource.create({SERVICE_NAME: name})))
    # A batch sent off the request path, every OTEL_BSP_SCHEDULE_DELAY ms; the exporter
    # reads its endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*. The processor
    # starts its thread again in a forked child (Celery's prefork pool).
    batches = BatchSpanProcessor(OtlpExporter())
    provider.add_span_processor(batches)
    trace.set_tracer_provider(provider)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    if commands:
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from opentelemetry.instrumentation.redis import RedisInstrumentor

        # Off by default: a send's event publishes alone were a span for every few sends, and
        # each command span costs the process as much as one of the hub's own.
        PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
        RedisInstrumentor().instrument(tracer_provider=provider)
    from a2ahub.spans import Spans

    _spans = Spans(provider, batches, "a2ahub")
    _otel = SimpleNamespace(
        Context=context.Context, attach=context.attach, detach=context.detach,
        SpanKind=trace.SpanKind, Status=trace.Status, StatusCode=trace.StatusCode,
        get_current_span=trace.get_current_span, set_span_in_context=trace.set_span_in_context,
    )  # fmt: skip
    # Spans wait for the exporter's next batch long enough to reach the garbage collector's
    # oldest generation, so full collections come far more often: cheap only because every
    # process that serves freezes what it loaded at start-up (`a2ahub.interpreter`).
    enabled = True
    logger.info("traces go to OTLP as service %s", name)
    return True


def once_hashed(resource: Any) -> Any:
    """The same resource, hashed once: the exporter files every span it sends under its
    resource, and the SDK hashes one through a JSON dump of its attributes each time (a
    seventh of the exporter's CPU). A resource never changes."""
    from opentelemetry.sdk.resources import Resource

    class Hashed(Resource):
        def __hash__(self) -> int:
            return known

    known = hash(resource)
    return Hashed(resource.attributes, resource.schema_url)


def spans() -> Spans:
    assert _spans is not None, "tracing.setup() turned tracing on first"
    return _spans


# -- spans --------------------------------------------------------------------------------


def span(
    name: str,
    kind: str = "INTERNAL",
    attributes: Mapping[str, Any] | None = None,
    links_to: tuple[str, ...] = (),
    parent: str | None = None,
) -> Any:
    """A child span of the current one for a `with` block, or nothing while tracing is off.
    `links_to`: traceparents this work follows from without being their child (a webhook
    delivery's retry, its task's trace). `parent`: a stored traceparent to continue instead
    of the current span ("": a trace of its own)."""
    if not enabled:
        return nullcontext()
    return Current(name, kind, attributes, links_to, parent)


class Current:
    """A span, current while its `with` block runs. The SDK's `start_as_current_span` does the
    same through three generator context managers; this one class is a third of the CPU,
    and a send makes a few of them."""

    __slots__ = ("attributes", "kind", "links_to", "name", "parent", "span", "token")

    def __init__(
        self,
        name: str,
        kind: str,
        attributes: Mapping[str, Any] | None,
        links_to: tuple[str, ...],
        parent: str | None,
    ) -> None:
        self.name, self.kind, self.attributes = name, kind, attributes
        self.links_to, self.parent = links_to, parent

    def __enter__(self) -> Span:
        context = None
        if self.parent is not None:
            context = extract({"traceparent": self.parent}) if self.parent else _otel.Context()
        self.span = span = spans().start(
            self.name, context, _otel.SpanKind[self.kind], clean(self.attributes),
            links(self.links_to) if self.links_to else (),
        )  # fmt: skip
        self.token = _otel.attach(_otel.set_span_in_context(span))
        return span

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        span = self.span
        try:
            # As the SDK's: an Exception is the span's error, GeneratorExit and the like not.
            if isinstance(error, Exception):
                span.record_exception(error)
                span.set_status(_otel.Status(_otel.StatusCode.ERROR,
                                             f"{type(error).__name__}: {error}"))  # fmt: skip
        finally:
            _otel.detach(self.token)
            span.end()


def clean(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """Attributes without the empty ones (an attribute is either known or absent)."""
    return {k: v for k, v in (attributes or {}).items() if v is not None and v != ""}


def links(traceparents: tuple[str, ...]) -> list[Any]:
    from opentelemetry.trace import Link, get_current_span

    found = []
    for parent in filter(None, traceparents):
        context = get_current_span(extract({"traceparent": parent})).get_span_context()
        if context.is_valid:
            found.append(Link(context))
    return found


def annotate(**attributes: Any) -> None:
    """Set attributes (dots spelled as `__`) on the current span, if tracing is on."""
    if not enabled:
        return
    _otel.get_current_span().set_attributes(clean({k.replace("__", "."): v
                                                   for k, v in attributes.items()}))  # fmt: skip


def link(traceparent: str) -> None:
    """Link the current span to a stored trace (a later turn, a subscription to the task's
    first call): related, not its child."""
    if not enabled or not traceparent:
        return
    for found in links((traceparent,)):
        _otel.get_current_span().add_link(found.context)


def note_result(result: Any) -> None:
    """The task (or message) a method answered with, on the current span: its ids and the
    state it reached."""
    if not enabled or result is None:
        return
    span = _otel.get_current_span()
    status = getattr(result, "status", None)
    if status is not None and hasattr(result, "id"):  # a Task
        from a2a.types import a2a_pb2 as pb

        span.set_attributes(clean({"a2a.task.id": result.id, "a2a.context.id": result.context_id,
                                   "a2a.task.state": pb.TaskState.Name(status.state)}))  # fmt: skip
    elif hasattr(result, "message_id"):  # a Message
        span.set_attributes(clean({"a2a.task.id": result.task_id,
                                   "a2a.context.id": result.context_id}))  # fmt: skip
    elif hasattr(result, "WhichOneof"):  # a SendMessageResponse or a stream's event
        has_payload = "payload" in result.DESCRIPTOR.oneofs_by_name
        which = result.WhichOneof("payload") if has_payload else None
        if which:
            note_result(getattr(result, which))


# -- the door's span -------------------------------------------------------------------------


class Door:
    """The server span of one A2A call: started from the caller's trace context (if it sent
    one), current while the call is handled, ended with the call (or its stream)."""

    __slots__ = ("span", "token")

    def __init__(self, span: Span, token: Any) -> None:
        self.span = span
        self.token = token

    def finish(
        self, agent: str, method: str, version: str, binding: str, attributes: Mapping[str, Any]
    ) -> None:
        span = self.span
        span.update_name(f"A2A {method}" if method else f"A2A {binding}")
        span.set_attributes(clean({
            "a2a.method": method, "a2a.binding": binding, "a2a.version": version,
            "a2a.agent": agent, "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent, **attributes,
        }))  # fmt: skip
        _otel.detach(self.token)

    def end_http(self, request: Any, status: int) -> None:
        """A page's or the registry's request, answered with `status` (500: it raised): named
        by its method and route, failed on a 5xx."""
        match = getattr(request, "resolver_match", None)
        route = f"/{match.route}" if match is not None and match.route else ""
        self.span.update_name(f"{request.method} {route}".strip())
        self.span.set_attributes(clean({
            "http.request.method": request.method, "http.route": route,
            "url.path": request.path, "http.response.status_code": status,
        }))  # fmt: skip
        _otel.detach(self.token)
        self.end(status >= 500)

    def close(self, response: Any, failed: bool) -> None:
        """End the span now, or with the response's stream."""
        if response.streaming:
            response.streaming_content = ended_with(response.streaming_content, self)
        else:
            self.end(failed)

    def end(self, failed: bool = False) -> None:
        if failed:
            self.span.set_status(_otel.Status(_otel.StatusCode.ERROR))
        self.span.end()


def open_door(carrier: Mapping[str, str], binding: str) -> Door | None:
    """The call's server span, made current (None while tracing is off)."""
    if not enabled:
        return None
    # Most calls carry no trace context: the propagators' work is skipped for them.
    parent = extract(carrier) if any(name in carrier for name in CONTEXT_HEADERS) else None
    # Its attributes come at its end (`finish`), all in one call.
    span = spans().start(f"A2A {binding}", parent, _otel.SpanKind.SERVER)
    return Door(span, _otel.attach(_otel.set_span_in_context(span, parent)))


def note_agent(slug: str, agent_id: object, name: str = "") -> None:
    if not enabled:
        return
    annotate(gen_ai__agent__id=str(agent_id), gen_ai__agent__name=slug,
             a2a__agent__title=name)  # fmt: skip


# -- context in and out -----------------------------------------------------------------------


class _Getter:
    """Reads a carrier whatever case its names are in (HTTP headers, gRPC metadata)."""

    def get(self, carrier: Mapping[str, str], key: str) -> list[str] | None:
        value = carrier.get(key)
        if value is None:
            value = carrier.get(key.title()) or carrier.get(key.upper())
        return [value] if isinstance(value, str) else None

    def keys(self, carrier: Mapping[str, str]) -> list[str]:
        return list(carrier)


def extract(carrier: Mapping[str, str]) -> Any:
    from opentelemetry.propagate import extract as extract_context

    return extract_context(carrier, getter=_Getter())  # type: ignore[arg-type]


def inject(carrier: MutableMapping[str, Any]) -> None:
    """Add the current trace context to outgoing headers (nothing while tracing is off)."""
    if not enabled:
        return
    from opentelemetry.propagate import inject as inject_context

    inject_context(carrier)


def current_traceparent() -> str:
    """The current span's `traceparent`, to store with what it made ("" when off or none)."""
    if not enabled:
        return ""
    # Spelled here rather than by the propagator: a send stores one on each new task.
    context = _otel.get_current_span().get_span_context()
    if not context.is_valid:
        return ""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def trace_id_of(traceparent: str) -> str:
    """The trace id a stored `traceparent` names ("" for none)."""
    parts = traceparent.split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else ""


def log_ids() -> tuple[str, str]:
    """The current trace and span ids, for a log line ("" each when none)."""
    if not enabled:
        return "", ""
    context = _otel.get_current_span().get_span_context()
    if not context.is_valid:
        return "", ""
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def metadata_carrier(metadata: Any) -> dict[str, str]:
    """gRPC invocation metadata as a carrier (its keys are lower case already)."""
    return {k: v for k, v in metadata or () if k in CONTEXT_HEADERS and isinstance(v, str)}


async def ended_with(content: AsyncIterator[T], door: Door) -> AsyncIterator[T]:
    """A stream (of bytes, or of events), its call's span ended when the stream ends (or its
    client left). Closing it closes `content` too."""
    failed = True
    try:
        async for part in content:
            yield part
        failed = False
    except GeneratorExit:
        failed = False
        raise
    finally:
        door.end(failed)
        close = getattr(content, "aclose", None)
        if close is not None:
            await close()


# -- the pages and the registry (served by Django) ------------------------------------------------


def TracingMiddleware(get_response: Any) -> Any:
    """A server span for each request Django serves (the registry, the console, the admin,
    the probes), continuing the caller's trace. While tracing is off it is not in the chain
    at all: the factory hands back the next handler itself."""
    if not enabled:
        return get_response
    from asgiref.sync import iscoroutinefunction, markcoroutinefunction

    if iscoroutinefunction(get_response):

        async def traced(request: Any) -> Any:
            door = open_door(request.headers, "")
            assert door is not None
            status = 500
            try:
                response = await get_response(request)
                status = response.status_code
            finally:
                door.end_http(request, status)
            return response

        markcoroutinefunction(traced)
        return traced

    def traced_sync(request: Any) -> Any:
        door = open_door(request.headers, "")
        assert door is not None
        status = 500
        try:
            response = get_response(request)
            status = response.status_code
        finally:
            door.end_http(request, status)
        return response

    return traced_sync


TracingMiddleware.sync_capable = True  # type: ignore[attr-defined]
TracingMiddleware.async_capable = True  # type: ignore[attr-defined]
