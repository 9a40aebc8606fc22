"""Keeping the processes `runhub` starts alive: each child that dies is logged and started
again after a pause that doubles with every quick death (1 s up to 30 s) and is forgotten once
the child has run a while; SIGTERM or SIGINT stops them all.

Without it a SIGKILLed daphne took beat and the workers down with `runhub` (no recovery ran
for anyone), and a SIGKILLed worker stayed a zombie until the whole hub was restarted.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

FIRST_DELAY = 1.0
MAX_DELAY = 30.0
# A child that ran this long before it died is not crash-looping: it starts again at once
# (after FIRST_DELAY), whatever happened to it before.
STEADY_AFTER = 60.0
# How often children are looked at: a dead one is noticed within this, and the loop costs
# nothing measurable in between.
POLL_SECONDS = 0.2
# How long children have to end after SIGTERM before they are killed (a worker finishes the
# turns it runs; a turn longer than this is failed by recovery in another process).
STOP_TIMEOUT = 30.0


def restart_delay(quick_deaths: int) -> float:
    """The pause before starting a child that died `quick_deaths` times in a row without
    running STEADY_AFTER seconds: 1, 2, 4, 8, 16, 30, 30, ... seconds."""
    return min(MAX_DELAY, FIRST_DELAY * 2 ** max(0, quick_deaths - 1))


@dataclass
class Child:
    """One process to keep running, and its history of deaths (times are `time.monotonic`)."""

    name: str
    command: list[str]
    env: dict[str, str] | None = None  # over this process's own
    popen: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    quick_deaths: int = 0
    start_at: float = 0.0  # when to start it (again)

    def died(self, now: float) -> float:
        """Count a death at `now` and plan the next start; the pause before it."""
        ran = now - self.started_at
        self.quick_deaths = 1 if ran >= STEADY_AFTER else self.quick_deaths + 1
        delay = restart_delay(self.quick_deaths)
        self.start_at = now + delay
        self.popen = None
        return delay


@dataclass
class Supervisor:
    children: list[Child]
    stopping: bool = False

    def run(self) -> int:
        """Start every child and keep them running until SIGTERM or SIGINT; then stop them
        all. The exit status (0: stopped as asked)."""
        previous = {sig: signal.signal(sig, self.request_stop) for sig in STOP_SIGNALS}
        try:
            while not self.stopping:
                self.look_after(time.monotonic())
                time.sleep(POLL_SECONDS)
        finally:
            self.stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return 0

    def request_stop(self, signum: int, _frame: Any) -> None:
        self.stopping = True

    def look_after(self, now: float) -> None:
        """Notice the children that died and start those whose pause is over."""
        for child in self.children:
            if child.popen is not None and (code := child.popen.poll()) is not None:
                pid = child.popen.pid
                delay = child.died(now)
                logger.error(
                    "%s (pid %s) exited with %s; starting it again in %g s",
                    child.name, pid, describe_exit(code), delay,
                )  # fmt: skip
            if child.popen is None and now >= child.start_at and not self.stopping:
                self.start(child, now)

    def start(self, child: Child, now: float) -> None:
        try:
            env = os.environ | child.env if child.env else None
            child.popen = subprocess.Popen(child.command, env=env)
        except OSError as exc:
            delay = child.died(now)
            logger.error("%s could not start (%s); trying again in %g s", child.name, exc, delay)
            return
        child.started_at = now
        if child.quick_deaths:
            logger.warning("%s started again (pid %s)", child.name, child.popen.pid)

    def stop_all(self) -> None:
        stop([c.popen for c in self.children if c.popen is not None])


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each, then wait for them all (STOP_TIMEOUT together); SIGKILL the rest."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            logger.error("pid %s did not stop within %g s; killing it", process.pid, STOP_TIMEOUT)
            process.kill()
            process.wait()


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"
