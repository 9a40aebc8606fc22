"""A request with a large body is read and answered on a thread, so the event loop serves
other requests meanwhile; a small one stays on the loop, where a thread hop costs more than
the work."""

from __future__ import annotations

import threading

import pytest
from pytest_django.fixtures import Settings

from a2ahub.big_bodies import off_loop

pytestmark = pytest.mark.anyio


async def test_work_on_a_large_body_runs_on_a_thread_and_on_a_small_one_on_the_loop(
    settings: Settings,
) -> None:
    settings.A2A_THREAD_BODY_BYTES = 1000
    loop_thread = threading.get_ident()

    small = await off_loop(1000, threading.get_ident)
    large = await off_loop(1001, threading.get_ident)

    assert small == loop_thread
    assert large != loop_thread
