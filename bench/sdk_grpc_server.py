"""The official SDK's echo agents served over gRPC: the reference peer of bench/grpc_bench.py.

It serves the shared bench's `EchoExecutor` (../shared/bench/sdk_echo_server.py) with the
SDK's own `GrpcHandler` and `DefaultRequestHandler` on an in-memory task store, as an SDK user
would: the one-artifact echo on PORT and the five-chunk stream on PORT + 1 (one gRPC service
per server, so one agent per port).

    python bench/sdk_grpc_server.py --shared ../shared/bench --port 8190
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import grpc
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2_grpc


async def serve(shared: Path, port: int) -> None:
    sys.path.insert(0, str(shared))
    from sdk_echo_server import EchoExecutor, _card  # the shared reference agent

    store = InMemoryTaskStore()
    servers = []
    for offset, (name, chunks) in enumerate((("echo", 1), ("echo-stream5", 5))):
        handler = DefaultRequestHandler(
            agent_executor=EchoExecutor(chunks), task_store=store, agent_card=_card("/", name)
        )
        server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(f"127.0.0.1:{port + offset}")
        await server.start()
        servers.append(server)
    print(f"SDK gRPC echo on 127.0.0.1:{port}, five-chunk stream on {port + 1}", flush=True)
    await asyncio.gather(*(server.wait_for_termination() for server in servers))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shared", type=Path, required=True, help="folder of sdk_echo_server.py")
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    asyncio.run(serve(args.shared, args.port))


if __name__ == "__main__":
    main()
