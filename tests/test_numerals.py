"""Whole numbers read from what a client sent: only ASCII digits, only up to the field's
largest value; anything else is no number, whatever `str.isdigit` says of it."""

from __future__ import annotations

import pytest

from a2ahub.numerals import INT64_MAX, is_over, whole_number


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("12", 12), (str(INT64_MAX), INT64_MAX)])
def test_ascii_digits_up_to_the_maximum_are_a_number(text: str, value: int) -> None:
    assert whole_number(text) == value


@pytest.mark.parametrize(
    "text", ["", "-1", "+1", " 1", "1.0", "١٢", "²", "9" * 5000, str(INT64_MAX + 1), "0" * 20]
)
def test_anything_else_is_no_number(text: str) -> None:
    assert whole_number(text) is None


def test_the_maximum_is_the_fields_own() -> None:
    assert whole_number("100", maximum=99) is None
    assert whole_number("99", maximum=99) == 99


@pytest.mark.parametrize(
    ("text", "over"),
    [("11", True), ("10", False), ("0000000000000000011", True), ("9" * 5000, True),
     ("", False), ("abc", False), ("١٢٣", False), ("0", False)],
)  # fmt: skip
def test_a_declared_size_is_over_a_limit_only_when_it_is_a_larger_number(
    text: str, over: bool
) -> None:
    assert is_over(text, 10) is over
