"""The operators' API reads JSON bodies as DRF does, with the hub's nesting limit
(`a2ahub.nesting`): a body too deep for json, or deeper than the limit, is a 400 naming it
rather than a RecursionError's 500."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from a2ahub import nesting


class NestingLimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(str(nesting.TooDeep())) from None
        try:
            nesting.check(data)
        except nesting.TooDeep as exc:
            raise ParseError(str(exc)) from None
        return data


PARSERS = [NestingLimitedJSONParser, FormParser, MultiPartParser]
