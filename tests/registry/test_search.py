"""Search over live registrations: `q`, `tag`, `skill`, `category`, `protocol`, cursor pages."""

from __future__ import annotations

import pytest

from tests.registry.conftest import CARD_V03, CARD_V1, SEED_003, Registrar

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(owner: Registrar) -> None:
    for body in (SEED_003, CARD_V1, CARD_V03):
        assert owner.register(body).status_code == 201


def ids(registrar: Registrar, query: str) -> list[str]:
    response = registrar.search(query)
    assert response.status_code == 200, response.content
    return [a["agentId"] for a in response.json()["agents"]]


@pytest.mark.parametrize(("query", "expected"), [
    ("", ["summarizer", "translator", "weather-agent-001"]),
    ("?q=translat", ["translator"]),
    ("?q=天气", ["weather-agent-001"]),
    ("?tag=forecast", ["weather-agent-001"]),
    ("?tag=summ", []),
    ("?skill=summarize", ["summarizer"]),
    ("?category=information-service", ["weather-agent-001"]),
    ("?protocol=0.3", ["summarizer"]),
    ("?protocol=A2A-1.0", ["translator", "weather-agent-001"]),
])  # fmt: skip
def test_filters_find_what_they_name(
    three: None, anonymous: Registrar, query: str, expected: list[str]
) -> None:
    assert ids(anonymous, query) == expected


def test_cursor_pages_walk_every_match_once(three: None, anonymous: Registrar) -> None:
    first = anonymous.search("?pageSize=2").json()
    assert [a["agentId"] for a in first["agents"]] == ["summarizer", "translator"]
    second = anonymous.search(f"?pageSize=2&cursor={first['nextCursor']}").json()
    assert [a["agentId"] for a in second["agents"]] == ["weather-agent-001"]
    assert second["nextCursor"] == ""


def test_a_bad_page_size_or_cursor_is_refused_naming_it(anonymous: Registrar) -> None:
    assert anonymous.search("?pageSize=0").json()["error"]["field"] == "pageSize"
    # Digits of other scripts and numbers past any page size: no 500.
    for size in ("%C2%B2", "%D9%A1%D9%A2", "9" * 5000):
        assert anonymous.search(f"?pageSize={size}").json()["error"]["field"] == "pageSize"
    assert anonymous.search("?cursor=%%%").json()["error"]["field"] == "cursor"


def test_entries_point_at_the_hubs_card_and_endpoint(three: None, anonymous: Registrar) -> None:
    entry = anonymous.search("?q=translat").json()["agents"][0]
    assert entry["discoveryUrl"].endswith("/agents/translator/.well-known/agent-card.json")
    assert entry["url"].endswith("/agents/translator/jsonrpc/")
    assert entry["skills"] == [
        {"id": "translate", "name": "Translate", "tags": ["language", "translation"]}
    ]
    assert "cardUrl" not in entry  # details are for the owner and operators
