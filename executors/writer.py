"""A writer demo: streams a long text in chunks of one artifact, with progress messages."""

from __future__ import annotations

import asyncio

from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

PARAGRAPHS = [
    "Agents talk to agents the way people pass notes in a meeting: briefly, with context.",
    "Each note is a message; each piece of work a task with a life of its own.",
    "Some tasks finish at once; others stream their results as they are written.",
    "A stream that breaks can be picked up again from the last event its reader saw.",
    "And when the work is done, the task says so, and the stream closes.",
]


class WriterExecutor(Executor):
    replies_with_messages = False

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        topic = context.text().strip() or "agents"
        chunks = [f"On {topic}.\n\n", *(p + "\n\n" for p in PARAGRAPHS)]
        delay = float(context.settings.get("delay", 0.2))
        await updater.start_work(f"Writing {len(chunks)} paragraphs on {topic}.")
        artifact_id = ""
        for index, chunk in enumerate(chunks, start=1):
            await asyncio.sleep(delay)
            artifact_id = await updater.add_artifact(
                chunk, artifact_id=artifact_id, name="essay", append=index > 1,
                last_chunk=index == len(chunks),
            )  # fmt: skip
            await updater.update_status(f"{index} of {len(chunks)} paragraphs written.")
        await updater.complete("The essay is done.")
