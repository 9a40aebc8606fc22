"""An outage of a service is logged once when an attempt first fails and once when one
succeeds again, with how long the service was away, however many attempts failed between."""

from __future__ import annotations

import logging
import sys

import pytest
from django.conf import settings
from django.db import OperationalError

from a2ahub import outages
from a2ahub.logs import OutagesFilter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def redis(clock: Clock) -> outages.Outage:
    return outages.Outage("Redis at 127.0.0.1:6379", clock)


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "a2ahub.outages"]


def test_an_outage_is_one_line_when_it_begins_and_one_when_it_ends(
    redis: outages.Outage, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2ahub.outages")
    redis.answered()  # nothing to say while it answers
    for _ in range(1000):
        redis.failed(ConnectionError("Connection refused"))
        clock.now += 0.02
    redis.answered()
    redis.answered()

    assert lines(caplog) == [
        "Redis at 127.0.0.1:6379 is unavailable (ConnectionError: Connection refused); "
        "logged again when it answers",
        "Redis at 127.0.0.1:6379 answers again after 20.0 s away (1000 failed attempts meanwhile)",
    ]
    assert {r.levelname for r in caplog.records if r.name == "a2ahub.outages"} == {"WARNING"}


def test_each_outage_after_the_first_is_logged_again(
    redis: outages.Outage, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2ahub.outages")
    redis.failed("could not publish 3 messages")
    clock.now += 1.5
    redis.answered()
    clock.now += 60
    redis.failed(TimeoutError())
    assert redis.began is not None
    clock.now += 0.3
    redis.answered()

    assert lines(caplog) == [
        "Redis at 127.0.0.1:6379 is unavailable (could not publish 3 messages); "
        "logged again when it answers",
        "Redis at 127.0.0.1:6379 answers again after 1.5 s away (1 failed attempt meanwhile)",
        "Redis at 127.0.0.1:6379 is unavailable (TimeoutError); logged again when it answers",
        "Redis at 127.0.0.1:6379 answers again after 0.3 s away (1 failed attempt meanwhile)",
    ]
    assert redis.began is None


def test_the_hooks_run_once_when_an_outage_begins_and_a_failing_one_is_logged(
    redis: outages.Outage, caplog: pytest.LogCaptureFixture
) -> None:
    called: list[str] = []
    redis.on_began.append(lambda: called.append("drain"))
    redis.on_began.append(lambda: 1 / 0)
    redis.failed("away")
    redis.failed("still away")

    assert called == ["drain"]
    assert [r.levelname for r in caplog.records if r.exc_info and r.name == "a2ahub.outages"] == [
        "ERROR"
    ]


def test_a_service_has_one_outage_in_the_process() -> None:
    assert outages.of("Redis at example:6379") is outages.of("Redis at example:6379")
    assert outages.of("the database") is not outages.of("Redis at example:6379")


def test_a_job_failing_for_want_of_the_database_is_an_info_line_of_the_outage() -> None:
    """Celery logs each job's failure with its traceback: while the database is away that
    would be one ERROR a tick for each periodic job."""
    try:
        raise OperationalError("couldn't get a connection after 10.00 sec")
    except OperationalError:
        away = logging.LogRecord("celery.app.trace", logging.ERROR, __file__, 1, "Task x raised",
                                 None, sys.exc_info())  # fmt: skip
    try:
        raise ValueError("a bug")
    except ValueError:
        bug = logging.LogRecord("celery.app.trace", logging.ERROR, __file__, 1, "Task y raised",
                                None, sys.exc_info())  # fmt: skip
    try:
        assert OutagesFilter().filter(away) and OutagesFilter().filter(bug)
        assert outages.DATABASE.began is not None
    finally:
        outages.DATABASE.answered()

    assert (away.levelname, away.exc_info) == ("INFO", None)
    assert bug.levelname == "ERROR" and bug.exc_info is not None


def test_a_failure_raised_from_an_outage_is_one_info_line_of_it() -> None:
    """Beat wraps the broker's error in its own, and writes the stack into its message."""
    try:
        try:
            raise OperationalError("the database system is starting up")
        except OperationalError as exc:
            raise RuntimeError("Couldn't apply scheduled task recovery") from exc
    except RuntimeError:
        args = ("Couldn't apply", "  File x, line 1")
        record = logging.LogRecord("celery.beat", logging.ERROR, __file__, 1,
                                   "Message Error: %s\n%s", args, sys.exc_info())  # fmt: skip
    try:
        OutagesFilter().filter(record)
    finally:
        outages.DATABASE.answered()

    assert (record.levelname, record.getMessage(), record.exc_info) == (
        "INFO", "Message Error: Couldn't apply", None,
    )  # fmt: skip


@pytest.mark.parametrize(
    "name", [name for name, config in settings.LOGGING["loggers"].items()
             if "outages" in config.get("filters", [])]
)  # fmt: skip
def test_the_loops_and_jobs_that_retry_log_an_outage_not_a_traceback_a_try(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=name)
    try:
        try:
            raise OperationalError("connection refused")
        except OperationalError:
            logging.getLogger(name).exception("trying again")
    finally:
        outages.DATABASE.answered()

    [record] = [r for r in caplog.records if r.name == name]
    assert (record.levelname, record.exc_info) == ("INFO", None)
