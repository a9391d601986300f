#!/usr/bin/env python3
"""Denial-of-service floods against ``kubevirt-expand serve``, each beside a baseline measured in the same run.

    .venv/bin/python -m hack.benchmarks.dos SCENARIO [options]

Scenarios (issue 15, items 5-9; run by hand, they are too big for the test suite):

  connections  TCP connections that never send a byte (no TLS handshake): the server's RSS before,
               while they are open and after they close; whether /livez is answered meanwhile.
  held         TLS connections held open (re-opened as the server closes them): /livez and /readyz
               probes as a kubelet sends them (a new connection each, 1 s timeout) on the API port
               and, when the server has one, on the probe port.
  bodies       one caller sends 21 PUTs declaring 3 MiB and one of 1 MiB at a byte a second; another
               caller's PUTs meanwhile (their codes), and when and how the slow ones end.
  puts         distinct large PUTs (3 MB each, two shapes: one long annotation, many small labels) at
               a concurrency: peak and final RSS against the Deployment's memory limit.
  tokens       a real control plane (../shared/k8s) with the server deployed as apiservice/ deploys it:
               a legitimate user's p50/p95 through the aggregator alone, then under a flood of distinct
               garbage bearer tokens sent straight to the server; TokenReviews kube-apiserver received.
  watches      the same, with the Deployment's limits (issue 24): users open watches of
               expandedvirtualmachines through the aggregator until refused, one after the other, then
               a newcomer; what each holds, the 429s and displacements; another user's GET expand-spec
               p50/p99 alone and while the watches are held; RSS per held watch.

The server runs as a subprocess with the folder source (examples/) unless the scenario needs a cluster;
RSS is VmRSS of that process, peak RSS its VmHWM. Every scenario prints the machine's load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from devcluster.objects import small_vm
from tests.support.http_helpers import free_port, start_process

ROOT = Path(__file__).resolve().parents[2]


EXAMPLES = ROOT / "examples"
GROUP_PATH = "/apis/subresources.kubevirt.io/v1"
PUT_PATH = f"{GROUP_PATH}/namespaces/default/expand-vm-spec"
MIB = 1024 * 1024


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


def proc_status(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/PID/status, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used (from /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    return proc_status(pid, "VmRSS") / 1024


def peak_mib(pid: int) -> float:
    return proc_status(pid, "VmHWM") / 1024


def server_flags() -> str:
    """``serve --help`` of this checkout: which of the flags below it has."""
    result = subprocess.run(
        [sys.executable, "-m", "apiserver.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    return result.stdout


@dataclass
class Target:
    """A running server: its API port, the CA that signed its certificate, its pid, its probe port."""

    port: int
    ca_file: Path
    pid: int
    probe_port: int | None
    stop: Callable[[], object]

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))


def start(tmp: Path, *args: str, probe_port: bool = True) -> Target:
    """The server on the folder source, with a probe listener when this checkout has one."""
    extra = list(args)
    port = None
    if probe_port and "--health-probe-bind-address" in server_flags():
        port = free_port()
        extra += ["--health-probe-bind-address", f"127.0.0.1:{port}"]
    proc = start_process(tmp, "--manifests", str(EXAMPLES), "--log-level", "warning", *extra)
    return Target(proc.port, proc.ca_file, proc.process.pid, port, proc.stop)


# --- requests ------------------------------------------------------------------------------------


async def http_status(
    port: int,
    path: str,
    *,
    context: ssl.SSLContext | None,
    limit: float = 1.0,
    method: str = "GET",
    body: bytes = b"",
    headers: Sequence[tuple[str, str]] = (),
    local: str | None = None,
) -> int | str:
    """One request on a new connection, as a kubelet's probe (Connection: close): the status code, or
    why there is none ("refused", "reset", "timeout", ...)."""

    async def one() -> int | str:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1",
            port,
            ssl=context,
            server_hostname="127.0.0.1" if context else None,
            local_addr=(local, 0) if local else None,
        )
        try:
            head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
            head += [f"{k}: {v}" for k, v in headers]
            if body or method in ("PUT", "POST"):
                head.append(f"Content-Length: {len(body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            line = await reader.readline()
            if not line:
                return "closed"
            code = int(line.split()[1])
            await reader.read()  # the rest, to the close
            return code
        finally:
            writer.close()

    try:
        return await asyncio.wait_for(one(), limit)
    except TimeoutError:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except ConnectionResetError:
        return "reset"
    except (ssl.SSLError, OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
        return type(exc).__name__


async def probe_loop(target: Target, seconds: float, period: float = 0.5) -> dict[str, Counter[int | str]]:
    """A kubelet's probes every ``period`` for ``seconds``: /livez and /readyz on the API port (HTTPS)
    and on the probe port (plain HTTP) when there is one."""
    results: dict[str, Counter[int | str]] = {}
    context = target.context()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        checks: list[tuple[str, Awaitable[int | str]]] = []
        for path in ("/livez", "/readyz"):
            checks.append((f"api port {path}", http_status(target.port, path, context=context)))
            if target.probe_port is not None:
                checks.append((f"probe port {path}", http_status(target.probe_port, path, context=None)))
        codes = await asyncio.gather(*(c for _, c in checks))
        for (name, _), code in zip(checks, codes, strict=True):
            results.setdefault(name, Counter())[code] += 1
        await asyncio.sleep(period)
    return results


def show_probes(results: dict[str, Counter[int | str]]) -> str:
    lines = []
    for name, codes in sorted(results.items()):
        total = sum(codes.values())
        ok = codes.get(200, 0)
        rest = ", ".join(f"{k}: {v}" for k, v in codes.most_common() if k != 200)
        lines.append(f"    {name}: {ok}/{total} answered 200" + (f" ({rest})" if rest else ""))
    return "\n".join(lines)


# --- item 5: connections that never send a byte --------------------------------------------------


def open_silent(port: int, count: int, source: str) -> list[socket.socket]:
    socks = []
    for i in range(count):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        socks.append(sock)
        if i % 256 == 255:
            time.sleep(0.02)  # within the listen backlog
    return socks


def server_sockets(pid: int) -> int:
    """Sockets the server process holds open (its listeners and cluster connections included): a
    connection the client sees as open may only be waiting in the kernel's queue, never accepted."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd).startswith("socket:")
    return count


async def scenario_connections(args: argparse.Namespace, tmp: Path) -> None:
    target = start(tmp)
    try:
        await asyncio.sleep(1)
        baseline = await probe_loop(target, 2)
        before = rss_mib(target.pid)
        started = time.monotonic()
        socks = await asyncio.to_thread(open_silent, target.port, args.count, args.attacker)
        await asyncio.sleep(args.hold)
        during = rss_mib(target.pid)
        probes = await probe_loop(target, 3)
        alive = server_sockets(target.pid)
        held = time.monotonic() - started
        for sock in socks:
            sock.close()
        await asyncio.sleep(3)
        after = rss_mib(target.pid)
        print(
            f"connections: {args.count} TCP connections from {args.attacker} that send nothing; probes from "
            f"127.0.0.1 ({load()})"
        )
        print(f"  baseline probes:\n{show_probes(baseline)}")
        print(
            f"  server RSS {before:.0f} MiB before, {during:.0f} MiB with them open "
            f"(+{during - before:.0f} MiB, {(during - before) * 1024 / args.count:.1f} KiB each), "
            f"{after:.0f} MiB after they closed; peak {peak_mib(target.pid):.0f} MiB"
        )
        print(f"  the server holds {alive} sockets after {held:.1f} s")
        print(f"  probes while they were open:\n{show_probes(probes)}")
    finally:
        target.stop()


# --- item 6: TLS connections held open -----------------------------------------------------------


async def hold_tls(
    port: int, context: ssl.SSLContext, stop: asyncio.Event, stats: Counter[str], source: str
) -> None:
    """One connection slot: a TLS connection that sends nothing, re-opened whenever it ends."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1", local_addr=(source, 0)
                ),
                10,
            )
        except (OSError, ssl.SSLError, TimeoutError):
            stats["failed to open"] += 1
            await asyncio.sleep(0.2)
            continue
        stats["opened"] += 1
        try:
            waiter = asyncio.ensure_future(reader.read(1))
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stopper.cancel()
        except (OSError, ssl.SSLError):
            pass
        finally:
            writer.close()


async def attack_held(args: argparse.Namespace, _tmp: Path) -> None:
    """The attacking side of ``held``, run in a process of its own so that its work does not delay the
    probes' client: holds ``--count`` connections for ``--seconds``, then prints what it did."""
    stop = asyncio.Event()
    stats: Counter[str] = Counter()
    context = ssl.create_default_context(cafile=args.ca_file)
    holders = [
        asyncio.ensure_future(hold_tls(args.port, context, stop, stats, args.attacker))
        for _ in range(args.count)
    ]
    await asyncio.sleep(args.seconds)
    stop.set()
    await asyncio.gather(*holders, return_exceptions=True)
    print(orjson.dumps(dict(stats)).decode())


async def scenario_held(args: argparse.Namespace, tmp: Path) -> None:
    target = start(tmp)
    try:
        await asyncio.sleep(1)
        baseline = await probe_loop(target, 2)
        attacker = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "_attack_held",
            "--port",
            str(target.port),
            "--ca-file",
            str(target.ca_file),
            "--count",
            str(args.count),
            "--seconds",
            str(args.ramp + args.seconds),
            "--attacker",
            args.attacker,
            stdout=subprocess.PIPE,
        )
        await asyncio.sleep(args.ramp)
        cpu, started = cpu_seconds(target.pid), time.monotonic()
        probes = await probe_loop(target, args.seconds)
        busy = (cpu_seconds(target.pid) - cpu) / (time.monotonic() - started)
        during = rss_mib(target.pid)
        out, _ = await attacker.communicate()
        print(
            f"held: {args.count} TLS connections from {args.attacker} held for {args.seconds:.0f} s after "
            f"{args.ramp:.0f} s; probes from 127.0.0.1 ({load()})"
        )
        print(f"  baseline probes:\n{show_probes(baseline)}")
        print(f"  probes under the hold:\n{show_probes(probes)}")
        print(
            f"  attacker: {out.decode().strip()}; server RSS {during:.0f} MiB, peak {peak_mib(target.pid):.0f} MiB, "
            f"server CPU {busy:.2f} cores during the probes"
        )
    finally:
        target.stop()


# --- item 7: slow bodies -------------------------------------------------------------------------


def vm_body(name: str, pad: int = 0, labels: int = 0) -> bytes:
    vm: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "instancetype": {"name": "cmedium"},
            "preference": {"name": "fedora"},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }
    if pad:
        vm["metadata"]["annotations"] = {"bench/pad": name + "x" * pad}
    if labels:
        vm["metadata"]["labels"] = {f"l{name}-{i}": "v" for i in range(labels)}
    return orjson.dumps(vm)


async def slow_put(
    port: int, context: ssl.SSLContext, declared: int, local: str, end: float
) -> tuple[str, float]:
    """A PUT declaring ``declared`` bytes, sending one a second: how it ended, after how long."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1", local_addr=(local, 0)
        )
    except (OSError, ssl.SSLError) as exc:
        return f"not connected ({type(exc).__name__})", 0.0
    try:
        writer.write(
            f"PUT {PUT_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared}\r\n\r\n".encode()
        )
        answer = asyncio.ensure_future(reader.readline())
        while time.monotonic() < end:
            done, _ = await asyncio.wait({answer}, timeout=1.0)
            if done:
                line = answer.result()
                code = line.split()[1].decode() if line else "closed"
                return code, time.monotonic() - started
            try:
                writer.write(b" ")
                await writer.drain()
            except (OSError, ssl.SSLError):
                return "closed", time.monotonic() - started
        answer.cancel()
        return "still sending", time.monotonic() - started
    finally:
        writer.close()


async def scenario_bodies(args: argparse.Namespace, tmp: Path) -> None:
    target = start(tmp, probe_port=False)
    try:
        context = target.context()
        headers = [("Content-Type", "application/json")]

        async def other(seconds: float) -> Counter[int | str]:
            codes: Counter[int | str] = Counter()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                good = vm_body(f"other-caller-{time.monotonic_ns()}")  # a new VM each time: no cached answer
                code = await http_status(
                    target.port,
                    PUT_PATH,
                    context=context,
                    method="PUT",
                    body=good,
                    headers=headers,
                    local="127.0.0.3",
                    limit=5,
                )
                codes[code] += 1
                await asyncio.sleep(0.5)
            return codes

        baseline = await other(3)
        end = time.monotonic() + args.seconds
        sizes = [3 * MIB] * 21 + [MIB]
        slow = [asyncio.ensure_future(slow_put(target.port, context, n, "127.0.0.2", end)) for n in sizes]
        await asyncio.sleep(2)
        during = await other(args.seconds - 4)
        ends = await asyncio.gather(*slow)
        print(f"bodies: 22 slow PUTs from 127.0.0.2 (21 x 3 MiB + 1 MiB declared, 1 byte/s) ({load()})")
        print(f"  other caller (127.0.0.3), PUT every 0.5 s, alone: {dict(baseline)}")
        print(f"  other caller while the slow PUTs are held: {dict(during)}")
        outcomes = Counter(code for code, _ in ends)
        times = [t for code, t in ends if code != "still sending"]
        print(
            f"  slow PUTs ended: {dict(outcomes)}"
            + (f", after {min(times):.1f}-{max(times):.1f} s" if times else "")
        )
    finally:
        target.stop()


# --- item 8: large distinct PUTs -----------------------------------------------------------------


class RSSSampler:
    """Samples a process's VmRSS every 50 ms in a thread; ``peak`` is the highest seen."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, RuntimeError):
                self.peak = max(self.peak, rss_mib(self.pid))
            time.sleep(0.05)

    def __enter__(self) -> RSSSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def put_flood(
    target: Target, bodies: Sequence[bytes], concurrency: int
) -> tuple[Counter[int | str], float]:
    import aiohttp

    codes: Counter[int | str] = Counter()
    queue = list(reversed(bodies))
    connector = aiohttp.TCPConnector(ssl=target.context(), limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=120)
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def worker() -> None:
            while queue:
                body = queue.pop()
                for _attempt in range(10):  # as client-go: a 429 is retried after its Retry-After
                    try:
                        async with session.put(
                            f"https://127.0.0.1:{target.port}{PUT_PATH}",
                            data=body,
                            headers={"Content-Type": "application/json"},
                        ) as resp:
                            await resp.read()
                            codes[resp.status] += 1
                            if resp.status != 429:
                                break
                            await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
                    except (aiohttp.ClientError, TimeoutError) as exc:
                        codes[type(exc).__name__] += 1
                        break

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return codes, time.monotonic() - started


async def scenario_puts(args: argparse.Namespace, tmp: Path) -> None:
    shapes = {
        "annotation": lambda name: vm_body(name, pad=3_000_000),
        "labels": lambda name: vm_body(name, labels=115_000),
    }
    for shape in args.shapes:
        make = shapes[shape]
        sample = make("sample-0000")
        (tmp / shape).mkdir()
        target = start(tmp / shape, probe_port=False)
        try:
            await asyncio.sleep(1)
            before = rss_mib(target.pid)
            bodies = [make(f"vm-{i:04d}") for i in range(args.count)]
            with RSSSampler(target.pid) as sampler:
                codes, seconds = await put_flood(target, bodies, args.concurrency)
                await asyncio.sleep(1)
            del bodies
            await asyncio.sleep(3)
            after = rss_mib(target.pid)
            print(
                f"puts ({shape}, {len(sample) / 1e6:.1f} MB each): {args.count} distinct at {args.concurrency} "
                f"concurrent in {seconds:.1f} s ({load()})"
            )
            print(
                f"  server RSS {before:.0f} MiB before, peak {sampler.peak:.0f} MiB (sampled; VmHWM "
                f"{peak_mib(target.pid):.0f} MiB), {after:.0f} MiB after; answers {dict(codes)} (429s retried "
                "after Retry-After, as client-go does)"
            )
        finally:
            target.stop()


# --- item 9: TokenReview flood -------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def scenario_tokens(args: argparse.Namespace, tmp: Path) -> None:
    from tests.realk8s.controlplane import ControlPlane, unavailable
    from tests.realk8s.deployed import DeployedServer

    reason = unavailable()
    if reason:
        raise SystemExit(f"hack.benchmarks.dos tokens: no real control plane here: {reason}")
    cluster = ControlPlane(tmp / "plane")
    server: DeployedServer | None = None
    try:
        cluster.start()
        from tests.realk8s.controlplane import CRDS_FILE

        cluster.kubectl("apply", "-f", str(CRDS_FILE))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        server = DeployedServer(cluster, tmp / "deployed", extra_args=args.server_args)
        server.install()
        server.start()
        server.register()
        namespace = "bench"
        cluster.kubectl("create", "namespace", namespace)
        instancetype, vm = small_vm(namespace)
        cluster.apply(instancetype, vm)
        path = f"{GROUP_PATH}/namespaces/{namespace}/virtualmachines/vm1/expand-spec"
        import aiohttp

        def reviews() -> float:
            """TokenReviews kube-apiserver has answered so far (its apiserver_request_total)."""
            total = 0.0
            for line in cluster.request("/metrics").body.decode().splitlines():
                if line.startswith("apiserver_request_total{") and 'resource="tokenreviews"' in line:
                    total += float(line.rsplit(" ", 1)[1])
            return total

        async def legit(session: aiohttp.ClientSession, seconds: float) -> list[float]:
            """The admin's GETs of expand-spec through the aggregator, one at a time, keep-alive."""
            latencies: list[float] = []
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                started = time.perf_counter()
                async with session.get(cluster.url + path) as resp:
                    await resp.read()
                    if resp.status == 200:
                        latencies.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.02)
            return latencies

        connector = aiohttp.TCPConnector(ssl=cluster.admin_ssl(), limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:
            await legit(session, 2)  # warm: connection, caches
            alone = await legit(session, args.seconds)
            assert server.process is not None and cluster.apiserver is not None
            pids = {
                "server": server.process.pid,
                "kube-apiserver": cluster.apiserver.pid,
                "bench": os.getpid(),
            }
            cpu_alone = {name: cpu_seconds(pid) for name, pid in pids.items()}
            alone_started = time.monotonic()
            await legit(session, 3)
            cpu_alone = {
                name: (cpu_seconds(pid) - cpu_alone[name]) / (time.monotonic() - alone_started)
                for name, pid in pids.items()
            }
            before = reviews()
            # The flood from a process of its own, so that its work does not delay the legitimate client.
            attacker = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "_attack_tokens",
                "--url",
                server.url + path,
                "--ca-file",
                str(server.serving_ca_file),
                "--flooders",
                str(args.flooders),
                "--seconds",
                str(args.seconds + 1),
                stdout=subprocess.PIPE,
            )
            await asyncio.sleep(1)
            pids["flood"] = attacker.pid
            cpu_flood = {name: cpu_seconds(pid) for name, pid in pids.items()}
            flood_started = time.monotonic()
            attacked = await legit(session, args.seconds)
            cpu_flood = {
                name: (cpu_seconds(pid) - cpu_flood[name]) / (time.monotonic() - flood_started)
                for name, pid in pids.items()
            }
            out, _ = await attacker.communicate()
            counts = orjson.loads(out)
            made = reviews() - before
            again = await legit(session, args.seconds)
        p50a, p95a = statistics.median(alone), percentile(alone, 0.95)
        p50f, p95f = statistics.median(attacked), percentile(attacked, 0.95)
        p50b, p95b = statistics.median(again), percentile(again, 0.95)
        print(
            f"tokens: {args.flooders} flooders of distinct garbage tokens for ~{args.seconds + 1:.0f} s ({load()})"
        )
        print(f"  flood answers: {counts}; TokenReviews kube-apiserver answered: {made:.0f}")
        print(
            f"  legitimate GET through the aggregator alone: p50 {p50a:.1f} ms, p95 {p95a:.1f} ms "
            f"({len(alone)} requests); after the flood: p50 {p50b:.1f} ms, p95 {p95b:.1f} ms"
        )
        print(
            f"  under the flood: p50 {p50f:.1f} ms, p95 {p95f:.1f} ms ({len(attacked)} requests); "
            f"p95 ratio {p95f / p95a:.1f}x"
        )
        share = ", ".join(f"{name} {cpu_alone.get(name, 0.0):.2f} -> {cpu_flood[name]:.2f}" for name in pids)
        print(f"  CPU (cores busy) alone -> under the flood: {share}")
    finally:
        if server is not None:
            server.stop()
        cluster.close()


async def scenario_watches(args: argparse.Namespace, tmp: Path) -> None:
    import aiohttp

    from tests.realk8s.controlplane import CRDS_FILE, ControlPlane, unavailable
    from tests.realk8s.deployed import DeployedServer

    reason = unavailable()
    if reason:
        raise SystemExit(f"hack.benchmarks.dos watches: no real control plane here: {reason}")
    cluster = ControlPlane(tmp / "plane")
    server: DeployedServer | None = None
    sessions: list[aiohttp.ClientSession] = []
    held: list[aiohttp.ClientResponse] = []
    try:
        cluster.start()
        cluster.kubectl("apply", "-f", str(CRDS_FILE))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        server = DeployedServer(cluster, tmp / "deployed", extra_args=args.server_args)
        server.install()
        server.start()
        server.register()
        namespace = "bench"
        cluster.kubectl("create", "namespace", namespace)
        instancetype, vm = small_vm(namespace)
        cluster.apply(instancetype, vm)
        get_path = f"{GROUP_PATH}/namespaces/{namespace}/virtualmachines/vm1/expand-spec"
        watch_path = (
            f"/apis/expand.kubevirt-expand.io/v1/namespaces/{namespace}/expandedvirtualmachines"
            "?watch=1&timeoutSeconds=600"
        )
        for _ in range(100):  # the collection lists the VM once it is rendered
            if b"vm1" in cluster.request(watch_path.split("?")[0]).body:
                break
            await asyncio.sleep(0.1)

        async def gets(session: aiohttp.ClientSession, seconds: float) -> list[float]:
            """Another user's GETs of expand-spec through the aggregator, one at a time, keep-alive."""
            latencies: list[float] = []
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                started = time.perf_counter()
                async with session.get(cluster.url + get_path) as resp:
                    await resp.read()
                    assert resp.status == 200, resp.status
                    latencies.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.02)
            return latencies

        admin_ssl = cluster.admin_ssl()
        # The admin impersonating each user, in system:masters so that RBAC lets every one watch: the
        # places are counted by user name.
        as_user = {"Impersonate-Group": "system:masters"}

        async def watch(user: str) -> int:
            """One watch as ``user``, left open when accepted."""
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=admin_ssl, limit=1))
            sessions.append(session)
            resp = await session.get(cluster.url + watch_path, headers={**as_user, "Impersonate-User": user})
            if resp.status == 200:
                held.append(resp)
            else:
                await resp.read()
                resp.release()
                await session.close()
            return resp.status

        def metric(name: str) -> float:
            admin = cluster.pki.admin
            assert server is not None
            _code, body = server.direct("/metrics", cert=(admin.cert_file, admin.key_file))
            line = next(x for x in body.decode().splitlines() if x.startswith(f"kubevirt_expand_{name} "))
            return float(line.split()[1])

        connector = aiohttp.TCPConnector(ssl=cluster.admin_ssl(), limit=1)
        async with aiohttp.ClientSession(connector=connector) as getter:
            await gets(getter, 2)  # warm: connection, caches
            alone = await gets(getter, args.seconds)
            assert server.process is not None
            before = rss_mib(server.process.pid)
            started = time.monotonic()
            per_user: dict[str, Counter[int]] = {}
            for n in range(args.users):
                user = f"watcher-{n}"
                codes: Counter[int] = Counter()
                while codes[429] < 3:  # until refused (three times, to be sure)
                    code = await watch(user)
                    codes[code] += 1
                    if code not in (200, 429):
                        raise SystemExit(
                            f"hack.benchmarks.dos watches: a watch as {user} was answered {code}"
                        )
                per_user[user] = codes
                print(f"  {user}: {dict(codes)} after {time.monotonic() - started:.1f} s", flush=True)
            opening = time.monotonic() - started
            holding = metric("watches_held")
            during_rss = rss_mib(server.process.pid)
            during = await gets(getter, args.seconds)
            late = await watch("newcomer")
            displaced = metric("watches_displaced_total")
        print(f"watches: {args.users} users, each opening watches until refused ({load()})")
        for user, codes in per_user.items():
            print(
                f"  {user}: {codes[200]} accepted, {codes[429]} refused 429, others {dict(codes - Counter({200: codes[200], 429: codes[429]}))}"
            )
        print(
            f"  watches held: {holding:.0f} after {opening:.1f} s; a newcomer's watch: {late}; displaced: {displaced:.0f}"
        )
        print(
            f"  another user's GET alone: p50 {statistics.median(alone):.1f} ms, p99 {percentile(alone, 0.99):.1f} ms "
            f"({len(alone)}); while they are held: p50 {statistics.median(during):.1f} ms, "
            f"p99 {percentile(during, 0.99):.1f} ms ({len(during)})"
        )
        print(
            f"  server RSS {before:.0f} -> {during_rss:.0f} MiB: "
            f"{(during_rss - before) * 1024 / max(1.0, holding):.0f} KiB per held watch"
        )
    finally:
        for resp in held:
            resp.close()
        for session in sessions:
            await session.close()
        if server is not None:
            server.stop()
        cluster.close()


async def attack_tokens(args: argparse.Namespace, _tmp: Path) -> None:
    """The attacking side of ``tokens``: ``--flooders`` keep-alive connections sending distinct garbage
    bearer tokens for ``--seconds``; prints the answers it got."""
    import aiohttp

    counts: Counter[int | str] = Counter()
    end = time.monotonic() + args.seconds
    context = ssl.create_default_context(cafile=args.ca_file)

    async def flood(number: int) -> None:
        connector = aiohttp.TCPConnector(ssl=context, limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:
            n = 0
            while time.monotonic() < end:
                n += 1
                token = f"garbage.{os.getpid()}.{number}.{n}"
                try:
                    async with session.get(args.url, headers={"Authorization": f"Bearer {token}"}) as resp:
                        await resp.read()
                        counts[resp.status] += 1
                except (aiohttp.ClientError, TimeoutError) as exc:
                    counts[type(exc).__name__] += 1
                    await asyncio.sleep(0.01)  # refused at once: try again, but do not spin

    await asyncio.gather(*(flood(i) for i in range(args.flooders)))
    print(orjson.dumps({str(k): v for k, v in counts.items()}).decode())


SCENARIOS = {
    "_attack_tokens": attack_tokens,
    "_attack_held": attack_held,
    "connections": scenario_connections,
    "held": scenario_held,
    "bodies": scenario_bodies,
    "puts": scenario_puts,
    "tokens": scenario_tokens,
    "watches": scenario_watches,
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="scenario", required=True, metavar="SCENARIO")
    p = sub.add_parser("connections", help="TCP connections that send nothing")
    p.add_argument("--count", type=int, default=6500)
    p.add_argument("--hold", type=float, default=5.0, help="seconds before RSS is read")
    p.add_argument(
        "--attacker", default="127.0.0.2", help="source address of the flood (127.0.0.1: the probes')"
    )
    p = sub.add_parser("held", help="TLS connections held open, kubelet probes meanwhile")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--ramp", type=float, default=10.0)
    p.add_argument(
        "--attacker", default="127.0.0.2", help="source address of the flood (127.0.0.1: the probes')"
    )
    p.add_argument("--seconds", type=float, default=30.0)
    p = sub.add_parser("_attack_held")  # the attacking process of "held"
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca-file", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--attacker", required=True)
    p = sub.add_parser("_attack_tokens")  # the attacking process of "tokens"
    p.add_argument("--url", required=True)
    p.add_argument("--ca-file", required=True)
    p.add_argument("--flooders", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p = sub.add_parser("bodies", help="slow PUT bodies from one caller, another caller's PUTs")
    p.add_argument("--seconds", type=float, default=40.0)
    p = sub.add_parser("puts", help="distinct large PUTs, RSS")
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=30)
    p.add_argument("--shapes", nargs="+", default=["annotation", "labels"], choices=["annotation", "labels"])
    p = sub.add_parser("tokens", help="garbage-token flood against a real control plane")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--flooders", type=int, default=32)
    p.add_argument("--server-args", nargs="*", default=[])
    p = sub.add_parser("watches", help="users holding watches through a real aggregator, another user's GETs")
    p.add_argument("--users", type=int, default=6, help="users opening watches one after the other")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds of GETs alone and while held")
    p.add_argument(
        "--server-args", action="append", default=[], help="a flag added to the Deployment's (repeatable)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(SCENARIOS[args.scenario](args, Path(tmp)))


if __name__ == "__main__":
    main()
