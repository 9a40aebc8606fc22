"""Settings that were renamed: the old name still works for now, and says it is deprecated."""

from __future__ import annotations

from pathlib import Path

from tests.test_settings import load_settings

SHOW_ALLOWED = (
    "import django; django.setup(); from django.conf import settings; "
    "print(settings.OUTBOUND_ALLOWED_HOSTS)"
)


def test_push_allowed_hosts_is_still_read_with_a_deprecation_warning(tmp_path: Path) -> None:
    done = load_settings(tmp_path, PUSH_ALLOWED_HOSTS="127.0.0.1, localhost", code=SHOW_ALLOWED)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['127.0.0.1', 'localhost']"
    assert (
        "FutureWarning: PUSH_ALLOWED_HOSTS is deprecated and will be removed: "
        "set OUTBOUND_ALLOWED_HOSTS instead" in done.stderr
    )


def test_the_new_name_wins_over_the_old_one_without_a_warning(tmp_path: Path) -> None:
    done = load_settings(
        tmp_path, OUTBOUND_ALLOWED_HOSTS="10.0.0.7", PUSH_ALLOWED_HOSTS="localhost",
        code=SHOW_ALLOWED,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['10.0.0.7']"
    assert "deprecated" not in done.stderr
