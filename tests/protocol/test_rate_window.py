"""An agent's requests-per-minute limit counts the last sixty seconds, whenever a minute turns,
the same in one process (embedded) and across processes (Redis)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis
from django.test import override_settings

from protocol import limits

REDIS_URL = os.environ.get("REDIS_URL", "")
MINUTE = 1_800_000_000 // 60 * 60  # a time at which a minute turns


@pytest.fixture(params=["in memory", "in Redis"])
def key(request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"a2ahub:rate:test:{uuid.uuid4().hex}"
    if request.param == "in memory":
        with override_settings(REDIS_URL=""):
            yield name
        return
    if not REDIS_URL:
        pytest.skip("needs REDIS_URL (the real stack)")
    yield name
    redis.Redis.from_url(REDIS_URL).delete(name, f"{name}:other")


def test_a_caller_at_its_limit_before_a_minute_turns_is_still_refused_after(key: str) -> None:
    assert limits.take(key, 2, MINUTE - 0.5) is None
    assert limits.take(key, 2, MINUTE - 0.2) is None

    wait = limits.take(key, 2, MINUTE + 0.1)

    assert wait == pytest.approx(59.4)  # until the first of the two is a minute old


def test_a_place_comes_back_when_its_request_is_a_minute_old(key: str) -> None:
    assert limits.take(key, 2, MINUTE) is None
    assert limits.take(key, 2, MINUTE + 30) is None
    assert limits.take(key, 2, MINUTE + 59.9) is not None

    assert limits.take(key, 2, MINUTE + 60.1) is None
    assert limits.take(key, 2, MINUTE + 60.2) == pytest.approx(29.8)
    assert limits.take(key, 2, MINUTE + 90.1) is None


def test_a_refused_request_uses_no_place(key: str) -> None:
    assert limits.take(key, 1, MINUTE) is None
    for second in range(1, 60, 5):
        assert limits.take(key, 1, MINUTE + second) is not None

    assert limits.take(key, 1, MINUTE + 60.5) is None


def test_each_key_has_its_own_places(key: str) -> None:
    assert limits.take(key, 1, MINUTE) is None
    assert limits.take(key, 1, MINUTE + 1) is not None

    assert limits.take(f"{key}:other", 1, MINUTE + 1) is None
