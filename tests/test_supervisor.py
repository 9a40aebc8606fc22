"""What `runhub` does when a process it started dies: when it starts it again (a pause that
doubles with each quick death, up to 30 s, forgotten after a steady run), and that a stop ends
every child. Real child processes; the clock is the one the supervisor is handed."""

from __future__ import annotations

import signal
import sys

from a2ahub.supervisor import MAX_DELAY, STEADY_AFTER, Child, Supervisor, restart_delay


def exits_at_once(code: int = 3) -> list[str]:
    return [sys.executable, "-c", f"raise SystemExit({code})"]


def test_the_pause_before_a_restart_doubles_from_one_second_up_to_thirty() -> None:
    assert [restart_delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 30, 30, 30]
    assert restart_delay(1000) == MAX_DELAY  # a long crash loop neither overflows nor spins


def test_a_child_that_keeps_dying_at_once_waits_longer_each_time() -> None:
    child = Child("worker", exits_at_once())
    pauses = []
    now = 0.0
    for _ in range(7):
        child.started_at = now
        now += 0.5  # it dies half a second after each start
        pauses.append(child.died(now))
        now = child.start_at
    assert pauses == [1, 2, 4, 8, 16, 30, 30]


def test_a_child_that_ran_steadily_before_it_died_starts_again_after_a_second() -> None:
    child = Child("web", exits_at_once(), started_at=0.0, quick_deaths=6)
    assert child.died(STEADY_AFTER + 1) == 1
    assert child.start_at == STEADY_AFTER + 2


def test_a_dead_child_is_reaped_and_started_again_once_its_pause_is_over() -> None:
    child = Child("beat", exits_at_once())
    supervisor = Supervisor([child])
    supervisor.look_after(now=0.0)
    first = child.popen
    assert first is not None
    first.wait(timeout=30)

    supervisor.look_after(now=0.5)  # it died: reaped (no zombie), not started yet
    assert child.popen is None and first.returncode == 3
    assert child.start_at == 1.5
    supervisor.look_after(now=1.4)
    assert child.popen is None
    supervisor.look_after(now=1.5)
    assert child.popen is not None and child.popen.pid != first.pid
    child.popen.wait(timeout=30)


def test_stopping_ends_every_child_with_sigterm_and_starts_none_again() -> None:
    sleeps = [sys.executable, "-c", "import time; time.sleep(60)"]
    children = [Child(f"child {n}", sleeps) for n in (1, 2)]
    supervisor = Supervisor(children)
    supervisor.look_after(now=0.0)
    running = [c.popen for c in children]

    supervisor.request_stop(signal.SIGTERM, None)
    supervisor.stop_all()
    supervisor.look_after(now=100.0)

    assert [p.returncode for p in running if p is not None] == [-signal.SIGTERM] * 2
    assert [c.popen for c in children] == [None, None]  # reaped, and none started anew
