#!/usr/bin/env python3
"""Throughput, latency, memory and upstream reads of ``kubevirt-expand serve``, beside a ceiling.

Usage: .venv/bin/python -m hack.benchmarks.server [--duration SECONDS] [--connections N] [--client auto|wrk|python]
                                      [--objects N] [--skip-cluster] [--json FILE]
                                      [--profile FILE] [--profile-cluster FILE] [--collection SIZES]

What it runs, all on 127.0.0.1 and bounded in time:
  * the server with the folder source (examples/), and with the cluster source against the fake
    Kubernetes API of tests/fakekube (run in this process), each over HTTPS with the certificate
    hack/gen-certs.sh makes;
  * the ceiling: a bare aiohttp server on the same TLS settings answering the same response bytes
    with no work at all;
  * a load generator in a separate process holding N keep-alive connections: wrk when installed
    (`apt-get install wrk`), else an aiohttp client in several worker processes.
For GET expand-spec and PUT expand-vm-spec it prints requests per second, p50/p99 latency and the
ratio to the ceiling; then the server's memory with N cached instancetypes and preferences (growth
per object), and the upstream reads per request, cold and warm.

With ``--collection 1000,100000`` it then runs hack/benchmarks/collection.py at those VM counts against the
real kube-apiserver of ../shared/k8s (the rendered-VM collection: lists beside kube-apiserver's, warm GET
throughput and p99 per size, an instancetype edit's events, idle watchers, RSS per VM, a kube-apiserver
restart under load) and prints its figures too; they go under "collection" in ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SERVER_NAME = "kubevirt-expand.kubevirt-expand.svc"
GROUP_PATH = "/apis/subresources.kubevirt.io/v1"
VM_NAMESPACE, VM_NAME = "default", "fedora"
GET_PATH = f"{GROUP_PATH}/namespaces/{VM_NAMESPACE}/virtualmachines/{VM_NAME}/expand-spec"
PUT_PATH = f"{GROUP_PATH}/namespaces/{VM_NAMESPACE}/expand-vm-spec"
TOKEN = "bench-token"


# --- measurements ---------------------------------------------------------------------------------


@dataclass
class Load:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def median(loads: list[Load]) -> Load:
    return sorted(loads, key=lambda x: x.rps)[len(loads) // 2]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


WRK_SCRIPT = """
local body_file = os.getenv("BENCH_BODY")
if body_file and body_file ~= "" then
  local f = assert(io.open(body_file, "rb"))
  wrk.method = "PUT"
  wrk.body = f:read("*a")
  f:close()
  wrk.headers["Content-Type"] = "application/json"
end
wrk.headers["Accept"] = "application/json"
local token = os.getenv("BENCH_TOKEN")
if token and token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
local bad = 0
response = function(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, '
    .. '"errors": %d}\\n', summary.requests, summary.duration, latency:percentile(50),
    latency:percentile(99), e.connect + e.read + e.write + e.timeout + e.status))
end
"""


async def run_wrk(url: str, body: Path | None, connections: int, duration: float, token: str) -> Load:
    threads = max(1, min(connections, os.cpu_count() or 1))
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT)
    env = {**os.environ, "BENCH_BODY": str(body or ""), "BENCH_TOKEN": token}
    try:
        proc = await asyncio.create_subprocess_exec(
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{max(1, round(duration))}s",
            "--timeout",
            "10s",
            "-s",
            script.name,
            url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), duration + 60)
    finally:
        os.unlink(script.name)
    line = next((x for x in out.decode().splitlines() if x.startswith("BENCH ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {err.decode()}{out.decode()}")
    r = json.loads(line[6:])
    return Load(r["requests"], r["duration_us"] / 1e6, r["p50_us"] / 1e3, r["p99_us"] / 1e3, r["errors"])


async def run_python_load(url: str, body: Path | None, connections: int, duration: float, token: str) -> Load:
    """``workers`` processes of this script in ``_load`` mode, splitting the connections."""
    workers = max(1, min(connections, os.cpu_count() or 1))
    shares = [connections // workers + (1 if i < connections % workers else 0) for i in range(workers)]
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "_load",
            url,
            str(share),
            str(duration),
            str(body or ""),
            token,
            stdout=asyncio.subprocess.PIPE,
        )
        for share in shares
    ]
    results = [json.loads((await asyncio.wait_for(p.communicate(), duration + 60))[0]) for p in procs]
    latencies = sorted(x for r in results for x in r["latencies"])
    seconds = max(r["seconds"] for r in results)
    return Load(
        sum(r["requests"] for r in results),
        seconds,
        percentile(latencies, 50) * 1e3,
        percentile(latencies, 99) * 1e3,
        sum(r["errors"] for r in results),
    )


async def load_worker(url: str, connections: int, duration: float, body: bytes | None, token: str) -> None:
    """One load process: ``connections`` tasks, each on its own keep-alive connection."""
    import aiohttp

    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # handshakes happen once per connection; not what is measured
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=connections, ssl=ctx, force_close=False)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        deadline = time.perf_counter() + duration

        async def one() -> None:
            nonlocal errors
            while (start := time.perf_counter()) < deadline:
                try:
                    if body is None:
                        async with session.get(url) as r:
                            await r.read()
                    else:
                        async with session.put(url, data=body) as r:
                            await r.read()
                    if r.status != 200:
                        errors += 1
                except aiohttp.ClientError:
                    errors += 1
                latencies.append(time.perf_counter() - start)

        began = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(connections)))
        seconds = time.perf_counter() - began
    json.dump(
        {"requests": len(latencies), "seconds": seconds, "latencies": latencies, "errors": errors}, sys.stdout
    )


# --- the servers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


@dataclass
class Certs:
    ca: Path
    cert: Path
    key: Path


def make_certs(where: Path) -> Certs:
    subprocess.run(
        ["bash", str(ROOT / "hack/gen-certs.sh"), "--out", str(where)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return Certs(where / "ca.crt", where / "tls.crt", where / "tls.key")


class Server:
    """A subprocess serving HTTPS on 127.0.0.1:port, stopped with SIGTERM.

    It runs in ``cwd`` (default: the log's folder) with ``env`` (default: this process's environment);
    hack/benchmarks/commits.py runs each commit's own server code this way."""

    def __init__(
        self,
        argv: list[str],
        port: int,
        name: str,
        log: Path,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv, self.port, self.name, self.log = argv, port, name, log
        self.cwd, self.env = cwd, env
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, certs: Certs, ready_path: str = "/readyz", within: float = 60) -> None:
        with self.log.open("wb") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, stdout=log, stderr=log, cwd=str(self.cwd or self.log.parent), env=self.env
            )
        deadline = time.monotonic() + within
        while True:
            status, _, _ = await fetch(self, "GET", ready_path, certs, token="")
            if status == 200:
                return
            if self.proc.returncode is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{self.name} did not become ready ({status}):\n{tail}")
            await asyncio.sleep(0.2)

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def fetch(
    server: Server, method: str, path: str, certs: Certs, body: bytes | None = None, token: str = TOKEN
) -> tuple[int, dict[str, str], bytes]:
    """One request verifying the serving certificate as the aggregator does."""
    import aiohttp

    ctx = ssl.create_default_context(cafile=str(certs.ca))
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                method,
                server.url + path,
                data=body,
                headers=headers,
                ssl=ctx,
                server_hostname=SERVER_NAME,
                timeout=aiohttp.ClientTimeout(total=10),
            ) as r,
        ):
            return r.status, dict(r.headers), await r.read()
    except (aiohttp.ClientError, OSError, TimeoutError):
        return 0, {}, b""


def serve_argv(port: int, certs: Certs, *extra: str, profile: str | None = None) -> list[str]:
    return [
        sys.executable,
        *(["-m", "cProfile", "-o", profile] if profile else []),
        "-m",
        "apiserver.cli",
        "serve",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={certs.cert}",
        f"--tls-private-key-file={certs.key}",
        *extra,
    ]


def ceiling_argv(port: int, certs: Certs, get_body: Path, put_body: Path) -> list[str]:
    return [
        sys.executable,
        __file__,
        "_ceiling",
        str(port),
        str(certs.cert),
        str(certs.key),
        str(get_body),
        str(put_body),
    ]


def ceiling_server(port: int, cert: str, key: str, get_file: str, put_file: str) -> None:
    """The baseline: aiohttp answering fixed bytes, with no routing, logging or work of any kind."""
    from aiohttp import web

    get_body, put_body = Path(get_file).read_bytes(), Path(put_file).read_bytes()

    async def get(request: web.Request) -> web.Response:
        return web.Response(body=get_body, content_type="application/json")

    async def put(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=put_body, content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/readyz", health)
    app.router.add_get("/{tail:.*}", get)
    app.router.add_put("/{tail:.*}", put)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    web.run_app(app, host="127.0.0.1", port=port, ssl_context=ctx, access_log=None, print=None)


# --- scenarios ------------------------------------------------------------------------------------


@dataclass
class Row:
    source: str
    endpoint: str
    server: Load
    ceiling: Load

    @property
    def ratio(self) -> float:
        return self.server.rps / self.ceiling.rps if self.ceiling.rps else 0.0


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args, self.work = args, work
        self.certs = make_certs(work / "certs")
        self.client = args.client
        if self.client == "auto":
            self.client = "wrk" if shutil.which("wrk") else "python"
        self.rows: list[Row] = []
        self.notes: dict[str, Any] = {"client": self.client, "connections": args.connections}

    async def load(self, server: Server, path: str, body: Path | None, token: str) -> Load:
        run = run_wrk if self.client == "wrk" else run_python_load
        return await run(server.url + path, body, self.args.connections, self.args.duration, token)

    async def compare(self, server: Server, ceiling: Server, path: str, body: Path | None, token: str) -> Row:
        """Alternate ceiling and server runs; keep the median run of each (other load on a shared
        machine moves single runs by a factor of two)."""
        run = run_wrk if self.client == "wrk" else run_python_load
        for target, tok in ((ceiling, ""), (server, token)):  # warm-up: connections, caches, first calls
            await run(target.url + path, body, self.args.connections, min(1.0, self.args.duration / 2), tok)
        ours: list[Load] = []
        base: list[Load] = []
        for _ in range(self.args.rounds):
            base.append(await self.load(ceiling, path, body, ""))
            ours.append(await self.load(server, path, body, token))
        return Row("", "", median(ours), median(base))

    async def throughput(self, source: str, server: Server, token: str) -> None:
        """Check the server's answers, serve the same bytes from the ceiling, load both."""
        vm_body = self.work / "vm.json"
        vm_body.write_bytes(json.dumps(example_vm()).encode())
        answers: dict[str, Path] = {}
        for endpoint, method, path, body in (
            ("GET expand-spec", "GET", GET_PATH, None),
            ("PUT expand-vm-spec", "PUT", PUT_PATH, vm_body.read_bytes()),
        ):
            status, headers, payload = await fetch(server, method, path, self.certs, body, token=token)
            if status != 200:
                raise RuntimeError(f"{source}: {method} {path} answered {status}: {payload[:500]!r}")
            if headers.get("Content-Type", "").split(";")[0] != "application/json":
                raise RuntimeError(f"{source}: {method} {path} answered {headers.get('Content-Type')}")
            answers[endpoint] = self.work / f"{source}-{method}.json"
            answers[endpoint].write_bytes(payload)
        port = free_port()
        ceiling = Server(
            ceiling_argv(port, self.certs, answers["GET expand-spec"], answers["PUT expand-vm-spec"]),
            port,
            "ceiling",
            self.work / "ceiling.log",
        )
        await ceiling.start(self.certs)
        try:
            for endpoint, path, body_file in (
                ("GET expand-spec", GET_PATH, None),
                ("PUT expand-vm-spec", PUT_PATH, vm_body),
            ):
                row = await self.compare(server, ceiling, path, body_file, token)
                row.source, row.endpoint = source, endpoint
                self.rows.append(row)
                print(
                    f"   {source} {endpoint}: {row.server.rps:.0f} rps, ceiling {row.ceiling.rps:.0f}"
                    f" ({row.ratio:.0%})",
                    flush=True,
                )
        finally:
            await ceiling.stop()
        self.notes[f"{source} RSS KiB after load"] = rss_kib(server.pid)
        self.notes[f"{source} response bytes"] = {k: v.stat().st_size for k, v in answers.items()}

    async def folder(self) -> None:
        port = free_port()
        profile = self.args.profile
        argv = serve_argv(port, self.certs, "--manifests", str(ROOT / "examples"), profile=profile)
        server = Server(argv, port, "folder", self.work / "folder.log")
        await server.start(self.certs)
        try:
            self.notes["folder RSS KiB"] = rss_kib(server.pid)
            await self.throughput("folder (profiled)" if profile else "folder", server, token="")
        finally:
            await server.stop()
        if profile:
            print_profile(profile, "folder")

    async def cluster(self) -> None:
        from tests.support.fakekube import FakeKube
        from tests.support.fakekube.reviews import Reviews, Rule
        from tests.support.fakekube.testing import kubeconfig

        fake = FakeKube(bookmark_interval=5.0)
        reviews = Reviews.install(fake)
        reviews.tokens[TOKEN] = ("bench", ["system:authenticated"])
        reviews.rules.append(Rule(answer="allow"))
        for obj in example_objects():
            fake.create(obj)
        await fake.start()
        try:
            config = kubeconfig(fake, self.work / "fake.kubeconfig")
            # Memory: the same server with no extra objects, then with N more cached.
            base_rss = await self.cluster_rss(config, fake)
            for obj in generated_objects(self.args.objects):
                fake.create(obj)
            full_rss = await self.cluster_rss(config, fake)
            self.notes["cluster RSS KiB"] = {
                "examples only": base_rss,
                f"+{self.args.objects} objects": full_rss,
            }
            self.notes["memory per cached object (bytes)"] = round(
                (full_rss - base_rss) * 1024 / self.args.objects
            )
            # Upstream reads, then throughput, with VMs read fresh and with the VM cache.
            for label, extra in (("cluster", ()), ("cluster+vm-cache", ("--vm-cache",))):
                port = free_port()
                profile = self.args.profile_cluster if label == "cluster+vm-cache" else None
                server = Server(
                    serve_argv(port, self.certs, f"--kubeconfig={config}", *extra, profile=profile),
                    port,
                    label,
                    self.work / f"{label}.log",
                )
                await server.start(self.certs)
                try:
                    self.notes[f"{label} upstream reads per request"] = await self.reads(server, fake)
                    await self.throughput(label, server, token=TOKEN)
                finally:
                    await server.stop()
                if profile:
                    print_profile(profile, label)
        finally:
            await fake.stop()

    async def cluster_rss(self, config: str, fake: Any) -> int:
        port = free_port()
        server = Server(
            serve_argv(port, self.certs, f"--kubeconfig={config}"), port, "rss", self.work / "rss.log"
        )
        await server.start(self.certs, within=300)
        try:
            await asyncio.sleep(2)  # let the caches settle after /readyz
            return rss_kib(server.pid)
        finally:
            await server.stop()

    async def reads(self, server: Server, fake: Any) -> dict[str, dict[str, float]]:
        """API requests the fake saw per request: the first request (cold), then 100 more (warm).

        The pinned VM's instancetype comes from a ControllerRevision, read once and then kept."""
        out: dict[str, dict[str, float]] = {}
        pinned = GET_PATH.replace(f"/virtualmachines/{VM_NAME}/", "/virtualmachines/fedora-pinned/")
        for endpoint, method, path, body in (
            ("GET cold", "GET", GET_PATH, None),
            ("GET (revision) cold", "GET", pinned, None),
            ("PUT cold", "PUT", PUT_PATH, json.dumps(example_vm()).encode()),
        ):
            fake.reset_log()
            status, _, payload = await fetch(server, method, path, self.certs, body)
            if status != 200:
                raise RuntimeError(f"{server.name}: {method} {path} answered {status}: {payload[:500]!r}")
            out[endpoint] = upstream_reads(fake)
            fake.reset_log()
            for _ in range(100):
                await fetch(server, method, path, self.certs, body)
            out[endpoint.replace("cold", "warm")] = {k: v / 100 for k, v in upstream_reads(fake).items()}
        return out

    def report(self) -> None:
        print()
        print(
            f"load: {self.client}, {self.args.connections} keep-alive HTTPS connections, {self.args.duration:g}s per run"
        )
        head = f"{'source':17} {'endpoint':20} {'rps':>8} {'p50 ms':>7} {'p99 ms':>7} {'ceiling rps':>11} {'c p50':>6} {'c p99':>6} {'ratio':>6}"
        print(head)
        print("-" * len(head))
        for r in self.rows:
            print(
                f"{r.source:17} {r.endpoint:20} {r.server.rps:8.0f} {r.server.p50_ms:7.2f} {r.server.p99_ms:7.2f}"
                f" {r.ceiling.rps:11.0f} {r.ceiling.p50_ms:6.2f} {r.ceiling.p99_ms:6.2f} {r.ratio:6.0%}"
                + (f"  ({r.server.errors} errors)" if r.server.errors else "")
            )
        print()
        for key, value in self.notes.items():
            print(f"{key}: {value}")


def print_profile(profile: str, label: str) -> None:
    import pstats

    print(f"== where the {label} server's time went (cProfile, {profile}; slows it down ~2x)")
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


def upstream_reads(fake: Any) -> dict[str, float]:
    """Requests to the API by verb and resource, but the watches already open (and their bookmarks)."""
    counts: dict[str, float] = {"total": 0}
    for rec in fake.log:
        if rec.verb == "watch":
            continue
        key = f"{rec.verb} {rec.resource or rec.path}"
        counts[key] = counts.get(key, 0) + 1
        counts["total"] += 1
    return counts


# --- objects --------------------------------------------------------------------------------------


def example_objects() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def example_vm() -> dict[str, Any]:
    (vm,) = [
        d for d in example_objects() if d["kind"] == "VirtualMachine" and d["metadata"]["name"] == VM_NAME
    ]
    return vm


def generated_objects(count: int) -> list[dict[str, Any]]:
    """Instancetypes and preferences shaped like KubeVirt's common-instancetypes, a quarter per kind."""
    api = "instancetype.kubevirt.io/v1beta1"
    out: list[dict[str, Any]] = []
    for i in range(count):
        kind = (
            "VirtualMachineInstancetype",
            "VirtualMachineClusterInstancetype",
            "VirtualMachinePreference",
            "VirtualMachineClusterPreference",
        )[i % 4]
        meta: dict[str, Any] = {
            "name": f"bench-{i:05d}",
            "labels": {
                "instancetype.kubevirt.io/vendor": "bench.example",
                "instancetype.kubevirt.io/version": "1",
                "instancetype.kubevirt.io/common-instancetypes-version": "v1.2.0",
            },
            "annotations": {"instancetype.kubevirt.io/description": f"Benchmark object {i} of {count}."},
        }
        if "Cluster" not in kind:
            meta["namespace"] = f"ns-{i % 50:02d}"
        if "Instancetype" in kind:
            spec: dict[str, Any] = {
                "cpu": {"guest": 1 + i % 16},
                "memory": {"guest": f"{1 + i % 64}Gi"},
                "ioThreadsPolicy": "auto",
            }
        else:
            spec = {
                "cpu": {"preferredCPUTopology": "cores"},
                "devices": {
                    "preferredDiskBus": "virtio",
                    "preferredInterfaceModel": "virtio",
                    "preferredRng": {},
                },
                "features": {"preferredSmm": {}},
                "firmware": {"preferredUseEfi": True, "preferredUseSecureBoot": True},
                "requirements": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}},
            }
        out.append({"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec})
    return out


# --- entry points ---------------------------------------------------------------------------------


async def amain(args: argparse.Namespace, work: Path) -> Bench:
    bench = Bench(args, work)
    print(f"== folder source (examples/), load with {bench.client}", flush=True)
    await bench.folder()
    if not args.skip_cluster:
        print(f"== cluster source against tests/fakekube ({args.objects} extra cached objects)", flush=True)
        await bench.cluster()
    return bench


def write_json(bench: Bench, path: str, collection: tuple[int, list[Any]] | None = None) -> None:
    rows = [
        {**asdict(r), "server_rps": r.server.rps, "ceiling_rps": r.ceiling.rps, "ratio": r.ratio}
        for r in bench.rows
    ]
    doc: dict[str, Any] = {"rows": rows, "notes": bench.notes}
    if collection is not None:
        doc["collection"] = collection[1]
    Path(path).write_text(json.dumps(doc, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_load"]:
        _, url, connections, duration, body, token = argv
        payload = Path(body).read_bytes() if body else None
        asyncio.run(load_worker(url, int(connections), float(duration), payload, token))
        return 0
    if argv[:1] == ["_ceiling"]:
        _, port, cert, key, get_file, put_file = argv
        ceiling_server(int(port), cert, key, get_file, put_file)
        return 0
    parser = argparse.ArgumentParser(prog="hack/benchmarks/server.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measured run (default: 5)")
    parser.add_argument("--connections", type=int, default=64, help="keep-alive connections (default: 64)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs per target; the median counts (default: 3)"
    )
    parser.add_argument("--client", choices=["auto", "wrk", "python"], default="auto", help="load generator")
    parser.add_argument("--objects", type=int, default=10_000, help="cached objects for the memory figure")
    parser.add_argument("--skip-cluster", action="store_true", help="only the folder source")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--profile", metavar="FILE", help="run the folder server under cProfile, print its top"
    )
    parser.add_argument(
        "--profile-cluster",
        metavar="FILE",
        help="run the cluster server with --vm-cache (authentication on) under cProfile, print its top",
    )
    parser.add_argument(
        "--collection",
        metavar="SIZES",
        default="",
        help="then the rendered-VM collection at these VM counts (e.g. 1000,100000) against the real "
        "kube-apiserver of ../shared/k8s (hack/benchmarks/collection.py; off by default: minutes per size)",
    )
    args = parser.parse_args(argv)
    if args.collection and not all(s.strip().isdigit() for s in args.collection.split(",")):
        parser.error("--collection takes VM counts, ascending, comma-separated (e.g. 1000,100000)")
    if not 1 <= args.connections <= 1024 or not 0 < args.duration <= 120 or not 1 <= args.rounds <= 9:
        parser.error("--connections must be 1..1024, --duration 0..120 seconds and --rounds 1..9")
    if args.client == "wrk" and not shutil.which("wrk"):
        parser.error("wrk is not installed (apt-get install wrk), use --client python")
    if args.profile:
        args.profile = str(Path(args.profile).resolve())
    if args.profile_cluster:
        args.profile_cluster = str(Path(args.profile_cluster).resolve())
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="kubevirt-expand-bench-") as tmp:
        try:
            bench = asyncio.run(amain(args, Path(tmp)))
        except KeyboardInterrupt:
            return 130
    bench.report()
    collection = run_collection(args.collection, args.duration) if args.collection else None
    if args.json:
        write_json(bench, args.json, collection)
    return 0 if collection is None or collection[0] == 0 else collection[0]


def run_collection(sizes: str, duration: float) -> tuple[int, list[Any]]:
    """hack/benchmarks/collection.py at ``sizes``, its output shown as it comes: (exit code, figures)."""
    print(f"== rendered-VM collection against the real kube-apiserver ({sizes} VMs)", flush=True)
    with tempfile.TemporaryDirectory(prefix="kubevirt-expand-bench-") as tmp:
        out = Path(tmp) / "collection.json"
        command = [sys.executable, str(ROOT / "hack/benchmarks/collection.py"), f"--sizes={sizes}"]
        command += [f"--seconds={max(duration, 5.0):g}", f"--json={out}"]
        code = subprocess.run(command, check=False).returncode
        return code, json.loads(out.read_text()) if out.exists() else []


if __name__ == "__main__":
    sys.exit(main())
