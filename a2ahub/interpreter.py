"""How a long-lived process (web, worker, gRPC) sets up the interpreter before it serves.

Two settings keep its event loop answering while other work runs:

- What the process loaded at start-up (Django, the SDK's protobuf types, the apps: a few
  hundred thousand objects) is frozen out of the garbage collector. A full collection walked
  all of it, and each held every request of the process for about 150 ms; now it walks only
  what was made since.
- A thread running Python (a big body converted off the loop, `a2ahub.big_bodies`) is asked
  to hand the GIL back every 0.5 ms rather than Python's 5 ms. Each time the loop wakes it
  takes the GIL again, so a request served while such a thread runs waited 5 ms at each of
  its many turns: `/healthz` took 175 ms beside a data part of 100,000 strings, 57 ms now
  (`bench/big_bodies.py`). With one thread alone nothing changes.

With LOOP_HOLD_LOG_MS set, a web process logs each callback that holds its loop longer
(`watch_loop_holds`): how to find what made the process's requests wait.
"""

from __future__ import annotations

import asyncio
import gc
import sys

SWITCH_SECONDS = 0.0005


def settle() -> None:
    """Call once the process has loaded what it serves with, before it serves."""
    sys.setswitchinterval(SWITCH_SECONDS)
    gc.collect()
    gc.freeze()


def watch_loop_holds(milliseconds: int) -> None:
    """Log each callback that holds this process's event loop (the one it serves on, made
    already) longer than `milliseconds`: asyncio's debug mode, which costs CPU."""
    loop = asyncio.get_event_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = milliseconds / 1000
