"""protobuf's JSON reader, made to check a string for lone surrogates without a regex when
the string cannot hold one.

`json_format` searches every string it reads with a regular expression that has lookarounds:
about 25 ms a megabyte in one C call under the GIL, so one big text part held every thread of
the process that long, the event loop included, even with the parse on a thread of its own. A
string that is all ASCII (Python knows without reading it) or that encodes as UTF-8 (a fast
C loop) has no surrogate at all; only one that does not encode still goes to the regex, whose
answer stays the one that counts.
"""

from __future__ import annotations

import re

from google.protobuf import json_format


class SurrogateCheck:
    """Stands in for json_format's compiled pattern, of which it only calls `search`."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern

    def search(self, value: str) -> re.Match[str] | None:
        if not isinstance(value, str):
            return self.pattern.search(value)  # its TypeError is what json_format reports
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return self.pattern.search(value)
        return None


def install() -> None:
    current = json_format._UNPAIRED_SURROGATE_PATTERN
    if not isinstance(current, SurrogateCheck):
        json_format._UNPAIRED_SURROGATE_PATTERN = SurrogateCheck(current)
