"""Whole numbers read from text a client sent (a header, a query parameter, a token).

`str.isdigit` is true of digits of every script ('١٢', '²') and of strings of any length,
and `int` then fails (or, past 4,300 digits, refuses): read that way, a hostile value became
an unexpected exception, a 500. Here only ASCII digits count, and a number past the largest
the field holds is no number, so the caller answers a precise 4xx instead.
"""

from __future__ import annotations

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1  # protobuf's int32 fields (historyLength, pageSize)

_ASCII_DIGITS = frozenset("0123456789")


def whole_number(text: str, maximum: int = INT64_MAX) -> int | None:
    """`text` as a whole number from 0 to `maximum`, or None when it is not one."""
    if not text or len(text) > len(str(maximum)) or not _ASCII_DIGITS.issuperset(text):
        return None
    value = int(text)
    return value if value <= maximum else None


def is_over(text: str, limit: int) -> bool:
    """Whether `text` is a whole number (ASCII digits) greater than `limit`, however long."""
    if not text or not _ASCII_DIGITS.issuperset(text):
        return False
    digits = text.lstrip("0")
    return len(digits) > len(str(limit)) or (digits != "" and int(digits) > limit)
