"""Process heartbeats: a process that beats is listed with its last beat, one that stopped
beating is not, in memory when embedded and in Redis when distributed."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from a2ahub import processes
from tests.helpers import eventually

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["embedded", "redis"])
def mode(request: pytest.FixtureRequest, settings: Any) -> Iterator[str]:
    if request.param == "redis":
        if not os.environ.get("REDIS_URL"):
            pytest.skip("needs REDIS_URL")
    else:
        settings.REDIS_URL = ""
    settings.TASK_HEARTBEAT_SECONDS = BEAT
    yield request.param
    processes.stop()


# Short, but long enough that a beat thread kept off the CPU a while by a busy machine (CI runs
# test processes side by side) misses no MISSED_BEATS of them.
BEAT = 0.25


def listed(kind: str) -> list[processes.Beat]:
    return [beat for beat in processes.live() if beat.id == f"{kind}:{processes.IDENTITY}"]


def test_a_beating_process_is_listed_with_its_latest_beat(mode: str) -> None:
    processes.start("console-test")
    first = listed("console-test")
    assert len(first) == 1 and first[0].pid == os.getpid()

    time.sleep(BEAT * 2.5)

    again = listed("console-test")
    assert len(again) == 1
    assert again[0].beat_at > first[0].beat_at
    assert again[0].started_at == first[0].started_at


def test_a_process_that_stopped_beating_is_no_longer_listed(mode: str) -> None:
    processes.record("console-gone", time.time())
    assert listed("console-gone")
    time.sleep(processes.MISSED_BEATS * BEAT + 0.2)
    assert not listed("console-gone")


def test_each_beat_runs_the_hooks_apps_added(mode: str) -> None:
    heard: list[float] = []

    def hook() -> None:
        heard.append(time.time())

    processes.on_beat.append(hook)
    try:
        processes.start("console-hooked")
        # Two beats, however long a busy machine keeps the beat thread waiting.
        assert eventually(lambda: len(heard) >= 2, timeout=10), heard
    finally:
        processes.on_beat.remove(hook)
