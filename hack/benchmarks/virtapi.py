#!/usr/bin/env python3
"""Ours beside KubeVirt's own virt-api, both behind one kube-apiserver's aggregator, timed in one run.

Usage: .venv/bin/python -m hack.benchmarks.virtapi [--rounds N] [--seconds S] [--connections N]
                                                   [--processes N] [--json FILE]

Starts etcd and kube-apiserver of ../shared/k8s, KubeVirt's virt-api with ../shared/oracle/virt-api/run.sh
(the binary from ``$KUBEVIRT_VIRT_API`` or where ../shared/oracle/build.sh puts it; without it this says so
and exits 0) registered as subresources.kubevirt.io with its client rate limits lifted, and ours as the
own-group overlay deploys it (``--vm-cache``) under expand.kubevirt-expand.io. examples/ is stored in the
cluster. Then, alternating ours and virt-api round by round (``--rounds`` each, ``--seconds`` long):
  * GET expand-spec of the example VM ``fedora``;
  * PUT expand-vm-spec of that VM as stored;
each through kube-apiserver as the cluster admin (client certificate), ``--connections`` keep-alive
connections split over ``--processes`` client processes. It prints, per server and request, the median
round's requests/s, p50 and p99, the server's CPU per request, and ours against virt-api's as a ratio.
The answers of both are checked equal (as JSON) before timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from devcluster import virtapi
from devcluster.controlplane import ControlPlane, unavailable
from devcluster.deployed import DeployedServer
from devcluster.paths import CRDS_FILE, REPO
from hack.benchmarks.server import Load, percentile

OURS = "/apis/expand.kubevirt-expand.io/v1"
VIRT_API = "/apis/subresources.kubevirt.io/v1"
NAMESPACE, VM = "default", "fedora"
GET_TAIL = f"/namespaces/{NAMESPACE}/virtualmachines/{VM}/expand-spec"
PUT_TAIL = f"/namespaces/{NAMESPACE}/expand-vm-spec"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Round:
    server: str
    request: str
    load: Load
    cpu_ms_per_request: float


async def load_worker(
    url: str, connections: int, seconds: float, body: bytes | None, ca: str, cert: str, key: str
) -> None:
    """One client process: ``connections`` tasks on a keep-alive connection each, for ``seconds``."""
    import aiohttp

    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=connections, ssl=ctx)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        deadline = time.perf_counter() + seconds

        async def one() -> None:
            nonlocal errors
            while (start := time.perf_counter()) < deadline:
                try:
                    call = session.get(url) if body is None else session.put(url, data=body)
                    async with call as resp:
                        await resp.read()
                    if resp.status != 200:
                        errors += 1
                except aiohttp.ClientError:
                    errors += 1
                latencies.append(time.perf_counter() - start)

        began = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(connections)))
        took = time.perf_counter() - began
    json.dump(
        {"requests": len(latencies), "seconds": took, "latencies": latencies, "errors": errors}, sys.stdout
    )


async def run_load(
    plane: ControlPlane, path: str, body: Path | None, connections: int, processes: int, seconds: float
) -> Load:
    shares = [connections // processes + (1 if i < connections % processes else 0) for i in range(processes)]
    admin = plane.pki.admin
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hack.benchmarks.virtapi",
            "_load",
            plane.url + path,
            str(share),
            str(seconds),
            str(body or ""),
            str(plane.pki.ca_file),
            str(admin.cert_file),
            str(admin.key_file),
            stdout=asyncio.subprocess.PIPE,
            cwd=REPO,
        )
        for share in shares
        if share
    ]
    results = [json.loads((await asyncio.wait_for(p.communicate(), seconds + 60))[0]) for p in procs]
    latencies = sorted(x for r in results for x in r["latencies"])
    return Load(
        sum(r["requests"] for r in results),
        max(r["seconds"] for r in results),
        percentile(latencies, 50) * 1e3,
        percentile(latencies, 99) * 1e3,
        sum(r["errors"] for r in results),
    )


def same_answers(plane: ControlPlane, vm_file: Path) -> None:
    """Both servers give the same answer (as JSON) to what is timed; a benchmark of different work says nothing."""
    for tail, method, body in ((GET_TAIL, "GET", None), (PUT_TAIL, "PUT", vm_file.read_bytes())):
        headers = {"Content-Type": "application/json"} if body else {}
        ours = plane.request(OURS + tail, method=method, body=body, headers=headers)
        theirs = plane.request(VIRT_API + tail, method=method, body=body, headers=headers)
        if (ours.status, ours.json()) != (theirs.status, theirs.json()) or ours.status != 200:
            raise SystemExit(f"{method} answers differ: ours {ours.status}, virt-api {theirs.status}")


def median(rounds: list[Round]) -> Round:
    return sorted(rounds, key=lambda r: r.load.rps)[len(rounds) // 2]


def show(results: list[Round]) -> list[str]:
    lines = []
    for request in ("GET", "PUT"):
        best = {}
        for server in ("ours", "virt-api"):
            picked = [r for r in results if r.server == server and r.request == request]
            if not picked:
                continue
            best[server] = m = median(picked)
            rates = ", ".join(f"{r.load.rps:.0f}" for r in picked)
            lines.append(
                f"{request} {server:8s} {m.load.rps:7.0f} req/s  p50 {m.load.p50_ms:6.1f} ms  "
                f"p99 {m.load.p99_ms:6.1f} ms  CPU {m.cpu_ms_per_request:5.2f} ms/req  "
                f"errors {m.load.errors}  (rounds: {rates})"
            )
        if len(best) == 2:
            ours, theirs = best["ours"], best["virt-api"]
            lines.append(
                f"{request} ours/virt-api: throughput {ours.load.rps / theirs.load.rps:.2f}x, "
                f"p50 {theirs.load.p50_ms / ours.load.p50_ms:.2f}x lower, "
                f"CPU per request {theirs.cpu_ms_per_request / ours.cpu_ms_per_request:.2f}x less"
            )
    return lines


async def measure(args: argparse.Namespace, work: Path) -> list[Round]:
    plane = ControlPlane(work / "plane")
    api: virtapi.VirtApi | None = None
    ours: DeployedServer | None = None
    try:
        plane.start()
        plane.kubectl("apply", "-f", str(CRDS_FILE))
        plane.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        api = virtapi.VirtApi(plane, work / "virt-api")
        api.start()
        ours = DeployedServer(plane, work / "ours", overlay=REPO / "apiservice" / "overlays" / "own-group")
        ours.install()
        ours.start()
        ours.register()
        for path in sorted((REPO / "examples").glob("*.yaml")):
            if path.name != "kubevirt.yaml":  # the CR run.sh made stays (rate limits lifted)
                plane.kubectl("apply", "-f", str(path))
        vm_file = work / "vm.json"
        vm_file.write_text(json.dumps(plane.get_json("vm", "-n", NAMESPACE, VM)))
        same_answers(plane, vm_file)
        assert ours.process is not None and api.pid is not None
        pids = {"ours": ours.process.pid, "virt-api": api.pid}
        prefixes = {"ours": OURS, "virt-api": VIRT_API}
        results: list[Round] = []
        for request, tail, body in (("GET", GET_TAIL, None), ("PUT", PUT_TAIL, vm_file)):
            await run_load(plane, prefixes["ours"] + tail, body, args.connections, args.processes, 1)  # warm
            await run_load(plane, prefixes["virt-api"] + tail, body, args.connections, args.processes, 1)
            for n in range(args.rounds):
                order = ("ours", "virt-api") if n % 2 == 0 else ("virt-api", "ours")
                for server in order:
                    before = cpu_seconds(pids[server])
                    load = await run_load(
                        plane, prefixes[server] + tail, body, args.connections, args.processes, args.seconds
                    )
                    cpu = (cpu_seconds(pids[server]) - before) * 1e3 / max(1, load.requests)
                    results.append(Round(server, request, load, cpu))
                    print(
                        f"  {request} {server:8s} round {n + 1}: {load.rps:.0f} req/s, p50 {load.p50_ms:.1f} ms, "
                        f"p99 {load.p99_ms:.1f} ms, {load.errors} errors",
                        flush=True,
                    )
        return results
    finally:
        if ours is not None:
            ours.stop()
        if api is not None:
            api.stop()
        plane.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_load"]:
        url, connections, seconds, body, ca, cert, key = argv[1:8]
        data = Path(body).read_bytes() if body else None
        asyncio.run(load_worker(url, int(connections), float(seconds), data, ca, cert, key))
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per server and request (default 3)")
    parser.add_argument("--seconds", type=float, default=5, help="length of a round (default 5)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (default 16)")
    parser.add_argument("--processes", type=int, default=2, help="client processes (default 2)")
    parser.add_argument("--json", type=Path, help="also write the rounds here")
    args = parser.parse_args(argv)
    reason = unavailable() or virtapi.unavailable()
    if reason:
        print(f"not run: {reason}")
        return 0
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-virtapi-") as tmp:
        results = asyncio.run(measure(args, Path(tmp)))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for line in show(results):
        print(line)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
