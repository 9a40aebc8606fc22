"""The echo agent: completes with one artifact that repeats every part it was sent.

With the setting `chunks` above 1 the artifact comes in that many chunks (`append`, then
`lastChunk`), each repeating the parts: what a streaming client sees of an agent that writes
its answer piece by piece, without waiting between pieces.
"""

from __future__ import annotations

from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

MAX_CHUNKS = 100


def chunk_count(settings: dict[str, object]) -> int:
    raw = settings.get("chunks", 1)
    return max(1, min(MAX_CHUNKS, raw)) if isinstance(raw, int) else 1


class EchoExecutor(Executor):
    replies_with_messages = False

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        await updater.start_work()
        chunks = chunk_count(context.settings)
        artifact_id = ""
        for index in range(1, chunks + 1):
            artifact_id = await updater.add_artifact(
                list(context.message.parts), artifact_id=artifact_id, name="echo",
                append=index > 1, last_chunk=index == chunks,
            )  # fmt: skip
        await updater.complete()
