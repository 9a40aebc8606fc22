"""The retention settings: their defaults, and a bad value stops start-up naming the variable
(a task kept no longer than the push retry horizon too: its webhooks may still be retrying)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_settings import load_settings

PRINT_RETENTION = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.TASK_RETENTION_DAYS, s.PUSH_DELIVERY_RETENTION_DAYS, s.RETENTION_BATCH_SIZE)"
)


def test_tasks_are_kept_forever_and_deliveries_a_week_unless_told(tmp_path: Path) -> None:
    result = load_settings(tmp_path, PRINT_RETENTION)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 7 200"


def test_the_settings_are_read_from_the_environment(tmp_path: Path) -> None:
    result = load_settings(
        tmp_path, PRINT_RETENTION, TASK_RETENTION_DAYS="90", PUSH_DELIVERY_RETENTION_DAYS="0",
        RETENTION_BATCH_SIZE="50",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "90 0 50"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TASK_RETENTION_DAYS", "thirty",
         "TASK_RETENTION_DAYS must be a whole number, not 'thirty'"),
        ("TASK_RETENTION_DAYS", "-1", "TASK_RETENTION_DAYS must be between 0 and 36500, not -1"),
        ("PUSH_DELIVERY_RETENTION_DAYS", "7d",
         "PUSH_DELIVERY_RETENTION_DAYS must be a whole number, not '7d'"),
        ("RETENTION_BATCH_SIZE", "0", "RETENTION_BATCH_SIZE must be between 1 and 10000, not 0"),
        ("TASK_RETENTION_DAYS", "1",
         "TASK_RETENTION_DAYS (1) must be longer than PUSH_RETRY_HORIZON_SECONDS (86400 seconds)"),
    ],
)  # fmt: skip
def test_a_bad_value_stops_start_up_naming_the_variable(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    result = load_settings(tmp_path, **{name: value})

    assert result.returncode != 0
    assert result.stderr.splitlines()[-1] == (
        f"django.core.exceptions.ImproperlyConfigured: {message}"
    )


def test_a_day_is_enough_once_the_retry_horizon_is_shorter(tmp_path: Path) -> None:
    result = load_settings(
        tmp_path, PRINT_RETENTION, TASK_RETENTION_DAYS="1", PUSH_RETRY_HORIZON_SECONDS="3600"
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 7 200"
