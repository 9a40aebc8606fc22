"""The outbound HTTP seam: it refuses private networks at check time and at connect time, never
follows redirects, and bounds every answer in time and size. Real servers run on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import aiohttp
import httpx
import pytest
from asgiref.sync import async_to_sync
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pytest_django.fixtures import Settings

from a2ahub import outbound
from a2ahub.outbound_pool import OutboundPool
from tests.helpers import serving

post = async_to_sync(outbound.async_post)  # from a test's thread, not a loop

PUBLIC_ADDRESS = "93.184.215.14"


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver whose path picks its behaviour; it records every request it sees."""

    seen: list[str] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        routes = {
            "/redirect": self.redirect,
            "/slow": self.slow,
            "/drip": self.drip,
            "/big": self.big,
            "/endless": self.endless,
        }
        routes.get(self.path, self.echo)()

    def do_POST(self) -> None:
        self.seen.append(f"POST {self.path}")
        # Read before answering: a socket closed with the request unread sends a reset, which
        # can throw away an answer the client has not read yet.
        self.body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        routes = {
            "/lines": self.lines,
            "/redirect": self.redirect,
            "/drip": self.drip,
            "/big": self.big,
            "/endless": self.endless,
        }
        routes.get(self.path, self.echo)()

    go_on = threading.Event()

    def lines(self) -> None:
        # One line, then nothing until the test has read it; then two more, the last unended.
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("X-User-Agent", self.headers["User-Agent"])
        self.end_headers()
        self.wfile.write(b'{"n": 1}\n')
        self.wfile.flush()
        self.go_on.wait(timeout=5)
        self.wfile.write(b'{"n": 2}\r\n{"n": 3}')

    body = b""

    def echo(self) -> None:
        body = json.dumps(
            {
                "body": self.body.decode(),
                "host": self.headers["Host"],
                "user_agent": self.headers["User-Agent"],
                "token": self.headers.get("X-A2A-Notification-Token"),
            }
        ).encode()
        self.answer(200, body)

    def answer(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self) -> None:
        self.answer(302, b"", Location="http://10.0.0.1/steal")

    def slow(self) -> None:
        time.sleep(3)
        self.answer(200, b"late")

    def drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "80")
        self.end_headers()
        for _ in range(80):
            self.wfile.write(b"x")
            self.wfile.flush()
            time.sleep(0.05)

    def big(self) -> None:
        self.answer(200, b"x" * (outbound.DEFAULT_MAX_BYTES + 1))

    def endless(self) -> None:
        # No Content-Length: HTTP/1.0 ends the body when the connection closes.
        self.send_response(200)
        self.end_headers()
        for _ in range(64):
            self.wfile.write(b"x" * 65536)

    def handle(self) -> None:
        # The client may stop reading at its limit.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Receiver)) as httpd:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"


@pytest.fixture
def port(server: str) -> int:
    return httpx.URL(server).port or 80


@pytest.fixture
def allow_loopback(settings: Settings) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture(autouse=True)
def no_own_origins(settings: Settings) -> Iterator[None]:
    settings.PUBLIC_BASE_URL = ""
    settings.OUTBOUND_ALLOWED_HOSTS = []
    Receiver.seen.clear()
    yield
    outbound.forget_own_origins()


def answers(*results: list[str]) -> Callable[[str, int], list[str]]:
    """A stand-in for DNS that gives each answer in turn, as a rebinding name server would."""
    queue = list(results)

    def resolve(host: str, port: int) -> list[str]:
        return queue.pop(0)

    return resolve


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.8.9.10:8000/",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
        "http://0.0.0.0/",
        "http://255.255.255.255/",
        "http://240.0.0.1/",
        "http://192.0.2.1/",
        "http://198.18.0.1/",
        "http://[::1]/",
        "http://[::]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[fd12:3456::1]/",
        "http://[fec0::1]/",
        "http://[ff02::1]/",
        "http://[2001:db8::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[2002:a00:1::1]/",
        "http://[64:ff9b::7f00:1]/",
    ],
)
def test_it_refuses_literal_addresses_that_are_not_public(url: str) -> None:
    with pytest.raises(outbound.UnsafeURL, match="the hub only sends requests to public addresses"):
        outbound.check_url(url)


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/", "file:///etc/passwd", "http:///path", "https://user:pw@example.com/"],
)
def test_it_refuses_urls_that_are_not_plain_http_with_a_host(url: str) -> None:
    with pytest.raises(outbound.UnsafeURL):
        outbound.check_url(url)


def test_it_refuses_a_host_name_that_resolves_to_loopback() -> None:
    with pytest.raises(outbound.UnsafeURL, match=re.escape("localhost resolves to 127.0.0.1")):
        outbound.check_url("http://localhost:8001/webhook")


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1"])
def test_it_refuses_other_spellings_of_loopback(host: str) -> None:
    with pytest.raises(outbound.UnsafeURL, match="a loopback address"):
        outbound.check_url(f"http://{host}/")


def test_it_refuses_a_name_if_any_of_its_addresses_is_private(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(outbound, "resolve", answers([PUBLIC_ADDRESS, "10.0.0.7"]))
    with pytest.raises(
        outbound.UnsafeURL, match=re.escape("resolves to 10.0.0.7, a private address")
    ):
        outbound.check_url("https://hooks.example.test/a2a")


def test_it_accepts_public_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outbound, "resolve", answers([PUBLIC_ADDRESS, "2606:4700::1111"]))
    outbound.check_url("https://hooks.example.test/a2a")
    outbound.check_url(f"http://{PUBLIC_ADDRESS}:8080/a2a")
    outbound.check_url("http://[::ffff:8.8.8.8]/")


def test_a_judgement_follows_the_settings_it_was_made_under(settings: Settings) -> None:
    # What is kept of a URL's judgement is its spelling's; the allow-list is read every time.
    url = "http://127.0.0.1:9/hook"
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    outbound.check_url(url)
    outbound.check_target(url)

    settings.OUTBOUND_ALLOWED_HOSTS = []
    for check in (outbound.check_url, outbound.check_target):
        with pytest.raises(outbound.UnsafeURL, match="a loopback address"):
            check(url)

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    outbound.check_url(url)


def test_only_a_name_is_looked_up() -> None:
    assert outbound.looks_up("https://hooks.example.test/a2a")
    assert not outbound.looks_up("http://127.0.0.1:9/hook")
    assert not outbound.looks_up("http://[::1]:9/hook")
    assert not outbound.looks_up("http://2130706433/")
    assert not outbound.looks_up("ftp://hooks.example.test/")


def test_it_posts_to_an_allow_listed_local_server_and_reads_its_answer(
    server: str, allow_loopback: None
) -> None:
    response = post(
        f"{server}/webhook",
        content=b'{"state": "completed"}',
        headers={"X-A2A-Notification-Token": "secret", "User-Agent": "spoofed"},
    )
    assert response.status_code == 200
    assert response.is_success
    answer = response.json()
    assert answer["body"] == '{"state": "completed"}'
    assert answer["token"] == "secret"
    assert answer["user_agent"] == outbound.USER_AGENT
    assert answer["user_agent"].startswith("A2A-Hub/")


def test_it_allows_an_allow_listed_host_name_and_keeps_it_in_the_host_header(
    port: int, settings: Settings
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["LocalHost"]
    outbound.check_url(f"http://localhost:{port}/webhook")
    response = post(f"http://localhost:{port}/webhook", content=b"hi", headers={})
    assert response.json()["host"] == f"localhost:{port}"


def test_it_refuses_to_send_to_a_loopback_server_that_is_not_allow_listed(server: str) -> None:
    with pytest.raises(outbound.UnsafeURL):
        post(f"{server}/webhook", content=b"hi", headers={})
    assert Receiver.seen == []


def test_it_returns_a_redirect_instead_of_following_it(server: str, allow_loopback: None) -> None:
    response = outbound.get(f"{server}/redirect")
    assert response.status_code == 302
    assert response.headers["Location"] == "http://10.0.0.1/steal"
    assert Receiver.seen == ["GET /redirect"]


def test_it_refuses_a_name_that_rebinds_to_a_private_address_at_connect_time(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://rebind.example.test:{port}/webhook"
    monkeypatch.setattr(outbound, "resolve", answers([PUBLIC_ADDRESS], ["127.0.0.1"]))
    outbound.check_url(url)
    with pytest.raises(
        outbound.UnsafeURL, match=re.escape("resolves to 127.0.0.1, a loopback address")
    ):
        post(url, content=b"hi", headers={})
    assert Receiver.seen == []


def test_async_post_also_refuses_a_rebinding_name_at_connect_time(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://rebind.example.test:{port}/webhook"
    monkeypatch.setattr(outbound, "resolve", answers([PUBLIC_ADDRESS], ["::ffff:127.0.0.1"]))
    outbound.check_url(url)
    with pytest.raises(outbound.UnsafeURL, match=re.escape("an IPv6 form of 127.0.0.1")):
        asyncio.run(outbound.async_post(url, content=b"hi", headers={}))
    assert Receiver.seen == []


def test_async_post_reaches_an_allow_listed_server(server: str, allow_loopback: None) -> None:
    posted = asyncio.run(outbound.async_post(f"{server}/webhook", content=b"hello", headers={}))
    assert posted.json()["body"] == "hello"


def test_it_allows_the_hubs_own_origin_and_only_that_port(
    server: str, port: int, settings: Settings
) -> None:
    settings.PUBLIC_BASE_URL = server
    inbox = ("/inbox",)
    answer = post(f"{server}/inbox", content=b"hi", headers={}, hub_paths=inbox)
    assert answer.status_code == 200
    with pytest.raises(outbound.UnsafeURL):
        post(f"http://127.0.0.1:{port + 1}/inbox", content=b"hi", headers={},
                      hub_paths=inbox)  # fmt: skip


def test_a_registered_own_origin_opens_exactly_that_origin(port: int) -> None:
    outbound.register_own_origin(f"http://localhost:{port}")
    assert outbound.get(f"http://localhost:{port}/inbox", hub_paths=("/",)).status_code == 200
    with pytest.raises(outbound.UnsafeURL):
        outbound.check_url(f"http://localhost:{port + 1}/inbox")
    with pytest.raises(ValueError, match="is not an origin"):
        outbound.register_own_origin(f"http://localhost:{port}/inbox")


def test_it_refuses_an_answer_longer_than_the_limit(server: str, allow_loopback: None) -> None:
    with pytest.raises(outbound.ResponseTooLarge):
        outbound.get(f"{server}/big")
    assert outbound.get(f"{server}/big", max_bytes=2 * 1024 * 1024).content.count(b"x") > 1024**2


def test_it_stops_reading_an_answer_without_length_at_the_limit(
    server: str, allow_loopback: None
) -> None:
    with pytest.raises(outbound.ResponseTooLarge, match="longer than 100000 bytes"):
        outbound.get(f"{server}/endless", max_bytes=100_000)


def test_it_times_out_on_a_server_that_does_not_answer(server: str, allow_loopback: None) -> None:
    started = time.monotonic()
    with pytest.raises(httpx.TimeoutException):
        outbound.get(f"{server}/slow", timeout=0.3)
    assert time.monotonic() - started < 1.5  # the server answers after 3 s


def test_its_time_limit_covers_the_whole_answer_not_each_read(
    server: str, allow_loopback: None
) -> None:
    # Each byte comes well within the limit, but the whole answer takes eight times as long.
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        outbound.get(f"{server}/drip", timeout=0.5)
    assert time.monotonic() - started < 2.0


def self_signed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def tls_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[int, list[str]]]:
    """An HTTPS receiver on 127.0.0.1 with a certificate for the name in the test's parameter."""
    cert_file, key_file = self_signed(tmp_path, request.param)
    server_names: list[str] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)

    def remember_name(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        server_names.append(name or "")

    context.sni_callback = remember_name
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    client_context = ssl.create_default_context(cafile=str(cert_file))
    with serving(httpd), pytest.MonkeyPatch.context() as patch:
        patch.setattr(outbound, "ssl_context", lambda: client_context)
        yield httpd.server_address[1], server_names


@pytest.mark.parametrize("tls_server", ["localhost"], indirect=True)
def test_https_keeps_the_host_name_for_sni_and_certificate_checks(
    tls_server: tuple[int, list[str]], settings: Settings
) -> None:
    port, server_names = tls_server
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost"]
    response = post(f"https://localhost:{port}/webhook", content=b"hi", headers={})
    assert response.json()["host"] == f"localhost:{port}"
    assert server_names == ["localhost"]


@pytest.mark.parametrize("tls_server", ["other.example.test"], indirect=True)
def test_https_refuses_a_certificate_for_another_name(
    tls_server: tuple[int, list[str]], settings: Settings
) -> None:
    port, _ = tls_server
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost"]
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        outbound.get(f"https://localhost:{port}/webhook")
    assert Receiver.seen == []


async def pool_post(url: str) -> outbound.Response:
    pool = OutboundPool(limit=2)
    try:
        return await pool.post(url, content=b"hi", headers={}, timeout=5)
    finally:
        await pool.close()


@pytest.mark.parametrize("tls_server", ["localhost"], indirect=True)
def test_the_webhook_pool_keeps_the_host_name_for_sni_and_certificate_checks(
    tls_server: tuple[int, list[str]], settings: Settings
) -> None:
    port, server_names = tls_server
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost"]
    response = asyncio.run(pool_post(f"https://localhost:{port}/webhook"))
    assert response.json()["host"] == f"localhost:{port}"
    assert server_names == ["localhost"]


@pytest.mark.parametrize("tls_server", ["other.example.test"], indirect=True)
def test_the_webhook_pool_refuses_a_certificate_for_another_name(
    tls_server: tuple[int, list[str]], settings: Settings
) -> None:
    port, _ = tls_server
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost"]
    with pytest.raises(aiohttp.ClientConnectorCertificateError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(pool_post(f"https://localhost:{port}/webhook"))
    assert Receiver.seen == []


# -- async_stream_post -------------------------------------------------------------------------


def stream_lines(url: str, **options: float) -> tuple[int, list[str]]:
    async def run() -> tuple[int, list[str]]:
        async with outbound.async_stream_post(
            url, content=b"hi", headers={}, **options
        ) as response:
            batches = response.aiter_line_batches()
            return response.status_code, [ln async for lines in batches for ln in lines]

    return asyncio.run(run())


def test_async_stream_post_gives_each_line_as_soon_as_it_arrives(
    server: str, allow_loopback: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    go_on = threading.Event()
    monkeypatch.setattr(Receiver, "go_on", go_on)

    async def run() -> tuple[outbound.StreamingResponse, list[str], bool]:
        headers = {"User-Agent": "spoofed"}
        async with outbound.async_stream_post(
            f"{server}/lines", content=b"hi", headers=headers
        ) as response:
            batches = response.aiter_line_batches()
            first = await anext(batches)
            early = not go_on.is_set()  # the server is still waiting for us
            go_on.set()
            return response, first + [ln async for lines in batches for ln in lines], early

    try:
        response, lines, early = asyncio.run(run())
    finally:
        go_on.set()
    assert early
    assert response.status_code == 200 and response.is_success
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert response.headers["X-User-Agent"] == outbound.USER_AGENT
    assert lines == ['{"n": 1}', '{"n": 2}', '{"n": 3}']


def test_async_stream_post_refuses_a_private_address_before_connecting(server: str) -> None:
    with pytest.raises(outbound.UnsafeURL, match="a loopback address"):
        stream_lines(f"{server}/lines")
    with pytest.raises(outbound.UnsafeURL, match="a private address"):
        stream_lines("http://10.1.2.3/a2a")
    assert Receiver.seen == []


def test_async_stream_post_refuses_a_rebinding_name_at_connect_time(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://rebind.example.test:{port}/lines"
    monkeypatch.setattr(outbound, "resolve", answers([PUBLIC_ADDRESS], ["127.0.0.1"]))
    outbound.check_url(url)
    with pytest.raises(outbound.UnsafeURL, match=re.escape("resolves to 127.0.0.1")):
        stream_lines(url)
    assert Receiver.seen == []


def test_async_stream_post_does_not_follow_redirects(server: str, allow_loopback: None) -> None:
    assert stream_lines(f"{server}/redirect") == (302, [])
    assert Receiver.seen == ["POST /redirect"]


@pytest.mark.parametrize("path", ["/big", "/endless"])
def test_async_stream_post_stops_at_the_size_limit(
    server: str, allow_loopback: None, path: str
) -> None:
    with pytest.raises(outbound.ResponseTooLarge):
        stream_lines(f"{server}{path}", max_bytes=100_000)


def test_async_stream_post_counts_the_limit_over_the_whole_body(
    server: str, allow_loopback: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Receiver, "go_on", threading.Event())
    Receiver.go_on.set()
    # Three short lines, 27 bytes in all: each fits in 20 bytes, the whole answer does not.
    with pytest.raises(outbound.ResponseTooLarge, match="longer than 20 bytes"):
        stream_lines(f"{server}/lines", max_bytes=20)


def test_async_stream_posts_deadline_covers_the_whole_stream(
    server: str, allow_loopback: None
) -> None:
    # Each byte comes well within the limit, but the whole answer takes eight times as long.
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        stream_lines(f"{server}/drip", timeout=0.5)
    assert time.monotonic() - started < 2.0
