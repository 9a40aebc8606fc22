"""What the property-based tests share: JSON values (NUL, lone surrogates and other strings no
door should choke on included), and mutations of a valid request document."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

NASTY = ["\x00", "\ud800", "\udfff", "a\x00b", "\ud83d", "\U0001f600", "", " ", "é" * 300]

strings = st.one_of(st.text(max_size=40), st.sampled_from(NASTY))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), strings,
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(strings, inner, max_size=4)
    ),
    max_leaves=12,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def copy_and_parent(document: Any, path: tuple[Any, ...]) -> tuple[Any, Any]:
    """A deep copy of `document` and, in it, the container of the place `path` names."""
    copy = json.loads(json.dumps(document))
    return copy, at(copy, path[:-1])


def replaced(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy, parent = copy_and_parent(document, path)
    parent[path[-1]] = new
    return copy


def without(document: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return document
    copy, parent = copy_and_parent(document, path)
    del parent[path[-1]]
    return copy


def at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


def mutate(draw: st.DrawFn, document: Any) -> Any:
    """One to three changes: a value swapped for any JSON value, a key dropped or added, a
    nasty string put somewhere."""
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        place = draw(st.sampled_from(paths(document)))
        action = draw(st.sampled_from(["replace", "replace", "drop", "add", "nasty"]))
        if action == "replace":
            document = replaced(document, place, draw(json_values))
        elif action == "drop":
            document = without(document, place)
        elif action == "add" and isinstance(at(document, place), dict):
            document = replaced(document, (*place, draw(strings)), draw(json_values))
        elif action == "nasty":
            document = replaced(document, place, draw(st.sampled_from(NASTY)))
    return document
