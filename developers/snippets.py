"""Ready-to-copy client code for one agent: curl, Python (a2a-sdk 1.x) and JavaScript
(@a2a-js/sdk), with that agent's URLs and the credential it asks for.

A snippet names the credential by an environment variable (`A2A_API_KEY`, or `A2A_TOKEN` for
an agent that takes OAuth2 tokens only) unless it is given the key itself: the keys page shows
a new key once, in snippets that use it as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agents import cards
from agents.models import Agent
from agents.principals import DEFAULT_KEY_HEADER, needs_credentials

GREETING = "Hello!"


@dataclass(frozen=True)
class Snippet:
    name: str  # the element id's tail: snippet-curl, snippet-python, snippet-javascript
    label: str
    code: str


@dataclass(frozen=True)
class Credential:
    """The header a call carries, the variable a snippet reads it from, and how to get it."""

    header: str
    prefix: str  # "Bearer " for bearer schemes
    variable: str
    value: str  # the key itself when the page knows it, else ""

    def shell(self) -> str:
        return f"{self.prefix}{self.value or '$' + self.variable}"


def credential_of(agent: Agent, key: str = "") -> Credential | None:
    if agent.oauth2:
        return Credential("Authorization", "Bearer ", "A2A_TOKEN", "")
    if not needs_credentials(agent) and not key:
        return None
    for scheme in (agent.security_schemes or {}).values():
        if scheme.get("type") == "apiKey" and scheme.get("in", "header") == "header":
            return Credential(str(scheme.get("name") or DEFAULT_KEY_HEADER), "", "A2A_API_KEY", key)
        if scheme.get("type") == "http":
            return Credential("Authorization", "Bearer ", "A2A_API_KEY", key)
    return Credential(DEFAULT_KEY_HEADER, "", "A2A_API_KEY", key)


def snippets(agent: Agent, base_url: str, key: str = "") -> list[Snippet]:
    credential = credential_of(agent, key)
    # An agent that takes OAuth2 tokens only: how to get one comes first.
    first = (
        [Snippet("token", "Get a token (shell)", token(agent, base_url))] if agent.oauth2 else []
    )
    return [
        *first,
        Snippet("curl", "curl (JSON-RPC, A2A 1.0)", curl(agent, base_url, credential)),
        Snippet("python", "Python (a2a-sdk 1.x)", python(agent, base_url, credential)),
        Snippet("javascript", "JavaScript (@a2a-js/sdk)", javascript(agent, base_url, credential)),
    ]


# Three lines, wrapped where a reader looks for the parts; a shell keeps the line breaks inside
# the quotes.
CURL_BODY = """{{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {{
      "message": {{"messageId": "hello-1", "role": "ROLE_USER",
                  "parts": [{{"text": {greeting}}}]}}}}}}"""


def token(agent: Agent, base_url: str) -> str:
    """A2A_TOKEN from the hub's token endpoint, with the client id and secret of an
    application (client credentials) in CLIENT_ID and CLIENT_SECRET."""
    read = """python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])'"""
    return "\n".join([
        'export A2A_TOKEN="$(curl -sS -u "$CLIENT_ID:$CLIENT_SECRET" \\',
        f"  -d grant_type=client_credentials -d 'scope=agent:{agent.slug}' \\",
        f"  '{base_url}/o/token/' | {read})\"",
    ])  # fmt: skip


def curl(agent: Agent, base_url: str, credential: Credential | None) -> str:
    lines = [
        f"curl -sS -X POST '{cards.jsonrpc_url(base_url, agent)}'",
        "  -H 'Content-Type: application/json'",
        "  -H 'A2A-Version: 1.0'",
    ]
    if credential is not None:
        lines.append(f'  -H "{credential.header}: {credential.shell()}"')
    lines.append(f"  -d '{CURL_BODY.format(greeting=json.dumps(GREETING))}'")
    return " \\\n".join(lines)


PYTHON = """\
# pip install "a2a-sdk>=1.0,<2"
import asyncio
{import_os}import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest
from google.protobuf.json_format import MessageToJson

AGENT_URL = {agent_url}
HEADERS = {headers}


async def main() -> None:
    async with httpx.AsyncClient(headers=HEADERS, timeout=60) as http:
        client = await create_client(AGENT_URL, ClientConfig(httpx_client=http, streaming=False))
        message = Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text={greeting})]
        )
        async for reply in client.send_message(SendMessageRequest(message=message)):
            print(MessageToJson(reply))
        await client.close()


asyncio.run(main())
"""


def python(agent: Agent, base_url: str, credential: Credential | None) -> str:
    headers = "{}"
    if credential is not None:
        variable = f'os.environ["{credential.variable}"]'
        value = repr(credential.value) if credential.value else variable
        if credential.prefix:
            value = f'"{credential.prefix}" + {value}'
        headers = f"{{{credential.header!r}: {value}}}"
    return PYTHON.format(
        agent_url=repr(cards.agent_base_url(base_url, agent)),
        headers=headers,
        greeting=repr(GREETING),
        import_os="import os\n" if "os.environ" in headers else "",
    )


JAVASCRIPT = """\
// npm install @a2a-js/sdk   (an ES module: save as hello.mjs, run with node hello.mjs)
import {{ A2AClient }} from "@a2a-js/sdk/client";
{fetch_line}
const client = await A2AClient.fromCardUrl(
  "{card_url}",{options}
);
const response = await client.sendMessage({{
  message: {{
    kind: "message",
    messageId: crypto.randomUUID(),
    role: "user",
    parts: [{{ kind: "text", text: "{greeting}" }}],
  }},
}});
console.log(JSON.stringify(response, null, 2));
"""


def javascript(agent: Agent, base_url: str, credential: Credential | None) -> str:
    fetch_line, options = "", ""
    if credential is not None:
        value = (
            json.dumps(credential.value)
            if credential.value
            else (f"process.env.{credential.variable}")
        )
        if credential.prefix:
            value = f'"{credential.prefix}" + {value}'
        fetch_line = (
            "// Every request carries the credential.\n"
            "const fetchImpl = (url, init = {}) =>\n"
            f'  fetch(url, {{ ...init, headers: {{ ...init.headers, "{credential.header}": '
            f"{value} }} }});\n"
        )
        options = "\n  { fetchImpl },"
    return JAVASCRIPT.format(
        fetch_line=fetch_line,
        card_url=cards.card_url(base_url, agent),
        options=options,
        greeting=GREETING,
    )
