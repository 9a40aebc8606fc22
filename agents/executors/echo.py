"""The echo agent: completes with one artifact that repeats every part it was sent."""

from __future__ import annotations

from agents.executors.base import Executor, RequestContext
from tasks.updater import TaskUpdater


class EchoExecutor(Executor):
    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        await updater.start_work()
        await updater.add_artifact(list(context.message.parts), name="echo", last_chunk=True)
        await updater.complete()
