"""Python skills of the demo `toolbox` agent, and an example of how developers write them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from executors.python import InputRequired, Status, skill
from tasks.executor import RequestContext


@skill("demo.reverse")
def reverse(context: RequestContext) -> str:
    """Sync: the text, backwards."""
    text = context.text()
    if not text.strip():
        raise InputRequired("What should I reverse?")
    return text[::-1]


@skill("demo.word_count")
async def word_count(context: RequestContext) -> dict[str, int]:
    """Async: counts, as data."""
    words = context.text().split()
    return {"words": len(words), "characters": len(context.text())}


@skill("demo.countdown")
async def countdown(context: RequestContext) -> AsyncIterator[str | Status]:
    """Streaming: one line per step, with progress in between."""
    digits = [int(d) for d in context.text().split() if d.isdigit()]
    start = min(digits[0] if digits else 3, 20)
    for n in range(start, 0, -1):
        yield Status(f"{n} to go")
        await asyncio.sleep(0.05)
        yield f"{n}\n"
    yield "lift-off\n"
