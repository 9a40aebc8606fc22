"""An OpenAI-compatible Chat Completions server on 127.0.0.1 in a thread, scripted per model:
each request for a model takes that model's next scripted reply and answers it as real HTTP,
streamed as SSE `chat.completion.chunk` frames (text deltas, tool-call deltas, usage), or as
an error status, garbage, or silence. It records every request's body and headers, and
whether a client hung up mid-stream. GET /v1/models lists the scripted models."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers import free_port


@dataclass
class Text:
    """Text deltas, one SSE frame each; after the first, wait for `gate` (if any); after the
    last, `hold` keeps the stream open (pinging) until the client hangs up."""

    chunks: list[str]
    gate: threading.Event | None = None
    hold: bool = False
    usage: tuple[int, int] = (11, 7)


@dataclass
class Tools:
    """Tool calls (name, raw arguments), each's arguments streamed in two pieces."""

    calls: list[tuple[str, str]]
    text: str = ""
    usage: tuple[int, int] = (20, 5)


@dataclass
class Status:
    code: int
    body: str = '{"error": {"message": "overloaded", "type": "server_error"}}'


@dataclass
class Garbage:
    body: str = "data: this is not json\n\n"


@dataclass
class Silence:
    seconds: float


Reply = Text | Tools | Status | Garbage | Silence


@dataclass
class Seen:
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class ModelServer:
    port: int = field(default_factory=free_port)
    scripts: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    seen: dict[str, list[Seen]] = field(default_factory=lambda: defaultdict(list))
    # When each answer's first token was written (time.perf_counter), per model.
    first_tokens: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    hung_up: dict[str, threading.Event] = field(
        default_factory=lambda: defaultdict(threading.Event)
    )
    connections: int = 0  # accepted so far

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, model: str, *replies: Reply) -> None:
        self.scripts[model].extend(replies)

    def start(self) -> ModelServer:
        self.httpd = Quiet(("127.0.0.1", self.port), Handler)
        self.httpd.owner = self
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Quiet(ThreadingHTTPServer):
    daemon_threads = True
    owner: ModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner.connections += 1
        super().process_request(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Quiet

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self.send_error(404)
            return
        models = [
            {"id": m, "object": "model", "owned_by": "test"} for m in self.server.owner.scripts
        ]
        self.answer(200, json.dumps({"object": "list", "data": models}))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        model = str(body.get("model"))
        self.server.owner.seen[model].append(
            Seen(body, {k.lower(): v for k, v in self.headers.items()})
        )
        script = self.server.owner.scripts[model]
        reply = script.popleft() if script else Status(404, '{"error": {"message": "no script"}}')
        if isinstance(reply, Status):
            self.answer(reply.code, reply.body)
        elif isinstance(reply, Garbage):
            self.stream_raw([reply.body])
        elif isinstance(reply, Silence):
            time.sleep(reply.seconds)
            self.answer(200, "{}")
        else:
            self.stream(model, reply)

    def answer(self, code: int, text: str) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def open_stream(self) -> None:
        # Chunked, as model servers stream: the connection can serve the next request.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def write(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def stream_raw(self, frames: list[str]) -> None:
        self.open_stream()
        for frame in frames:
            self.write(frame.encode())
        self.end_stream()

    def frame(self, model: str, delta: dict[str, Any], finish: str | None = None,
              usage: tuple[int, int] | None = None) -> None:  # fmt: skip
        chunk: dict[str, Any] = {
            "id": "chatcmpl-test", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }  # fmt: skip
        if usage is not None:
            chunk["choices"] = []
            chunk["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                              "total_tokens": sum(usage)}  # fmt: skip
        self.write(f"data: {json.dumps(chunk)}\n\n".encode())

    def stream(self, model: str, reply: Text | Tools) -> None:
        self.open_stream()
        try:
            if isinstance(reply, Text):
                self.frame(model, {"role": "assistant", "content": ""})
                for number, text in enumerate(reply.chunks):
                    self.frame(model, {"content": text})
                    if number == 0:
                        self.server.owner.first_tokens[model].append(time.perf_counter())
                    if number == 0 and reply.gate is not None:
                        reply.gate.wait(30)
                if reply.hold:
                    self.hold(model)
                    return
                self.frame(model, {}, "stop")
            else:
                self.frame(model, {"role": "assistant", "content": reply.text or None})
                for index, (name, arguments) in enumerate(reply.calls):
                    half = len(arguments) // 2
                    first = {
                        "index": index,
                        "id": f"call_{index}_{name}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments[:half]},
                    }
                    rest = {"index": index, "function": {"arguments": arguments[half:]}}
                    self.frame(model, {"tool_calls": [first]})
                    self.frame(model, {"tool_calls": [rest]})
                self.frame(model, {}, "tool_calls")
            self.frame(model, {}, usage=reply.usage)
            self.write(b"data: [DONE]\n\n")
            self.end_stream()
        except OSError:
            self.server.owner.hung_up[model].set()

    def hold(self, model: str) -> None:
        deadline = time.monotonic() + 30
        self.close_connection = True  # the stream never ends: its connection does
        try:
            while time.monotonic() < deadline:
                time.sleep(0.05)
                self.write(b": still thinking\n\n")
        except OSError:
            self.server.owner.hung_up[model].set()
