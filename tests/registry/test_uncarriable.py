"""Text the hub cannot store (U+0000, which PostgreSQL refuses in text and jsonb, or a lone
surrogate) in a registration's card, its path or a search gets 400 naming where it is, on
every database, and registers nothing."""

from __future__ import annotations

from typing import Any

import pytest

from registry.models import Registration
from tests.registry.conftest import CARD_V1, Registrar, card

pytestmark = pytest.mark.django_db

SKILL = {"id": "s", "name": "S", "description": "d", "tags": ["a"]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (card(CARD_V1, name="a\x00b"), "name"),
        (card(CARD_V1, skills=[SKILL | {"tags": ["ok", "a\x00"]}]), "skills[0].tags[1]"),
        (card(CARD_V1, description="\udc00"), "description"),
        ({"cardUrl": "https://x.example/\x00"}, "cardUrl"),
    ],
)  # fmt: skip
def test_a_card_holding_such_text_is_refused_naming_the_field(
    owner: Registrar, body: dict[str, Any], field: str
) -> None:
    response = owner.register(body)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert not Registration.objects.exists()


@pytest.mark.parametrize(
    ("path", "field"),
    [("?q=a%00b", "q"), ("?tag=%00", "tag"), ("/a%00b", "agent_id")],
)  # fmt: skip
def test_a_nul_in_a_search_or_an_agent_id_is_refused_naming_it(
    anonymous: Registrar, path: str, field: str
) -> None:
    response = anonymous.client.get(f"/registry/agents{path}")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_a_cursor_that_decodes_to_a_nul_is_not_one_the_registry_gave(anonymous: Registrar) -> None:
    response = anonymous.search("?cursor=YQA")  # base64 of "a\x00"
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "cursor"
