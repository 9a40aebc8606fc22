"""The conformance agent: behaves as the A2A TCK expects, chosen by the messageId's prefix
(`tck-<scenario>-<hex>`). The table is the kit's contract, scenario by scenario."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from a2a.types import a2a_pb2 as pb

from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

Scenario = Callable[[TaskUpdater], Awaitable[None]]


def file_part(**fields: object) -> pb.Part:
    return pb.Part(filename="output.txt", media_type="text/plain", **fields)  # type: ignore[arg-type]


def data_part(value: dict[str, object]) -> pb.Part:
    part = pb.Part()
    part.data.struct_value.update(value)
    return part


async def complete_task(u: TaskUpdater) -> None:
    await u.complete("Hello from TCK")


async def artifact(u: TaskUpdater, parts: list[pb.Part] | str, working: bool = False) -> None:
    if working:
        await u.start_work()
    await u.add_artifact(parts, name="tck-artifact", last_chunk=True)
    await u.complete()


async def chunked(u: TaskUpdater) -> None:
    await u.start_work()
    artifact_id = await u.add_artifact("chunk-1 ", name="chunked")
    await u.add_artifact("chunk-2", artifact_id=artifact_id, name="chunked", append=True,
                         last_chunk=True)  # fmt: skip
    await u.complete()


async def long_running(u: TaskUpdater) -> None:
    timeout = float(os.environ.get("TCK_STREAMING_TIMEOUT", "2"))
    await u.start_work("Working on it.")
    loop = asyncio.get_running_loop()
    end = loop.time() + 2 * timeout
    step = 0
    while loop.time() < end:
        await asyncio.sleep(0.5)
        step += 1
        await u.update_status(f"Progress {step}")
    await u.complete("Done.")


async def needs_input(u: TaskUpdater) -> None:
    await u.start_work()
    await u.require_input("Please provide more input.")


SCENARIOS: list[tuple[str, Scenario]] = [
    # Longer prefixes first: "tck-artifact-file-url" must not match "tck-artifact-file".
    ("tck-complete-task", complete_task),
    ("tck-artifact-text", lambda u: artifact(u, "Generated text content")),
    (
        "tck-artifact-file-url",
        lambda u: artifact(u, [file_part(url="https://example.com/output.txt")]),
    ),
    ("tck-artifact-file", lambda u: artifact(u, [file_part(raw=b"tck")])),
    ("tck-artifact-data", lambda u: artifact(u, [data_part({"key": "value", "count": 42})])),
    ("tck-message-response", lambda u: u.reply("Direct message response")),
    ("tck-input-required", lambda u: u.require_input("Please provide more input.")),
    ("tck-reject-task", lambda u: u.reject("Task rejected by the conformance agent.")),
    ("tck-stream-001", lambda u: artifact(u, "Stream hello from TCK", working=True)),
    ("tck-stream-002", lambda u: u.complete()),
    ("tck-stream-003", lambda u: artifact(u, "Stream task lifecycle", working=True)),
    ("tck-stream-artifact-text", lambda u: artifact(u, "Streamed text content", working=True)),
    ("tck-stream-artifact-file", lambda u: artifact(u, [file_part(raw=b"tck")], working=True)),
    ("tck-stream-artifact-chunked", chunked),
    ("tck-stream-ordering-001", lambda u: artifact(u, "Ordered output", working=True)),
    ("test-resubscribe-message-id", long_running),
]


def scenario_for(message_id: str) -> Scenario:
    for prefix, scenario in SCENARIOS:
        if message_id.startswith(prefix):
            return scenario
    return needs_input


class ConformanceExecutor(Executor):
    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        await scenario_for(context.message.message_id)(updater)
