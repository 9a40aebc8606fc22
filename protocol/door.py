"""What every A2A door checks before a handler runs, whatever the binding: the agent, the
body's size and media type, the caller, the version, limits and extensions, and how a
protocol message is read from JSON. JSON-RPC and HTTP+JSON differ only in where they find
each of these and how they answer."""

from __future__ import annotations

import asyncio
import codecs
import re
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from a2a.types import a2a_pb2 as pb
from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http import JsonResponse
from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage

from a2ahub import asyncdb, hops, nesting, numerals, tracing
from a2ahub.errors import (
    A2AError,
    AccessDenied,
    AuthenticationRequired,
    ContentTypeNotSupportedError,
    ExtensionSupportRequiredError,
    InvalidRequestError,
    JSONParseError,
    UnsupportedOperationError,
    VersionNotSupportedError,
    invalid_params,
)
from a2ahub.request import Request
from agents import audit
from agents.lookup import cached_agent, find_agent, why_absent
from agents.models import Agent
from agents.principals import (
    ANONYMOUS,
    DEFAULT_KEY_HEADER,
    Principal,
    authenticate_async,
    has_session_cookie,
    needs_credentials,
)
from protocol import file_bytes, limits, required_fields
from protocol.calls import Call
from protocol.method_table import Method
from tasks.wire import V03, V1

SUPPORTED_VERSIONS = (V03, V1)


class Rejection(Exception):
    """A request refused before the protocol begins, with its own HTTP status."""

    def __init__(self, status: int, error: A2AError) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error


class DatabaseThread(ThreadPoolExecutor):
    """The one thread a call's ORM work runs on, lent to one call at a time and kept for later
    calls: a thread started for each call held the event loop until it ran, and built Django's
    connection objects anew."""

    used = False  # since it was lent

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        self.used = True
        return super().submit(*args, **kwargs)


IDLE_THREADS = 16  # kept for later calls; past this, a thread ends with its call
_idle: list[DatabaseThread] = []  # shared by the loops of a process (gRPC's, the web's)


@asynccontextmanager
async def request_context() -> AsyncIterator[None]:
    """How every door runs a call's work: its statements on the loop's own connections
    (`a2ahub.asyncdb`), and its ORM calls on a thread no other call uses meanwhile (one
    shared thread would queue every call's ORM work), whose connection goes back when the
    call is done."""
    asyncdb.enabled.set(True)
    try:
        thread = _idle.pop()
    except IndexError:
        thread = DatabaseThread(1, "a2ahub-call-db")
    async with ThreadSensitiveContext() as context:
        # Lent, not given (`executor=`): a task the call started that outlives it (a turn
        # answered at once) then gets a thread from asgiref, as it did, rather than an error.
        SyncToAsync.context_to_thread_executor[context] = thread
        try:
            yield
        finally:
            # Taken back first: work the call's tasks hand over from now on goes elsewhere, so
            # none comes after the close and leaves a connection checked out on an idle thread.
            SyncToAsync.context_to_thread_executor.pop(context, None)
            try:
                if thread.used:
                    await asyncio.get_running_loop().run_in_executor(thread, close_old_connections)
            finally:
                thread.used = False
                if len(_idle) < IDLE_THREADS:
                    _idle.append(thread)  # (one not kept ends once collected)


async def agent_named(slug: str) -> Agent | None:
    agent = cached_agent(slug)
    if agent is False:
        agent = await sync_to_async(find_agent)(slug)
    return agent if isinstance(agent, Agent) else None


async def absence(slug: str) -> UnsupportedOperationError | None:
    """Why no agent answers at `slug` when an app knows (a registration that expired): the
    operation is not allowed while the agent is away, and the message says until when."""
    reason = await sync_to_async(why_absent)(slug)
    if reason is None:
        return None
    return UnsupportedOperationError(reason, data={"reason": "AGENT_UNAVAILABLE", "agent": slug})


async def tenant_agent(slug: str) -> Agent:
    """The agent a shared door's request names as its tenant, or why none answers there."""
    agent = await agent_named(slug)
    if agent is None:
        raise await absence(slug) or invalid_params(
            "tenant", f"no agent named {slug!r} is served here"
        )
    return agent


def raw_version(request: Request) -> str:
    return (request.headers.get("A2A-Version") or request.query.get("A2A-Version") or "").strip()


def major_minor(raw: str) -> str:
    return ".".join(raw.split(".")[:2])


def parse_version(raw: str, default: str = V03) -> str:
    """`Major.Minor` of a version header; an empty one is `default` (0.3, the version of
    clients that send none)."""
    if not raw:
        return default
    version = major_minor(raw)
    if version not in SUPPORTED_VERSIONS:
        raise VersionNotSupportedError(
            f"A2A version {raw!r} is not served here; use one of {', '.join(SUPPORTED_VERSIONS)}."
        )
    return version


def check_media(request: Request, media_hint: str) -> None:
    """A body must be JSON (its size was checked as it arrived: `protocol.asgi`)."""
    media = request.content_type.lower()
    if media != "application/json" and not media.endswith("+json"):
        raise Rejection(415, ContentTypeNotSupportedError(media_hint))


def decode_json(body: bytes) -> Any:
    try:
        # Strict UTF-8, JSON's encoding (RFC 8259 8.1): json.loads(bytes) would let bytes that
        # spell a surrogate through. A byte order mark is ignored, as json.loads did.
        return nesting.loads(body.removeprefix(codecs.BOM_UTF8).decode())
    except nesting.TooDeep as exc:
        # Valid JSON, perhaps, but no request of the protocol nests so deep.
        raise InvalidRequestError(str(exc)) from None
    except (ValueError, UnicodeDecodeError):
        raise JSONParseError("The body is not valid JSON.") from None


async def authenticate_caller(request: Request, agent: Agent) -> Principal:
    # An open agent asked without credentials needs no database, so no thread hop either.
    open_agent = not agent.security_schemes and not needs_credentials(agent)
    if (
        open_agent
        and DEFAULT_KEY_HEADER not in request.headers
        and "Authorization" not in request.headers
        and not has_session_cookie(request)
    ):
        return ANONYMOUS
    return await authenticate_async(request, agent)


def count_call(call: Call) -> None:
    """The audit log's count of who called with which credential (memory only: it is written
    in batches, off the request path)."""
    audit.note_use(call.agent, call.principal, call.binding, call.version)


def start_call(call: Call, method: Method) -> None:
    """What every binding does once the call is made: the audit count, the agent on the trace,
    and a streaming method refused when the agent does not stream."""
    count_call(call)
    tracing.note_agent(call.agent.slug, call.agent.pk, call.agent.name)
    if method.streaming and not call.agent.streaming:
        raise UnsupportedOperationError("This agent does not stream.")


def refused_caller(exc: AuthenticationRequired | AccessDenied) -> JsonResponse:
    """HTTP 401 (no usable credentials) or 403 (a caller who may not) before any protocol: a
    `google.rpc.Status` body, which both bindings read, and the challenge when there is one
    (a 401 always has one; a 403 when more token scopes would help)."""
    denied = isinstance(exc, AccessDenied)
    status = 403 if denied else 401
    code = "PERMISSION_DENIED" if denied else "UNAUTHENTICATED"
    body = {"error": {"code": status, "status": code, "message": exc.message}}
    response = JsonResponse(body, status=status)
    if exc.challenge:
        response["WWW-Authenticate"] = exc.challenge
    return response


def has_limits(agent: Agent) -> bool:
    return bool(agent.requests_per_minute or agent.max_concurrent_tasks or agent.max_message_bytes)


def check_limits(agent: Agent, principal: Principal, size: int, sending: bool) -> None:
    limits.check_size(agent, size)
    limits.check_rate(agent, principal.id)
    if sending:
        limits.check_concurrency(agent)


def check_extensions(headers: Mapping[str, str], agent: Agent, sending: bool) -> frozenset[str]:
    raw = headers.get("A2A-Extensions") or headers.get("X-A2A-Extensions") or ""
    declared = frozenset(uri.strip() for uri in raw.split(",") if uri.strip())
    if sending:
        for uri in required_extensions(agent):
            if uri not in declared:
                raise ExtensionSupportRequiredError(
                    f"This agent requires the extension {uri}; "
                    "declare it in the A2A-Extensions header."
                )
    return declared


def required_extensions(agent: Agent) -> list[str]:
    """The URIs of the extensions a caller must declare to send to `agent`."""
    return [str(ext.get("uri")) for ext in agent.declared_extensions() if ext.get("required")]


def check_hops(request: Request) -> int:
    """How many hubs the request has passed through (`A2A-Hub-Hops`, 0 without it); past
    A2A_MAX_HOPS it is refused: an agent reaching itself through other hubs ends here. A
    header read, no database."""
    raw = request.headers.get(hops.HEADER, "")
    if not raw:
        return 0
    try:
        count = hops.parse(raw)
    except hops.BadHops as exc:
        raise InvalidRequestError(f"{exc}.") from None
    limit = settings.A2A_MAX_HOPS
    if count > limit:
        raise InvalidRequestError(
            f"This request has passed through {count} hubs ({hops.HEADER}), more than the "
            f"limit of {limit} (A2A_MAX_HOPS): an agent that calls itself through other hubs?",
            data={"reason": "HOP_LIMIT", "hops": count, "limit": limit},
        )
    return count


def last_event_id(request: Request) -> int | None:
    """The event a re-attaching stream client saw last: one of our event ids (a sequence
    number, 0 to the largest bigint), or the request is refused as invalid params."""
    raw = request.headers.get("Last-Event-ID", "").strip()
    if not raw:
        return None
    sequence = numerals.whole_number(raw)
    if sequence is None:
        raise invalid_params("Last-Event-ID", "is not an event id this server sent")
    return sequence


def parse_message(params: dict[str, Any], message: ProtoMessage) -> Any:
    """A 1.0 request message from its JSON. Fields this version does not know are ignored;
    bad values never are, and the error names the field."""
    raws: list[tuple[int, bytes]] = []
    if isinstance(message, pb.SendMessageRequest):
        params, raws = file_bytes.taken_from(params)
    try:
        ParseDict(params, message)
    except ParseError as exc:
        if "has no field named" not in str(exc):
            raise invalid_params(failed_field(str(exc)), str(exc)) from None
        message.Clear()
        try:
            ParseDict(params, message, ignore_unknown_fields=True)
        except ParseError as again:
            raise invalid_params(failed_field(str(again)), str(again)) from None
    for index, data in raws:
        message.message.parts[index].raw = data
    required_fields.check(message)
    return message


def failed_field(problem: str) -> str:
    """The JSON name of the field a protobuf parse error names ("params" when none)."""
    match = re.search(r"Failed to parse (\w+) field", problem)
    if match is None:
        return "params"
    head, *rest = match.group(1).split("_")
    return head + "".join(part.title() for part in rest)
