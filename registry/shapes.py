"""What a registration body may be, read into one Agent Card: a 1.0 or 0.3 card (the official
SDK's models judge it), seed 003's registration shape (mapped to a 1.0 card, then judged the
same way), or `{"cardUrl": ...}` (fetched through the guarded HTTP seam)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict

from a2ahub import outbound
from executors.remote_cards import MAX_CARD_BYTES, CardRejected, read_card, read_v1
from registry.models import Source

FETCH_TIMEOUT = 10.0
# Seed 003's `supportedProtocols` values and the A2A versions they name.
SEED_PROTOCOLS = {"a2a-1.0": "1.0", "1.0": "1.0", "a2a-0.3": "0.3", "0.3": "0.3"}


class BadSubmission(Exception):
    """The body cannot be registered; `field` names what is wrong."""

    def __init__(self, message: str, field: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status


@dataclass
class Submission:
    card: pb.AgentCard
    version: str  # the protocol version whose model accepted the card
    source: str
    card_url: str = ""
    etag: str = ""
    agent_id: str = ""  # the slug the body asks for (seed 003's `id`), if any
    category: str = ""
    tags: list[str] = field(default_factory=list)

    @property
    def document(self) -> dict[str, Any]:
        """The card as 1.0 JSON, as the hub stores it for the remote executor."""
        return MessageToDict(self.card)

    @property
    def protocols(self) -> list[str]:
        versions = {
            ".".join(i.protocol_version.split(".")[:2]) for i in self.card.supported_interfaces
        }
        return sorted(v for v in versions if v) or [self.version]

    def interface_urls(self) -> list[str]:
        return [i.url for i in self.card.supported_interfaces if i.url]


def read_submission(body: Any) -> Submission:
    if not isinstance(body, dict):
        raise BadSubmission('The body must be a JSON object: an Agent Card or {"cardUrl"}.', "body")
    if "cardUrl" in body:
        return from_card_url(body.get("cardUrl"))
    if is_seed_shape(body):
        return from_seed(body)
    return judged(body, Source.CARD)


def judged(document: dict[str, Any], source: str, **extra: Any) -> Submission:
    try:
        remote = read_card(document)
    except CardRejected as exc:
        raise BadSubmission(str(exc), "card") from exc
    return Submission(remote.card, remote.version, source, **extra)


# -- a card URL --------------------------------------------------------------------------------


def from_card_url(url: Any) -> Submission:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise BadSubmission("cardUrl must be an http(s) URL.", "cardUrl")
    fetched = fetch(url)
    if fetched is None:  # only a conditional fetch can answer "not modified"
        raise BadSubmission("The card URL answered 304 to an unconditional request.", "cardUrl")
    return fetched


def fetch(url: str, etag: str = "") -> Submission | None:
    """The card at `url`, or None when it still has `etag`; raises BadSubmission naming
    cardUrl (a private address, an error status, not a card)."""
    headers = {"Accept": "application/json"} | ({"If-None-Match": etag} if etag else {})
    try:
        response = outbound.get(
            url, headers=headers, timeout=FETCH_TIMEOUT, max_bytes=MAX_CARD_BYTES
        )
    except outbound.UnsafeURL as exc:
        raise BadSubmission(f"The hub may not fetch this card URL: {exc}.", "cardUrl") from exc
    except outbound.ResponseTooLarge as exc:
        raise BadSubmission(f"The card is too large: {exc}.", "cardUrl") from exc
    except Exception as exc:  # httpx's errors: the remote is away
        raise BadSubmission(f"The card could not be fetched: {exc or type(exc).__name__}.",
                            "cardUrl") from exc  # fmt: skip
    if response.status_code == 304 and etag:
        return None
    if not response.is_success:
        raise BadSubmission(f"The card URL answered HTTP {response.status_code}.", "cardUrl")
    try:
        document = response.json()
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadSubmission("The card URL did not answer with JSON.", "cardUrl") from exc
    if not isinstance(document, dict):
        raise BadSubmission("The card URL's document is not a JSON object.", "cardUrl")
    return judged(document, Source.CARD_URL, card_url=url, etag=response.headers.get("ETag", ""))


# -- seed 003's shape ----------------------------------------------------------------------------


def is_seed_shape(body: dict[str, Any]) -> bool:
    """Seed 003 lists `endpoints` and a `capabilities` list; no Agent Card has either."""
    return "endpoints" in body or isinstance(body.get("capabilities"), list)


def from_seed(body: dict[str, Any]) -> Submission:
    tags = strings(body.get("tags"), "tags")
    category = body.get("category", "")
    if not isinstance(category, str):
        raise BadSubmission("category must be a string.", "category")
    agent_id = body.get("id", "")
    if not isinstance(agent_id, str):
        raise BadSubmission("id must be a string.", "id")
    document = seed_card(body, tags or ([category] if category else []))
    try:
        card = read_v1(copy.deepcopy(document))
    except CardRejected as exc:
        raise BadSubmission(f"As an A2A 1.0 card: {exc}", "card") from exc
    return Submission(card, "1.0", Source.SEED, agent_id=agent_id, category=category, tags=tags)


def seed_card(body: dict[str, Any], tags: list[str]) -> dict[str, Any]:
    """Seed 003's registration as the 1.0 card it describes."""
    capabilities = body.get("capabilities") or []
    if not isinstance(capabilities, list) or not all(isinstance(c, dict) for c in capabilities):
        raise BadSubmission("capabilities must be a list of objects.", "capabilities")
    inputs = sorted({m for c in capabilities for m in strings(c.get("inputTypes"), "inputTypes")})
    outputs = sorted(
        {m for c in capabilities for m in strings(c.get("outputTypes"), "outputTypes")}
    )
    return {
        "name": body.get("name"),
        "description": body.get("description"),
        "version": body.get("version") or "1.0.0",
        "supportedInterfaces": seed_interfaces(body),
        "capabilities": {},
        "defaultInputModes": inputs or ["text"],
        "defaultOutputModes": outputs or ["text"],
        "skills": [seed_skill(c, tags) for c in capabilities],
    }


def seed_interfaces(body: dict[str, Any]) -> list[dict[str, str]]:
    endpoints = body.get("endpoints")
    if not isinstance(endpoints, list) or not endpoints:
        raise BadSubmission("endpoints must list at least one {\"type\": \"http\", \"url\"}.",
                            "endpoints")  # fmt: skip
    protocols = strings(body.get("supportedProtocols"), "supportedProtocols")
    versions = [SEED_PROTOCOLS[p.lower()] for p in protocols if p.lower() in SEED_PROTOCOLS]
    urls = [
        e.get("url") for e in endpoints if isinstance(e, dict) and e.get("type", "http") == "http"
    ]
    if not urls or not all(isinstance(u, str) and u for u in urls):
        raise BadSubmission("Each http endpoint needs a url.", "endpoints")
    return [
        {"url": str(url), "protocolBinding": "JSONRPC", "protocolVersion": version}
        for url in urls
        for version in (versions or ["1.0"])
    ]


def seed_skill(capability: dict[str, Any], tags: list[str]) -> dict[str, Any]:
    name = capability.get("name")
    return {
        "id": name,
        "name": name,
        "description": capability.get("description") or name,
        "tags": tags or [name],
        "inputModes": strings(capability.get("inputTypes"), "inputTypes"),
        "outputModes": strings(capability.get("outputTypes"), "outputTypes"),
    }


def strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadSubmission(f"{name} must be a list of strings.", name)
    return list(value)
