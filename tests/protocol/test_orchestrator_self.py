"""An orchestrator that lists itself does not call itself: its own entry is answered with an
error at once (each call would start a turn that calls itself again, once per listing)."""

from __future__ import annotations

import pytest

from tests.factories.agents import make_agent
from tests.factories.versions import V1
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_orchestrator_listing_itself_fails_without_calling_itself(caller: Caller) -> None:
    make_agent("conductor", executor_kind="orchestrator",
               executor_settings={"agents": ["conductor", "conductor"]})  # fmt: skip

    task = caller.send("conductor", V1, text="loop?")

    assert task["status"]["state"] == "TASK_STATE_FAILED"
    text = task["status"]["message"]["parts"][0]["text"]
    assert text == (
        "conductor: an orchestrator does not ask itself; "
        "conductor: an orchestrator does not ask itself"
    )
