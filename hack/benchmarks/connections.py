#!/usr/bin/env python3
"""Memory of idle TLS connections: how much each keep-alive connection costs the server.

    .venv/bin/python -m hack.benchmarks.connections [--connections 2000]

Starts ``kubevirt-expand serve --manifests examples/`` as a subprocess (``--max-connections`` above the
count), opens the connections from this process over TLS, sends one GET /livez on each and keeps them
open and idle, then reads the server's resident memory (VmRSS from /proc) before, with the connections
open, and once they are closed. Prints the growth per connection in KB; docs/http-api.md (Limits) quotes it for
``--max-connections``.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import time
from pathlib import Path

from tests.support.http_helpers import start_process

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def open_idle(port: int, context: ssl.SSLContext, count: int) -> list[asyncio.StreamWriter]:
    """``count`` connections, each after one answered request; at most 100 handshakes at a time."""
    gate = asyncio.Semaphore(100)

    async def one() -> asyncio.StreamWriter:
        async with gate:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1"
            )
            writer.write(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))[15:])
            await reader.readexactly(length)
            return writer

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def main_async(args: argparse.Namespace, tmp: Path) -> None:
    proc = start_process(
        tmp,
        "--manifests",
        str(EXAMPLES),
        "--max-connections",
        str(args.connections + 100),
        "--log-level",
        "warning",
    )
    try:
        context = ssl.create_default_context(cafile=str(proc.ca_file))
        pid = proc.process.pid
        # Warm up: ten connections, so that first-use allocations are not counted per connection.
        for writer in await open_idle(proc.port, context, 10):
            writer.close()
        await asyncio.sleep(1)
        before = rss_kib(pid)
        started = time.monotonic()
        writers = await open_idle(proc.port, context, args.connections)
        opened = time.monotonic() - started
        await asyncio.sleep(2)
        during = rss_kib(pid)
        for writer in writers:
            writer.close()
        await asyncio.sleep(2)
        after = rss_kib(pid)
        per = (during - before) / args.connections
        print(
            f"{args.connections} idle TLS connections (opened in {opened:.1f}s): server RSS {before / 1024:.1f} MiB "
            f"before, {during / 1024:.1f} MiB open (+{(during - before) / 1024:.1f} MiB, "
            f"{per * 1.024:.0f} KB per connection), {after / 1024:.1f} MiB after closing"
        )
    finally:
        proc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--connections", type=int, default=2000)
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main_async(args, Path(tmp)))


if __name__ == "__main__":
    main()
