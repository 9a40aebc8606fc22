"""The `http` executor kind: each turn is POSTed as JSON to a backend the agent names.

An agent's `executor_settings` are `{"url": ..., "timeout": 30, "retries": 2}`. The request is
signed (`A2A-Hub-Signature`: an ES256 JWT binding the body's sha256, the task and the time,
verifiable with /.well-known/jwks.json) and goes through a2ahub.outbound, so the SSRF guard holds.
Connection errors and 5xx answers are retried with backoff. The backend answers with one JSON
object, a single reply message, or NDJSON events (progress, artifact chunks, then the final
state); docs/agents.md's "HTTP backends" section is the contract. Anything else fails the task
with a sentence saying why.

NDJSON is relayed live: the answer is read through `outbound.async_stream_post`, and each line
becomes a task update as soon as it arrives. Retries happen only before the answer's body is
read (a refused connection, a 5xx status), so no event is ever applied twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from google.protobuf.json_format import ParseDict, ParseError

from a2ahub import hops, outbound
from a2ahub.errors import InvalidAgentResponseError
from a2ahub.models import SigningKey
from a2ahub.signing import current_key, issuer, sign_with
from agents.validators import validate_callable_url
from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater
from tasks.wire import to_json

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "A2A-Hub-Signature"
NDJSON = "application/x-ndjson"
DEFAULT_TIMEOUT = 30.0
MIN_TIMEOUT, MAX_TIMEOUT = 0.1, 600.0
DEFAULT_RETRIES = 2
MAX_RETRIES = 5
CANCEL_TIMEOUT = 3.0
MAX_REPLY_BYTES = 4 * 1024 * 1024
BACKOFF_SECONDS = 0.25
# Retried: the backend was not reached, or said it could not answer now. A read timeout is
# not retried, since the backend may be working on the turn still.
RETRIED_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout)

Finisher = Callable[[TaskUpdater, Any], Awaitable[None]]
FINISHERS: dict[str, Finisher] = {
    "completed": TaskUpdater.complete,
    "input-required": TaskUpdater.require_input,
    "auth-required": TaskUpdater.require_auth,
    "failed": TaskUpdater.fail,
    "rejected": TaskUpdater.reject,
}


class BackendError(InvalidAgentResponseError):
    """The backend could not be reached, refused the turn, or answered something unusable."""


def describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def invalid(problem: str) -> BackendError:
    return BackendError(f"The backend's reply is not valid: {problem}.")


# -- settings --------------------------------------------------------------------------------


def backend_url(settings: dict[str, Any]) -> str:
    url = settings.get("url")
    if not isinstance(url, str) or not url:
        raise BackendError("This agent has no backend URL (executor_settings.url).")
    return url


def is_number(value: Any, kinds: tuple[type, ...] = (int, float)) -> bool:
    return isinstance(value, kinds) and not isinstance(value, bool)  # JSON's true is no number


def timeout_of(settings: dict[str, Any]) -> float:
    value = settings.get("timeout", DEFAULT_TIMEOUT)
    if not is_number(value):
        return DEFAULT_TIMEOUT
    return min(max(float(value), MIN_TIMEOUT), MAX_TIMEOUT)


def retries_of(settings: dict[str, Any]) -> int:
    value = settings.get("retries", DEFAULT_RETRIES)
    if not is_number(value, (int,)):
        return DEFAULT_RETRIES
    return min(max(value, 0), MAX_RETRIES)


# -- the request -----------------------------------------------------------------------------


def request_body(context: RequestContext) -> dict[str, Any]:
    metadata = context.message.metadata
    return {
        "taskId": context.task_id,
        "contextId": context.context_id,
        "message": to_json(context.message),
        "history": [to_json(message) for message in context.history],
        "skill": str(metadata["skillId"]) if "skillId" in metadata else None,
        "protocolVersion": context.protocol_version,
    }


@dataclass(frozen=True)
class Backend:
    """Where one task's turn goes, and the key its requests are signed with. The key is loaded
    when the turn starts, so a cancel (which may run where the database is out of reach) can
    sign without a query."""

    url: str
    task_id: str
    key: SigningKey
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    hops: int = 1  # the A2A-Hub-Hops this turn's calls carry (a2ahub.hops)

    def headers(self, body: bytes) -> dict[str, str]:
        signature = sign_with(
            self.key, body, uuid.uuid4().hex, self.task_id, issuer(), audience=self.url
        )
        return {"Content-Type": "application/json", SIGNATURE_HEADER: signature,
                hops.HEADER: str(self.hops)}  # fmt: skip

    async def post(self, body: bytes, timeout: float) -> outbound.Response:
        return await outbound.async_post(self.url, content=body, headers=self.headers(body),
                                         timeout=timeout, max_bytes=MAX_REPLY_BYTES)  # fmt: skip

    @asynccontextmanager
    async def call(self, body: bytes) -> AsyncIterator[outbound.StreamingResponse]:
        """The backend's successful answer, still arriving, after retrying what is worth
        retrying; reading it raises BackendError for a broken, late or oversized body."""
        async with AsyncExitStack() as stack:
            response = await self.open(body, stack)
            try:
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    raise BackendError(
                        f"The backend answered HTTP {response.status_code}: {text[:200]}"
                    )
                yield response
            except (outbound.ResponseTooLarge, httpx.HTTPError) as exc:
                raise BackendError(f"The backend call failed: {describe(exc)}.") from exc

    async def open(self, body: bytes, stack: AsyncExitStack) -> outbound.StreamingResponse:
        """Retries until an answer below 500 comes; it stays open until `stack` closes. No
        byte of the body is read here, so nothing is applied before the last retry."""
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
            async with AsyncExitStack() as this_attempt:
                try:
                    response = await this_attempt.enter_async_context(
                        outbound.async_stream_post(
                            self.url, content=body, headers=self.headers(body),
                            timeout=self.timeout, max_bytes=MAX_REPLY_BYTES,
                        )
                    )  # fmt: skip
                except RETRIED_ERRORS as exc:
                    problem = f"the backend could not be reached ({describe(exc)})"
                    continue
                except (outbound.UnsafeURL, httpx.HTTPError) as exc:
                    raise BackendError(f"The backend call failed: {describe(exc)}.") from exc
                if response.status_code < 500:
                    stack.push_async_exit(this_attempt.pop_all())
                    return response
                problem = f"the backend answered HTTP {response.status_code}"
        raise BackendError(
            f"The backend call failed after {self.retries + 1} attempt(s): {problem}."
        )


async def backend_for(context: RequestContext) -> Backend:
    settings = context.settings
    key = await sync_to_async(current_key)()
    return Backend(backend_url(settings), context.task_id, key, timeout_of(settings),
                   retries_of(settings), hops.of(context.metadata) + 1)  # fmt: skip


# -- the reply -------------------------------------------------------------------------------


def parse_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise invalid(f"not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise invalid(f"a JSON {type(value).__name__}, not an object")
    return value


def parts_of(item: Any) -> list[pb.Part]:
    """The parts of an artifact or chunk: `parts` (A2A 1.0 parts), `text`, or `data`."""
    if not isinstance(item, dict):
        raise invalid("an artifact is not an object")
    try:
        if isinstance(item.get("parts"), list):
            return [ParseDict(part, pb.Part()) for part in item["parts"]]
        if isinstance(item.get("text"), str):
            return [pb.Part(text=item["text"])]
        if "data" in item:
            return [ParseDict({"data": item["data"], "mediaType": "application/json"}, pb.Part())]
    except (ParseError, TypeError, ValueError) as exc:
        raise invalid(f"an artifact's parts do not parse ({exc})") from exc
    raise invalid('an artifact has no "text", "data" or "parts"')


def optional_text(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise invalid(f'"{field}" is not a string')


async def finish(updater: TaskUpdater, reply: dict[str, Any]) -> None:
    """The final object: artifacts (each whole), then the state with its message."""
    state = reply.get("state", "completed")
    finisher = FINISHERS.get(state) if isinstance(state, str) else None
    if finisher is None:
        raise invalid(f"unknown state {state!r} (one of {', '.join(FINISHERS)})")
    message = optional_text(reply.get("message"), "message")
    artifacts = reply.get("artifacts") or []
    if not isinstance(artifacts, list):
        raise invalid('"artifacts" is not a list')
    for artifact in artifacts:
        name = optional_text(artifact.get("name") if isinstance(artifact, dict) else "", "name")
        await updater.add_artifact(parts_of(artifact), name=name or "", last_chunk=True)
    await finisher(updater, message)


async def answer(updater: TaskUpdater, reply: dict[str, Any]) -> None:
    if "reply" in reply:
        text = reply["reply"]
        if not isinstance(text, str):
            raise invalid('"reply" is not a string')
        await updater.reply(text)
        return
    await updater.start_work()
    await finish(updater, reply)


class Chunks:
    """The chunks of the one artifact a stream builds: the first makes it, the rest append."""

    def __init__(self) -> None:
        self.artifact_id = ""

    async def add(self, updater: TaskUpdater, chunk: Any) -> None:
        parts = parts_of(chunk)
        name = optional_text(chunk.get("name"), "name") or "result"
        self.artifact_id = await updater.add_artifact(
            parts, artifact_id=self.artifact_id, name=name, append=bool(self.artifact_id),
            last_chunk=bool(chunk.get("lastChunk")),
        )  # fmt: skip


async def stream(updater: TaskUpdater, batches: AsyncIterator[list[str]]) -> None:
    """NDJSON events in order: {"status"}, {"artifact"}, and a final {"state", "message"}.

    Each batch is the lines one network read completed: they are applied, then written (one
    flush) before the next read waits on the backend, so every event is stored as soon as it
    arrives. The rest of the answer is not read after the final state."""
    await updater.start_work()
    chunks = Chunks()
    async for batch in batches:
        for raw in batch:
            line = raw.strip()
            if line and await apply(updater, chunks, line):
                return
        await updater.flush()
    raise invalid("the stream ended without a final state")


async def apply(updater: TaskUpdater, chunks: Chunks, line: str) -> bool:
    """Apply one NDJSON event; True once it was the final state."""
    event = parse_object(line)
    if "artifact" in event:
        await chunks.add(updater, event["artifact"])
    elif "status" in event:
        await updater.update_status(optional_text(event["status"], "status"))
    elif "state" in event:
        await finish(updater, event)
        return True
    else:
        raise invalid(f"an event with none of status, artifact or state: {line[:100]}")
    return False


def validate_http_settings(settings: dict[str, Any]) -> None:
    url = settings.get("url")
    if not isinstance(url, str) or not url:
        raise ValidationError('Name the backend: {"url": "https://..."}.')
    validate_callable_url(url, "executor_settings.url: the hub may not call this backend URL")
    timeout = settings.get("timeout", DEFAULT_TIMEOUT)
    if not is_number(timeout) or not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
        raise ValidationError(
            f'"timeout" is a number of seconds from {MIN_TIMEOUT} to {MAX_TIMEOUT}.'
        )
    retries = settings.get("retries", DEFAULT_RETRIES)
    if not is_number(retries, (int,)) or not 0 <= retries <= MAX_RETRIES:
        raise ValidationError(f'"retries" is a whole number from 0 to {MAX_RETRIES}.')


class HttpExecutor(Executor):
    check_settings = staticmethod(validate_http_settings)
    backend: Backend | None = None

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        self.backend = await backend_for(context)
        body = json.dumps(request_body(context)).encode()
        async with self.backend.call(body) as response:
            content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type == NDJSON:
                await stream(updater, response.aiter_line_batches())
            else:
                text = (await response.aread()).decode("utf-8", errors="replace")
                await answer(updater, parse_object(text))

    async def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Tell the backend, once and briefly; the turn stops whatever it answers."""
        if self.backend is None:
            return  # the backend has not been called yet
        body = json.dumps({"cancel": context.task_id}).encode()
        try:
            await self.backend.post(body, CANCEL_TIMEOUT)
        except Exception as exc:  # the task is canceled already; the backend may be gone
            logger.info("cancel of task %s not delivered to its backend: %s", context.task_id, exc)
