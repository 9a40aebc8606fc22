"""The hub's one way of writing times and values (a2ahub/when.py): to the second, relative
times with the absolute one on hover, durations, and lists in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from a2ahub import when

MOMENT = datetime(2026, 11, 27, 1, 54, 7, 250_000, tzinfo=UTC)


def test_an_absolute_time_is_written_to_the_second() -> None:
    assert when.absolute(MOMENT) == "2026-11-27 01:54:07"


def test_a_relative_time_says_how_long_ago_and_shows_the_absolute_one_on_hover() -> None:
    html = str(when.time_html(MOMENT, now=MOMENT + timedelta(seconds=3.6)))
    assert html == (
        '<time class="hub-when" datetime="2026-11-27T01:54:07.250000+00:00" '
        'title="2026-11-27 01:54:07 UTC">3 s ago</time>'
    )
    assert when.ago(MOMENT, MOMENT + timedelta(minutes=2, seconds=5)) == "2 min 5 s ago"
    assert when.ago(MOMENT, MOMENT - timedelta(minutes=30)) == "in 30 min"
    assert str(when.time_html(None)) == "—"


def test_durations_use_the_two_largest_units_that_matter() -> None:
    assert [when.duration(s) for s in (0.42, 2, 12.4, 125, 7260, 90_000)] == [
        "0.4 s", "2 s", "12 s", "2 min 5 s", "2 h 1 min", "1 d 1 h",
    ]  # fmt: skip


def test_stored_values_read_as_words_not_python() -> None:
    assert when.plain(["operator", "alice"]) == "operator, alice"
    assert when.plain({"access": "listed", "allowed_users": ["operator"]}) == (
        "access: listed; allowed_users: operator"
    )
    assert when.plain([]) == "—"
    assert when.plain(False) == "no"
