"""A multi-turn demo: the first turn asks a question, the next one answers with what it heard."""

from __future__ import annotations

from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

DEFAULT_QUESTION = "What is your name?"


class InterviewExecutor(Executor):
    replies_with_messages = False

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        question = str(context.settings.get("question", DEFAULT_QUESTION))
        if not context.is_continuation:
            await updater.require_input(question)
            return
        answer = context.text().strip()
        if not answer:
            await updater.require_input(f"I did not catch that. {question}")
            return
        await updater.start_work()
        await updater.add_artifact(f"Nice to meet you, {answer}!", name="greeting", last_chunk=True)
        await updater.complete(f"Thanks, {answer}.")
