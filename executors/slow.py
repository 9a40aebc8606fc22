"""A slow demo: works for the seconds it is asked (a number in the message), reporting
progress every step; cancelling stops it between steps."""

from __future__ import annotations

import asyncio
import re

from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

MAX_SECONDS = 600.0


def requested_seconds(text: str, default: float) -> float:
    match = re.search(r"\d+(?:\.\d+)?", text)
    seconds = float(match.group()) if match else default
    return min(max(seconds, 0.0), MAX_SECONDS)


class SlowExecutor(Executor):
    replies_with_messages = False

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        seconds = requested_seconds(context.text(), float(context.settings.get("seconds", 5)))
        step = float(context.settings.get("step", 1.0))
        await updater.start_work(f"Working for {seconds:g} seconds.")
        elapsed = 0.0
        while elapsed < seconds:
            pause = min(step, seconds - elapsed)
            await asyncio.sleep(pause)
            elapsed += pause
            await updater.report_progress(
                elapsed, seconds, f"{elapsed:g} of {seconds:g} seconds done."
            )
        await updater.add_artifact(
            f"Worked for {seconds:g} seconds.", name="result", last_chunk=True
        )
        await updater.complete()
