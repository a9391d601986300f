"""Start the real server over HTTPS on 127.0.0.1 for tests, in-process or as a subprocess.

``running_server`` gives a :class:`RunningServer` with a client session that trusts the server's
self-signed certificate; ``MemorySource`` is a Source over plain dicts with knobs for slowness and
outages. Authentication tests can pass their own ``filters`` and ``ssl_context``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from apiserver.http.filters import Filter
from apiserver.http.server import CERT_NAME, Server
from apiserver.http.settings import Settings
from apiserver.render.objects import PRESET, ObjectRef, ref_of
from apiserver.sources.base import Check, SourceUnavailable
from apiserver.sources.folder import FolderSource
from devcluster.deployed import metric_in
from tests.support.patience import patience

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GROUP = "subresources.kubevirt.io"


def vm_path(namespace: str = "default", name: str = "fedora", version: str = "v1", group: str = GROUP) -> str:
    return f"/apis/{group}/{version}/namespaces/{namespace}/virtualmachines/{name}/expand-spec"


def put_path(namespace: str = "default", version: str = "v1", group: str = GROUP) -> str:
    return f"/apis/{group}/{version}/namespaces/{namespace}/expand-vm-spec"


@dataclass
class MemorySource:
    """A Source over a list of objects; ``delay`` slows every read, ``outage`` makes reads fail;
    ``reads`` counts the reads begun (a test waits on it to know a request is in flight)."""

    objects: Sequence[Mapping[str, Any]] = ()
    kubevirt_cr: Mapping[str, Any] | None = None
    delay: float = 0.0
    outage: SourceUnavailable | None = None
    failure: Exception | None = None
    check_list: list[Check] = field(default_factory=lambda: [Check("memory", True)])
    started: bool = False
    closed: bool = False
    reads: int = 0

    async def _wait(self) -> None:
        self.reads += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.outage is not None:
            raise self.outage
        if self.failure is not None:
            raise self.failure

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.closed = True

    async def get_vm(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        await self._wait()
        return await self.get(ObjectRef("VirtualMachine", namespace, name))

    async def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        await self._wait()
        return next((o for o in self.objects if ref_of(o) == ref), None)

    async def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        await self._wait()
        return [o for o in self.objects if (r := ref_of(o)) and r.kind == PRESET and r.namespace == namespace]

    async def kubevirt(self) -> Mapping[str, Any] | None:
        return self.kubevirt_cr

    def checks(self) -> Sequence[Check]:
        return self.check_list


@dataclass
class Reply:
    status: int
    headers: Mapping[str, str]
    header_lists: Mapping[str, list[str]]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class RunningServer:
    server: Server
    url: str
    ca_file: Path
    session: aiohttp.ClientSession

    async def request(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        data: bytes | str | None = None,
        json_body: Any = None,
    ) -> Reply:
        hdrs = dict(headers or {})
        if json_body is not None:
            data = orjson.dumps(json_body)
            hdrs.setdefault("Content-Type", "application/json")
        async with self.session.request(
            method, self.url + path, headers=hdrs, data=data, skip_auto_headers=("Content-Type", "Accept")
        ) as resp:
            body = await resp.read()
            lists: dict[str, list[str]] = {}
            for key, value in resp.headers.items():
                lists.setdefault(key.lower(), []).append(value)
            return Reply(resp.status, {k.lower(): v for k, v in resp.headers.items()}, lists, body)

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    async def put(self, path: str, **kw: Any) -> Reply:
        return await self.request("PUT", path, **kw)

    async def metric(self, sample: str) -> float:
        """A sample of the server's /metrics, by its name with any labels as exported
        (``kubevirt_expand_watches_held``); 0 when it is not exported (a counter not yet incremented)."""
        return metric_in((await self.get("/metrics")).body.decode(), sample)


def client_ssl(ca_file: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file))


@asynccontextmanager
async def running_server(
    source: Any,
    tmp_path: Path,
    *,
    filters: Iterable[Filter] = (),
    ssl_context: ssl.SSLContext | None = None,
    ca_file: Path | None = None,
    authentication: bool = False,
    dispatch: bool = True,
    **settings: Any,
) -> AsyncIterator[RunningServer]:
    """The real server on 127.0.0.1 and a free port, with a client that trusts its certificate."""
    base = Settings(secure_port=0, cert_dir=str(tmp_path / "certs"))
    server = Server(
        replace(base, **settings),
        source,
        filters=filters,
        authentication=authentication,
        ssl_context=ssl_context,
        dispatch=dispatch,
    )
    await server.start()
    trust = ca_file or tmp_path / "certs" / CERT_NAME
    connector = aiohttp.TCPConnector(ssl=client_ssl(trust))
    session = aiohttp.ClientSession(connector=connector)
    try:
        yield RunningServer(server, f"https://127.0.0.1:{server.port}", trust, session)
    finally:
        await session.close()
        await server.stop()


def replace_file(path: Path, text: str) -> None:
    """Write ``path`` whole at once, as a ConfigMap update does: a folder source polling in another thread
    could otherwise read it between the truncation and the write, empty, and serve nothing from it."""
    staged = path.with_name(f".{path.name}.new")  # hidden: the folder source skips it
    staged.write_text(text)
    os.replace(staged, path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerProcess:
    """``kubevirt-expand serve`` running as a subprocess."""

    process: subprocess.Popen[bytes]
    port: int
    ca_file: Path
    log_file: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def stop(self, timeout: float = 20) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(5)


def start_process(tmp_path: Path, *args: str, ready_timeout: float = 30) -> ServerProcess:
    """Start the server with ``args`` and wait until ``/readyz`` answers over TLS."""
    port = free_port()
    cert_dir = tmp_path / "proc-certs"
    log_file = tmp_path / "server.log"
    command = [
        sys.executable,
        "-m",
        "apiserver.cli",
        "serve",
        "--secure-port",
        str(port),
        "--cert-dir",
        str(cert_dir),
        *args,
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log_file.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    running = ServerProcess(process, port, cert_dir / CERT_NAME, log_file)
    deadline = time.monotonic() + patience(ready_timeout)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{running.log()}")
        if running.ca_file.exists():
            with suppress(OSError, ssl.SSLError):
                context = client_ssl(running.ca_file)
                with (
                    socket.create_connection(("127.0.0.1", port), timeout=patience(2)) as raw,
                    context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
                ):
                    tls.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    if tls.recv(64).startswith(b"HTTP/1.1 200"):
                        return running
        time.sleep(0.1)
    running.stop()
    raise RuntimeError(f"server did not become ready:\n{running.log()}")


@asynccontextmanager
async def examples_server(tmp_path: Path, **settings: Any) -> AsyncIterator[RunningServer]:
    """The real server on a copy of examples/ (a folder source, not watched): what the README serves."""
    directory = tmp_path / "examples"
    shutil.copytree(EXAMPLES, directory)
    async with running_server(FolderSource(directory, watch=False), tmp_path, **settings) as running:
        yield running
