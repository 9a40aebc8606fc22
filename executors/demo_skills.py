"""Python skills of the demo `toolbox` agent, and an example of how developers write them."""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import AsyncIterator

from a2a.types import a2a_pb2 as pb

from a2ahub import numerals
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
    digits = [n for w in context.text().split() if (n := numerals.whole_number(w)) is not None]
    start = min(digits[0] if digits else 3, 20)
    for n in range(start, 0, -1):
        yield Status(f"{n} to go")
        await asyncio.sleep(0.05)
        yield f"{n}\n"
    yield "lift-off\n"


# A story in five chunks, a pause after each: slow enough that a reader sees it arrive.
STORY = [
    "Once upon a time, an agent waited for a message.\n",
    "A message came, asking for a story.\n",
    "The agent wrote it one line at a time,\n",
    "so the reader could watch the words arrive,\n",
    "and then the story ended.\n",
]


@skill("demo.story")
async def story(context: RequestContext) -> AsyncIterator[str | Status]:
    """Streaming: five chunks of one artifact, a progress message before each."""
    pause = float(context.settings.get("story_pause", 0.5))
    for number, line in enumerate(STORY, start=1):
        yield Status(f"Writing line {number} of {len(STORY)}.")
        yield line
        # Each chunk goes out when the next one (or the end) comes: the pause is after it.
        await asyncio.sleep(pause)


@skill("demo.picture")
def picture(context: RequestContext) -> pb.Part:
    """A file: a small PNG drawn here, so the demo ships no binary of unknown origin."""
    return pb.Part(raw=draw_png(), media_type="image/png", filename="tiles.png")


def draw_png(size: int = 32, tile: int = 8) -> bytes:
    """A checkerboard of blue and orange tiles as an RGB PNG (signature, IHDR, IDAT, IEND)."""
    blue, orange = b"\x24\x57\xc5", b"\xf0\x8a\x24"
    rows = b"".join(
        b"\x00"  # filter type of the scanline: none
        + b"".join(blue if (x // tile + y // tile) % 2 else orange for x in range(size))
        for y in range(size)
    )
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        png_chunk(kind, data)
        for kind, data in ((b"IHDR", header), (b"IDAT", zlib.compress(rows)), (b"IEND", b""))
    )


def png_chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
