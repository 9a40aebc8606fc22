"""protobuf's JSON reader checks strings for lone surrogates the fast way (a2ahub/
protobuf_strings.py) and answers exactly as before: a lone surrogate is refused wherever it
is, every real character is read back as it was sent."""

from __future__ import annotations

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from a2ahub.protobuf_strings import SurrogateCheck


def text_of(text: str) -> str:
    part = json_format.ParseDict({"text": text}, pb.Part())
    return part.text


def test_the_hub_reads_protobuf_json_with_the_fast_check() -> None:
    assert isinstance(json_format._UNPAIRED_SURROGATE_PATTERN, SurrogateCheck)


@pytest.mark.parametrize(
    "text",
    ["plain", "y" * 2_000_000, "héllo wörld", "日本語", "emoji 😀 and 𝄞", "é" * 100_000 + "😀"],
    ids=["ascii", "big ascii", "latin", "cjk", "astral", "big mixed"],
)
def test_every_real_character_is_read_back_as_sent(text: str) -> None:
    assert text_of(text) == text


@pytest.mark.parametrize(
    "text",
    ["\ud800", "a\udc00", "x" * 100_000 + "\udbff" + "y", "😀\ud83d"],
    ids=["high", "low", "deep in a big string", "after an astral character"],
)
def test_a_lone_surrogate_is_refused_wherever_it_is(text: str) -> None:
    with pytest.raises(json_format.ParseError, match="Unpaired surrogate"):
        text_of(text)


def test_a_pair_spelled_as_two_surrogates_is_still_read_as_protobuf_reads_it() -> None:
    # Not what JSON decoding makes (it joins a pair into one character), but a caller may.
    assert json_format._UNPAIRED_SURROGATE_PATTERN.search("\ud83d\ude00") is None


@pytest.mark.parametrize("value", [7, ["a"], {"a": 1}], ids=["number", "list", "object"])
def test_a_string_field_given_no_string_is_refused_as_before(value: object) -> None:
    with pytest.raises(json_format.ParseError, match="Failed to parse text field"):
        json_format.ParseDict({"text": value}, pb.Part())
