"""The receiver drill of issue #30, not in `make test` (`make drill-receiver-back`): a webhook
receiver answers 503 for three minutes while tasks with webhooks keep coming (one every
DRILL_EVERY_SECONDS), on the distributed hub with the default retry schedule; then it answers
again. Measured: when each config's last event arrived, counted from the receiver's return.
Asserted: every event of every config arrives once, in order, the last within 30 s.

DRILL_OUTAGE_SECONDS shortens the outage for a quick try.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator

import pytest

from tests.integration.stack import Hub, hub_of_its_own
from tests.integration.test_push_real_stack import (
    send_with_webhook,
    sequences,
    wait_until_all_delivered,
)
from tests.push.receiver import Behaviour, Receiver

pytestmark = pytest.mark.integration

OUTAGE_SECONDS = float(os.environ.get("DRILL_OUTAGE_SECONDS", "180"))
EVERY_SECONDS = float(os.environ.get("DRILL_EVERY_SECONDS", "5"))
BOUND_SECONDS = 30.0


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The default retry schedule; loopback webhooks allowed, nothing else changed."""
    env = {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"}
    with hub_of_its_own("a2ahub_drill", tmp_path_factory.mktemp("drill-hub"), env) as running:
        yield running


@pytest.mark.timeout(OUTAGE_SECONDS + 600)
def test_a_receiver_back_after_three_minutes_gets_its_backlog_within_30_s(hub: Hub) -> None:
    receiver = Receiver(Behaviour(fail_first=10**9, fail_status=503))
    tasks: list[str] = []
    try:
        ends = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < ends:
            tasks.append(send_with_webhook(hub, f"{receiver.url}/{len(tasks)}"))
            time.sleep(max(0.0, min(EVERY_SECONDS, ends - time.monotonic())))
        back = time.monotonic()
        receiver.behaviour = Behaviour()
        rows = [wait_until_all_delivered(hub, t, OUTAGE_SECONDS + 300) for t in tasks]
        accepted = receiver.accepted()
    finally:
        receiver.down()

    last: dict[int, float] = {}
    for n, task_id in enumerate(tasks):
        got = [r for r in accepted if r.path.endswith(f"/{n}")]
        assert sequences(hub, task_id, got) == list(range(1, len(rows[n]) + 1))
        last[n] = max(r.at for r in got) - back
    failed = sum(r.status == 503 for r in receiver.requests)
    print(
        f"\n{len(tasks)} configs, {len(accepted)} deliveries, {failed} attempts refused in "
        f"{OUTAGE_SECONDS:g} s; after the return: last delivery {max(last.values()):.1f} s, "
        f"median config's last {statistics.median(last.values()):.1f} s"
    )
    assert max(last.values()) < BOUND_SECONDS
