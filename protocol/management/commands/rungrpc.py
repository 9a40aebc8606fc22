"""Serve the A2A gRPC binding in a process of its own: `runhub` starts one beside the web
process of a distributed hub, and more of them scale it out: each on its own host, or several
on one host's port with `--reuse-port` (the kernel spreads connections among them)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

import uvloop
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from a2ahub import interpreter, metrics_access, processes
from protocol import grpc_server


class Command(BaseCommand):
    help = "Serve the A2A gRPC binding on GRPC_PORT (or --port) until SIGTERM or SIGINT."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.GRPC_PORT)
        parser.add_argument(
            "--metrics-port", type=int, default=settings.GRPC_METRICS_PORT,
            help="serve this process's /metrics on this port (0: none); each process of a "
            "host needs its own",
        )  # fmt: skip
        parser.add_argument(
            "--reuse-port", action="store_true",
            help="share the port with other rungrpc processes of this host (SO_REUSEPORT)",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["port"]:
            raise CommandError("GRPC_PORT is 0: this hub serves no gRPC.")
        if settings.EMBEDDED:
            raise CommandError(
                "An embedded hub (no REDIS_URL) serves gRPC inside its web process (runhub); "
                "a process of its own would not hear the web process's task events."
            )
        # Alive as the web processes are: recovery leaves the turns this process runs alone.
        processes.start("grpc")
        bind = grpc_server.address(options["host"], options["port"])
        self.stdout.write(f"A2A gRPC on {bind}")
        if options["metrics_port"]:
            self.serve_metrics(options["host"], options["metrics_port"])
        interpreter.settle()
        uvloop.run(serve_until_stopped(bind, options["reuse_port"]))

    def serve_metrics(self, host: str, port: int) -> None:
        try:
            metrics_access.serve(host, port)
        except OSError as exc:
            # Another rungrpc of this host (--reuse-port) has it: serving gRPC matters more.
            self.stderr.write(f"its metrics are not served: port {port}: {exc.strerror}; give "
                              "each rungrpc of a host its own --metrics-port")  # fmt: skip
            return
        self.stdout.write(f"its metrics on http://{host}:{port}/metrics")


async def serve_until_stopped(bind: str, reuse_port: bool) -> None:
    serving = asyncio.create_task(grpc_server.serve(bind, reuse_port))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, serving.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await serving
