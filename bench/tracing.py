"""What traces cost a send: the hub exporting every span against the same hub with tracing off.

It starts the distributed hub with bench/run.py's machinery (PostgreSQL, Redis, a migrated
and seeded database) and two web processes on it: `traced`, with OTEL_EXPORTER_OTLP_ENDPOINT
naming an OTLP/HTTP receiver this script runs on 127.0.0.1 (batch exporter, the SDK's default
schedule), and `plain`, without any OTEL_* variable (tracing off). With `--sdk` the official
SDK's in-memory echo server joins as a third side, so the report also gives plain / SDK: the
ratio bench/run.py measures, which tracing off must leave as it was.

The sides take turns in rounds, the order rotated each round (as bench/bindings.py does), each
run ../shared/bench/a2a_load.py's blocking 0.3 `message/send` to the inline `echo` agent at
`-c`; the report gives each side's median req/s and traced / plain (issue #27: >= 0.9).

    python bench/tracing.py                  # from the repository root; about 3.5 minutes
    python bench/tracing.py --rounds 4 --sdk --markdown out.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as hub

TARGET = 0.9  # traced / plain, from issue #27
NAMES = {"traced": "traced (exported)", "plain": "tracing off", "sdk": "SDK (memory)"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    hub.add_service_arguments(p, redis_db=4)
    p.add_argument("--rounds", type=int, default=10, help="rounds; each runs every side once")
    p.add_argument("-d", "--duration", type=float, default=6.0, help="measured s per run")
    p.add_argument("--warmup", type=float, default=2.0, help="unmeasured s per run")
    p.add_argument("-c", "--concurrency", type=int, default=16, help="concurrent clients")
    p.add_argument("--sdk", action="store_true", help="also measure the SDK's echo server")
    p.add_argument("--receiver", type=int, help=argparse.SUPPRESS)  # the receiver's own process
    hub.add_run_arguments(p, first_port=8350)
    args = p.parse_args(argv)
    args.rounds = max(1, args.rounds)
    return args


# -- the OTLP receiver (its own process, on the clients' core) ----------------------------------


def receive(port: int) -> None:
    """Answer every export as a collector would, counting the spans; print the count on
    stdout each second."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    spans = 0
    lock = threading.Lock()
    answer = ExportTraceServiceResponse().SerializeToString()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            nonlocal spans
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = ExportTraceServiceRequest.FromString(body)
            counted = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
            with lock:
                spans += counted
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    while True:
        time.sleep(1)
        with lock:
            print(spans, flush=True)


def start_receiver(bench: hub.Bench, port: int) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, "--receiver", str(port)]
    process = subprocess.Popen(
        bench.pinned_command(command, hub.GENERATOR_CORE), stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise RuntimeError("the OTLP receiver did not start")
    return process


def spans_received(receiver: subprocess.Popen[str]) -> int:
    """The receiver's last count (it prints one a second)."""
    receiver.terminate()
    out, _ = receiver.communicate(timeout=10)
    counts = [int(line) for line in out.split() if line.isdigit()]
    return counts[-1] if counts else 0


# -- the run --------------------------------------------------------------------------------


def order_of(round_number: int, sides: list[str]) -> list[str]:
    shift = (round_number - 1) % len(sides)
    return sides[shift:] + sides[:shift]


def run_all(bench: hub.Bench) -> tuple[dict[str, list[dict[str, Any]]], int]:
    args = bench.args
    ports = [p for p in range(args.port, args.port + 50) if hub.port_free(p)][:4]
    url = hub.create_database(bench, f"a2abench_tracing_{bench.tag}")
    hub.flush_redis(bench)
    env = hub.hub_env(url.replace("postgresql://", "postgres://"), args.redis, bench.logs / "data")
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    print("== preparing the hub (migrate, seed)")
    hub.prepare_hub(bench, env)
    receiver = start_receiver(bench, ports[0])
    traced_env = env | {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{ports[0]}"}
    urls, pids = {}, {}
    for side, port, side_env in (("traced", ports[1], traced_env), ("plain", ports[2], env)):
        pids[side] = bench.start(side, hub.hub_web_command("hub-daphne", port), side_env, hub.REPO)
        hub.wait_http(
            bench, side, f"http://127.0.0.1:{port}/agents/echo/.well-known/agent-card.json"
        )
        urls[side] = f"http://127.0.0.1:{port}/agents/echo/jsonrpc/"
    if args.sdk:
        sdk_dsn = "unused"  # the memory store
        pids["sdk"] = hub.start_sdk(bench, "sdk-memory", ports[3], sdk_dsn)
        bench.processes["sdk"] = bench.processes.pop("sdk-memory")
        hub.wait_http(bench, "sdk", f"http://127.0.0.1:{ports[3]}/.well-known/agent-card.json")
        urls["sdk"] = f"http://127.0.0.1:{ports[3]}/"
    sides = list(urls)
    rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    try:
        for number in range(1, args.rounds + 1):
            order = order_of(number, sides)
            print(f"\n== round {number} of {args.rounds}: {', '.join(order)}")
            for side in order:
                row = hub.run_load(bench, side, urls[side], args.concurrency, [pids[side]])
                rows[side].append(row)
                bench.check_alive(side)
    finally:
        spans = spans_received(receiver)
    return rows, spans


# -- the report -------------------------------------------------------------------------------


def median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if "fatal" not in r and r.get(key) is not None]
    return statistics.median(values) if values else None


def report(bench: hub.Bench, rows: dict[str, list[dict[str, Any]]], spans: int) -> str:
    args = bench.args
    lines = [
        f"Inline `echo`, blocking 0.3 `message/send`, c={args.concurrency}, {args.rounds} rounds "
        f"of {args.duration:.0f} s (+{args.warmup:.0f} s warm-up) per side; medians.",
        "",
        "| side | req/s | p50 ms | p99 ms | web CPU ms/req | errors |",
        "|---|---|---|---|---|---|",
    ]
    for side, measured in rows.items():
        errors = sum(r.get("errors", 0) for r in measured if "fatal" not in r)
        lines.append(
            f"| {NAMES[side]} | {hub.fmt(median(measured, 'rps'))} "
            f"| {hub.fmt(median(measured, 'p50'))} | {hub.fmt(median(measured, 'p99'))} "
            f"| {hub.fmt(median(measured, 'server_ms'), 2)} | {errors} |"
        )
    traced, plain = median(rows["traced"], "rps"), median(rows["plain"], "rps")
    lines.append("")
    if traced and plain:
        ratio = traced / plain
        verdict = "meets" if ratio >= TARGET else "MISSES"
        lines.append(f"traced / plain: {ratio:.2f} ({verdict} the >= {TARGET} target)")
    if "sdk" in rows and plain and (sdk := median(rows["sdk"], "rps")):
        lines.append(f"plain / SDK (memory): {plain / sdk:.2f} (bench/run.py's inline ratio)")
    lines.append(f"spans received by the OTLP receiver: {spans}")
    return "\n".join(lines)


def pinning(args: argparse.Namespace) -> bool:
    """Without the SDK side only a2a_load.py (and aiohttp) are needed, not the SDK server's
    packages: whether the run is pinned, as bench/run.py decides it."""
    if not (args.shared / "a2a_load.py").is_file():
        raise SystemExit(f"{args.shared / 'a2a_load.py'} not found; point --shared at the folder")
    return not args.no_pin and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.receiver:
        receive(args.receiver)
        return 0
    args.shared = args.shared.resolve()
    pin = hub.check_prerequisites(args) if args.sdk else pinning(args)
    started = time.monotonic()
    with hub.bench_session(args, "a2ahub-bench-tracing-", pin) as bench:
        rows, spans = run_all(bench)
    text = f"Run: {hub.environment(bench)}\n\n{report(bench, rows, spans)}"
    print(f"\n{text}\n\n(total {time.monotonic() - started:.0f} s)")
    if args.markdown:
        args.markdown.write_text(f"# Tracing's cost to a send\n\n{text}\n")
    failed = any("fatal" in r or r["errors"] for side in rows.values() for r in side)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
