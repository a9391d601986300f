#!/usr/bin/env python3
"""The rendered-VM collection at cluster sizes, against a real kube-apiserver measured in the same run.

Usage: .venv/bin/python -m hack.benchmarks.collection [--sizes 1000,10000] [--seconds S] [--json FILE]

Starts etcd and kube-apiserver of ../shared/k8s (KUBEBUILDER_ASSETS may name another folder), loads
VMs with hack/benchmarks/load_vms.py (500 per namespace, the first 1,000 on one shared cluster instancetype), and
for each size runs ``kubevirt-expand serve --vm-cache`` against it, then measures:
  * list of the 500 rendered VMs of one namespace, beside kube-apiserver's list of the same 500 VMs
    from its watch cache (resourceVersion=0), median of repeated requests, and the ratio;
  * every VM across namespaces in pages of limit=500, beside kube-apiserver's paginated list;
  * warm GET expand-spec throughput and p99 on random VMs (16 connections);
  * the shared instancetype edited: time until all its VMs' MODIFIED events arrived on one watch;
  * CPU of the server with 100 idle watchers, against the same time with none;
  * RSS, time to ready, and memory per VM between the sizes;
  * kube-apiserver restarted under GET load: p99 before, during the relist that follows and after it,
    and how long after kube-apiserver is ready again a VM edited then shows (skip: --no-restart).
With ``--flat`` (one size, the last of ``--sizes``, loaded with ``--etcd``'s way) it measures only GET
expand-spec at cluster size, on one server: random VMs among the first 1,000 against random VMs among
all of them, in windows that alternate (``--rounds``, ``--seconds`` each), for the cluster admin's
client certificate and for a ServiceAccount's bearer token whose RBAC is a RoleBinding per namespace
(TokenReview and SubjectAccessReview made by the server); ``--connections`` (16) over ``--processes``
load processes. It prints requests/s, p99 and the server's CPU per request of each window, and per
caller the medians' ratio all / 1,000 and each round's (its two windows side by side) with their median. ``--warmup S`` runs S seconds of the same load before each
measured window, not measured: without it each window begins where the other caller's windows left its
decisions expired (a caller's windows come back after more than their 10 s), so it measures the reviews
of every namespace it asks as well as the steady rate. ``--profile FILE`` runs the server under cProfile (with
``--sets all``: the all-VMs case alone).
All requests go straight to each server over HTTPS with the cluster admin's client certificate (the
server takes the cluster's client CA as kube-apiserver's delegates do), not through the aggregator.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from yarl import URL

from devcluster.controlplane import ControlPlane, free_port, unavailable
from devcluster.deployed import metric_in
from devcluster.paths import CRDS_FILE
from hack.benchmarks import load_vms

ROOT = Path(__file__).resolve().parents[2]


EVM = "/apis/expand.kubevirt-expand.io/v1"
PER_NAMESPACE = 500


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    def __init__(self, plane: ControlPlane, workdir: Path, profile: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.log = workdir / f"server-{self.port}.log"
        command = [
            sys.executable,
            *(["-m", "cProfile", "-o", str(profile)] if profile else []),
            "-m",
            "apiserver.cli",
            "serve",
            "--vm-cache",
            f"--kubeconfig={plane.admin_kubeconfig}",
            f"--secure-port={self.port}",
            f"--cert-dir={workdir / 'certs'}",
            "--log-level=warning",
        ]
        self.started = time.monotonic()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=workdir)

    async def wait_ready(self, http: aiohttp.ClientSession, seconds: float = 600) -> float:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                async with http.get(self.url + "/readyz") as resp:
                    if resp.status == 200:
                        return time.monotonic() - self.started
            except aiohttp.ClientError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            await asyncio.sleep(0.1)
        raise RuntimeError("server not ready")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def client_ssl(plane: ControlPlane) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(plane.pki.ca_file))
    ctx.load_cert_chain(str(plane.pki.admin.cert_file), str(plane.pki.admin.key_file))
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the server's self-signed certificate, on loopback
    return ctx


async def timed_get(http: aiohttp.ClientSession, url: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    async with http.get(url) as resp:
        body = await resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET {url}: {resp.status} {body[:300]!r}")
    return time.perf_counter() - start, body


async def median_get(http: aiohttp.ClientSession, url: str, reps: int) -> float:
    await timed_get(http, url)  # warm
    return statistics.median([(await timed_get(http, url))[0] for _ in range(reps)])


async def paged(http: aiohttp.ClientSession, url: str) -> tuple[float, int]:
    start = time.perf_counter()
    token, count = "", 0
    while True:
        sep = "&" if "?" in url else "?"
        _, body = await timed_get(http, f"{url}{sep}limit=500" + (f"&continue={token}" if token else ""))
        doc = json.loads(body)
        count += len(doc["items"])
        token = doc["metadata"].get("continue", "")
        if not token:
            return time.perf_counter() - start, count


async def get_load(
    http: aiohttp.ClientSession, url: str, names: list[tuple[str, str]], seconds: float
) -> dict[str, float]:
    latencies: list[float] = []
    end = time.monotonic() + seconds

    async def worker() -> None:
        while time.monotonic() < end:
            ns, name = random.choice(names)
            t, _ = await timed_get(
                http,
                f"{url}/apis/subresources.kubevirt.io/v1/namespaces/{ns}/virtualmachines/{name}/expand-spec",
            )
            latencies.append(t)

    start = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(16)))
    took = time.monotonic() - start
    latencies.sort()
    return {
        "rps": len(latencies) / took,
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3,
    }


async def instancetype_edit(
    http: aiohttp.ClientSession, plane: ControlPlane, server: Server, shared: int, cpus: int
) -> float:
    _, body = await timed_get(http, f"{server.url}{EVM}/expandedvirtualmachines?limit=1")
    version = json.loads(body)["metadata"]["resourceVersion"]
    got = 0
    done = asyncio.Event()
    edited_at = 0.0

    async def watch() -> None:
        nonlocal got
        async with http.get(
            f"{server.url}{EVM}/expandedvirtualmachines?watch=true&resourceVersion={version}",
            timeout=aiohttp.ClientTimeout(total=None),
        ) as resp:
            async for line in resp.content:
                if line.strip() and json.loads(line)["type"] == "MODIFIED":
                    got += 1
                    if got >= shared:
                        done.set()
                        return

    task = asyncio.create_task(watch())
    await asyncio.sleep(1)
    patch = json.dumps({"spec": {"cpu": {"guest": cpus}}})
    async with http.patch(
        f"{plane.url}/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes/bench-shared",
        data=patch,
        headers={"Content-Type": "application/merge-patch+json"},
    ) as resp:
        assert resp.status == 200, await resp.text()
        edited_at = time.perf_counter()
    await asyncio.wait_for(done.wait(), 60)
    took = time.perf_counter() - edited_at
    task.cancel()
    return took


async def idle_watchers(ctx: ssl.SSLContext, server: Server, n: int, seconds: float) -> tuple[float, float]:
    pid = server.process.pid
    # A session of their own: each watch holds its connection for as long as it lasts.
    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=0))
    before = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    baseline = cpu_seconds(pid) - before
    responses = []
    for _ in range(n):
        resp = await http.get(
            f"{server.url}{EVM}/expandedvirtualmachines?watch=true&resourceVersion=&allowWatchBookmarks=true&limit=1&fieldSelector=metadata.name%3Dnone",
            timeout=aiohttp.ClientTimeout(total=None),
        )
        responses.append(resp)
    await asyncio.sleep(2)
    before = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    watched = cpu_seconds(pid) - before
    for resp in responses:
        resp.close()
    await http.close()
    return baseline, watched


def _p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return round(ordered[int(len(ordered) * 0.99)] * 1e3, 1) if ordered else float("nan")


async def restart(
    http: aiohttp.ClientSession,
    plane: ControlPlane,
    server: Server,
    names: list[tuple[str, str]],
    seconds: float,
) -> dict[str, Any]:
    """kube-apiserver restarted under GET expand-spec load (16 connections, random VMs).

    A fresh kube-apiserver's watch cache starts at the current revision, so the server's watches
    resume from versions it no longer has: 410, and the VM cache lists every VM again. Measured: p99
    of the GETs answered before the restart (steady), between the restart and the moment the server
    shows a VM edited right after kube-apiserver was ready again (during), and for ``seconds`` after
    that (after); the time from ready to that VM being fresh; failed GETs while kube-apiserver was
    away (the server authorizes through it).
    """
    phase = "steady"
    latencies: dict[str, list[float]] = {"steady": [], "during": [], "after": []}
    failed = 0
    stop = False

    async def worker() -> None:
        nonlocal failed
        while not stop:
            ns, name = random.choice(names)
            now = phase
            try:
                t, _ = await timed_get(
                    http,
                    f"{server.url}/apis/subresources.kubevirt.io/v1/namespaces/{ns}/virtualmachines/{name}"
                    "/expand-spec",
                )
            except (RuntimeError, aiohttp.ClientError):
                failed += 1
                await asyncio.sleep(0.05)
                continue
            if now == phase:
                latencies[now].append(t)

    workers = [asyncio.create_task(worker()) for _ in range(16)]
    await asyncio.sleep(seconds)
    phase = "during"
    failed = 0
    started = time.monotonic()
    await asyncio.to_thread(plane.stop_apiserver)
    await asyncio.to_thread(plane.start_apiserver, 300)
    ready = time.monotonic()
    label = str(int(time.time()))
    ns, name = names[0]
    patch = json.dumps({"metadata": {"labels": {"bench-restart": label}}})
    async with http.patch(
        f"{plane.url}/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines/{name}",
        data=patch,
        headers={"Content-Type": "application/merge-patch+json"},
    ) as resp:
        assert resp.status == 200, await resp.text()
    while True:
        try:
            _, body = await timed_get(
                http, f"{server.url}{EVM}/namespaces/{ns}/expandedvirtualmachines/{name}"
            )
            if json.loads(body)["metadata"].get("labels", {}).get("bench-restart") == label:
                break
        except (RuntimeError, aiohttp.ClientError):
            pass
        await asyncio.sleep(0.05)
    fresh = time.monotonic()
    failed_during = failed
    phase = "after"
    await asyncio.sleep(seconds)
    stop = True
    await asyncio.gather(*workers)
    return {
        "restart_down_seconds": round(ready - started, 1),
        "fresh_after_ready_seconds": round(fresh - ready, 2),
        "get_p99_steady_ms": _p99(latencies["steady"]),
        "get_p99_during_ms": _p99(latencies["during"]),
        "get_p99_after_ms": _p99(latencies["after"]),
        "get_failed_during": failed_during,
        "get_during": len(latencies["during"]),
    }


def note(text: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


async def measure(
    plane: ControlPlane,
    workdir: Path,
    size: int,
    loaded_before: int,
    seconds: float,
    cpus: int,
    restarts: bool,
    via_etcd: bool,
) -> dict[str, Any]:
    ctx = client_ssl(plane)
    note(f"loading {size} VMs")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=64)) as http:
        etcd = f"http://127.0.0.1:{plane.etcd_port}" if via_etcd else None
        loaded = await load_vms.load(plane.admin_kubeconfig, size, PER_NAMESPACE, 1000, "bench", 32, etcd)
        note(f"loaded in {loaded:.1f}s; starting the server")
        server = Server(plane, workdir)
        try:
            ready = await server.wait_ready(http)
            note(f"ready in {ready:.1f}s; lists")
            out: dict[str, Any] = {
                "vms": size,
                "load_seconds": round(loaded, 1),
                "load_vms_per_second": round((size - loaded_before) / loaded),
                "ready_seconds": round(ready, 1),
            }
            await asyncio.sleep(3)
            ns_list = await median_get(
                http, f"{server.url}{EVM}/namespaces/bench-0/expandedvirtualmachines", 15
            )
            kube_list = await median_get(
                http,
                f"{plane.url}/apis/kubevirt.io/v1/namespaces/bench-0/virtualmachines?resourceVersion=0",
                15,
            )
            out["list500_ms"] = round(ns_list * 1e3, 1)
            out["kube_list500_ms"] = round(kube_list * 1e3, 1)
            out["list500_ratio"] = round(ns_list / kube_list, 2)
            ours, count = await paged(http, f"{server.url}{EVM}/expandedvirtualmachines")
            theirs, kcount = await paged(http, f"{plane.url}/apis/kubevirt.io/v1/virtualmachines")
            assert count == kcount == size, (count, kcount, size)
            out["paged_all_ms"] = round(ours * 1e3)
            out["kube_paged_all_ms"] = round(theirs * 1e3)
            out["paged_ratio"] = round(ours / theirs, 2)
            note("GET load")
            names = [(f"bench-{i // PER_NAMESPACE}", f"vm-{i:06d}") for i in range(size)]
            out["get"] = await get_load(http, server.url, names, seconds)
            note("instancetype edit")
            out["edit_1000_seconds"] = round(
                await instancetype_edit(http, plane, server, min(1000, size), cpus), 3
            )
            note("idle watchers")
            baseline, watched = await idle_watchers(ctx, server, 100, seconds)
            out["cpu_idle_seconds"] = round(baseline, 3)
            out["cpu_100_idle_watchers_seconds"] = round(watched, 3)
            out["rss_mib"] = round(rss_mib(server.process.pid), 1)
            if restarts:
                note("kube-apiserver restart under GET load")
                out.update(await restart(http, plane, server, names, seconds))
                out["rss_after_restart_mib"] = round(rss_mib(server.process.pid), 1)
            return out
        finally:
            server.stop()


# --- GET at cluster size: random VMs among a small working set against all of them ------------------

FLAT_SMALL = 1000
READER_ROLE = "bench-expand-reader"
READER_ACCOUNT = ("bench-0", "bench-reader")


def reader_objects(namespaces: int) -> list[dict[str, Any]]:
    """A ServiceAccount allowed GET expand-spec in every bench namespace by a RoleBinding there: RBAC that
    decides by namespace (no resourceNames), as a tenant's usually does."""
    ns, account = READER_ACCOUNT
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": READER_ROLE},
        "rules": [
            {
                "apiGroups": ["subresources.kubevirt.io"],
                "resources": ["virtualmachines/expand-spec"],
                "verbs": ["get"],
            }
        ],
    }
    bindings = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": READER_ROLE, "namespace": f"bench-{n}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}],
        }
        for n in range(namespaces)
    ]
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": ns}}
    return [role, sa, *bindings]


def expand_paths(names: list[tuple[str, str]]) -> list[str]:
    return [
        f"/apis/subresources.kubevirt.io/v1/namespaces/{ns}/virtualmachines/{n}/expand-spec"
        for ns, n in names
    ]


async def flat_load_worker(
    base: str, paths: list[str], connections: int, seconds: float, ca: str, cert: str, key: str, token: str
) -> None:
    """One load process (``_load``): ``connections`` keep-alive connections asking for random paths of
    ``paths`` for ``seconds``; prints its count, errors and latencies as JSON."""
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the server's self-signed certificate, on loopback
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    # URLs made once: the client's cost per request must not depend on how many paths it draws from
    # (yarl remembers only the last 128 URLs parsed from text).
    urls = [URL(base + path, encoded=True) for path in paths]
    latencies: list[float] = []
    errors = 0
    choice, clock = random.choice, time.perf_counter
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=ctx, limit=connections), headers=headers
    ) as http:
        deadline = clock() + seconds

        async def one() -> None:
            nonlocal errors
            while (start := clock()) < deadline:
                try:
                    async with http.get(choice(urls)) as resp:
                        await resp.read()
                        if resp.status != 200:
                            errors += 1
                except aiohttp.ClientError:
                    errors += 1
                latencies.append(clock() - start)

        began = clock()
        await asyncio.gather(*(one() for _ in range(connections)))
        took = clock() - began
    json.dump(
        {"requests": len(latencies), "seconds": took, "errors": errors, "latencies": latencies}, sys.stdout
    )


SAR_ASKED = 'kubevirt_expand_review_cache_misses_total{review="subjectaccessreviews"}'


async def reviews_asked(http: aiohttp.ClientSession, server: Server) -> float:
    """SubjectAccessReviews the server has asked of kube-apiserver so far (its /metrics)."""
    _, body = await timed_get(http, server.url + "/metrics")
    return metric_in(body.decode(), SAR_ASKED)


async def flat_window(
    server: Server, paths_file: Path, caller: dict[str, str], seconds: float, connections: int, processes: int
) -> dict[str, float]:
    """One measured window: ``processes`` load processes sharing ``connections``; requests/s, p50/p99 and
    the server's CPU per request (user + system from /proc, around the window)."""
    shares = [connections // processes + (1 if i < connections % processes else 0) for i in range(processes)]
    argv = [caller["ca"], caller.get("cert", ""), caller.get("key", ""), caller.get("token", "")]
    before = cpu_seconds(server.process.pid)
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hack.benchmarks.collection",
            "_load",
            server.url,
            str(paths_file),
            str(share),
            str(seconds),
            *argv,
            stdout=asyncio.subprocess.PIPE,
            cwd=str(ROOT),
        )
        for share in shares
    ]
    results = [json.loads((await asyncio.wait_for(p.communicate(), seconds + 120))[0]) for p in procs]
    cpu = cpu_seconds(server.process.pid) - before
    latencies = sorted(x for r in results for x in r["latencies"])
    requests = sum(r["requests"] for r in results)
    errors = sum(r["errors"] for r in results)
    if errors:
        raise RuntimeError(f"{errors} of {requests} GETs were not 200")
    return {
        "rps": requests / max(r["seconds"] for r in results),
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3,
        "cpu_us_per_request": cpu / requests * 1e6,
    }


async def flat(
    plane: ControlPlane,
    workdir: Path,
    size: int,
    seconds: float,
    rounds: int,
    connections: int,
    processes: int,
    callers: list[str],
    sets: list[str],
    profile: Path | None,
    warmup: float = 0.0,
) -> dict[str, Any]:
    """GET expand-spec of random VMs among the first 1,000 and among all ``size``, on one server, the
    windows alternating (small, all; then all, small; ...) per caller: the cluster admin's client
    certificate (system:masters, no SubjectAccessReview) and a ServiceAccount's bearer token (TokenReview,
    then SubjectAccessReviews that RBAC answers by namespace)."""
    ctx = client_ssl(plane)
    namespaces = (size + PER_NAMESPACE - 1) // PER_NAMESPACE
    note(f"loading {size} VMs")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=64)) as http:
        etcd = f"http://127.0.0.1:{plane.etcd_port}"
        loaded = await load_vms.load(plane.admin_kubeconfig, size, PER_NAMESPACE, 1000, "bench", 32, etcd)
        note(f"loaded in {loaded:.1f}s; RBAC for the token user")
        plane.apply(*reader_objects(namespaces))
        token = plane.token(READER_ACCOUNT[1], READER_ACCOUNT[0])
        ca = str(plane.pki.ca_file)
        who = {
            "admin": {"ca": ca, "cert": str(plane.pki.admin.cert_file), "key": str(plane.pki.admin.key_file)},
            "token": {"ca": ca, "token": token},
        }
        names = [(f"bench-{i // PER_NAMESPACE}", f"vm-{i:06d}") for i in range(size)]
        files = {"1000": workdir / "small.paths", "all": workdir / "all.paths"}
        files["1000"].write_text("\n".join(expand_paths(names[:FLAT_SMALL])))
        files["all"].write_text("\n".join(expand_paths(names)))
        server = Server(plane, workdir, profile=profile)
        try:
            ready = await server.wait_ready(http)
            note(f"ready in {ready:.1f}s")
            await asyncio.sleep(3)
            out: dict[str, Any] = {"vms": size, "ready_seconds": round(ready, 1), "rounds": []}
            for caller in callers:  # a first short window each: connections, TokenReview, first reviews
                await flat_window(server, files[sets[0]], who[caller], 2, connections, processes)
            for r in range(rounds):
                row: dict[str, Any] = {}
                for caller in callers:
                    for which in sets if r % 2 == 0 else list(reversed(sets)):
                        if warmup > 0:  # the same load, not measured: what a steady caller has ready
                            await flat_window(
                                server, files[which], who[caller], warmup, connections, processes
                            )
                        asked = await reviews_asked(http, server)
                        got = await flat_window(
                            server, files[which], who[caller], seconds, connections, processes
                        )
                        got["reviews_asked"] = await reviews_asked(http, server) - asked
                        row[f"{caller} {which}"] = {k: round(v, 2) for k, v in got.items()}
                        note(
                            f"round {r + 1} {caller} {which}: {got['rps']:.0f}/s, {got['cpu_us_per_request']:.0f} us CPU/request,"
                            f" {got['reviews_asked']:.0f} SubjectAccessReviews"
                        )
                out["rounds"].append(row)
            out["rss_mib"] = round(rss_mib(server.process.pid), 1)
            return out
        finally:
            server.stop()


def flat_summary(out: dict[str, Any], callers: list[str]) -> list[str]:
    """Per caller: median requests/s and CPU per request of each set, and all / 1000."""
    lines = []
    for caller in callers:
        med = {
            which: {
                k: statistics.median(row[f"{caller} {which}"][k] for row in out["rounds"])
                for k in ("rps", "p99_ms", "cpu_us_per_request")
            }
            for which in ("1000", "all")
            if f"{caller} {which}" in out["rounds"][0]
        }
        if len(med) < 2:
            continue
        small, every = med["1000"], med["all"]
        # Each round's two windows ran side by side (the machine as it was then): their ratio, per round.
        paired = [row[f"{caller} all"]["rps"] / row[f"{caller} 1000"]["rps"] for row in out["rounds"]]
        lines.append(
            f"{caller}: random VMs among 1,000 {small['rps']:.0f}/s (p99 {small['p99_ms']:.1f} ms,"
            f" {small['cpu_us_per_request']:.0f} us CPU/request), among all {out['vms']:,}"
            f" {every['rps']:.0f}/s (p99 {every['p99_ms']:.1f} ms, {every['cpu_us_per_request']:.0f} us):"
            f" rate {every['rps'] / small['rps']:.2f}x, CPU per request {every['cpu_us_per_request'] / small['cpu_us_per_request']:.2f}x;"
            f" per round {', '.join(f'{r:.2f}' for r in paired)} (median {statistics.median(paired):.2f}x)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="1000,10000", help="VM counts, ascending (comma-separated)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each load and CPU window")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--no-restart",
        action="store_true",
        help="skip restarting kube-apiserver under load (relist, recovery)",
    )
    parser.add_argument(
        "--etcd",
        action="store_true",
        help="load the VMs straight into etcd (hack/benchmarks/load_vms.py --etcd), for sizes POSTs take too long to load",
    )
    parser.add_argument(
        "--flat",
        action="store_true",
        help="only GET expand-spec of random VMs among 1,000 against among all, alternating, at one size",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--flat: windows per caller and set")
    parser.add_argument("--connections", type=int, default=16, help="--flat: keep-alive connections")
    parser.add_argument("--processes", type=int, default=2, help="--flat: load processes sharing them")
    parser.add_argument(
        "--callers", default="admin,token", help="--flat: admin (client certificate), token (bearer token)"
    )
    parser.add_argument("--sets", default="1000,all", help="--flat: which VMs are asked for (1000, all)")
    parser.add_argument("--profile", type=Path, help="--flat: run the server under cProfile, write it here")
    parser.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        help="--flat: seconds of the same load before each measured window, not measured (0: none)",
    )
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["_load"]:
        base, paths, connections, seconds, ca, cert, key, token = argv[1:]
        paths_list = Path(paths).read_text().split()
        asyncio.run(
            flat_load_worker(base, paths_list, int(connections), float(seconds), ca, cert, key, token)
        )
        return 0
    args = parser.parse_args(argv)
    reason = unavailable()
    if reason:
        print(f"bench_collection: no control plane: {reason}", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load before: {os.getloadavg()}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-collection-") as tmp:
        workdir = Path(tmp)
        plane = ControlPlane(workdir / "plane")
        try:
            plane.start()
            plane.kubectl("apply", "-f", str(CRDS_FILE))
            plane.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
            if args.flat:
                callers, sets = args.callers.split(","), args.sets.split(",")
                profile = args.profile.resolve() if args.profile else None
                figures = asyncio.run(
                    flat(
                        plane,
                        workdir,
                        sizes[-1],
                        args.seconds,
                        args.rounds,
                        args.connections,
                        args.processes,
                        callers,
                        sets,
                        profile,
                        args.warmup,
                    )
                )
                figures["load"] = os.getloadavg()
                print(json.dumps(figures), flush=True)
                for line in flat_summary(figures, callers):
                    print(line, flush=True)
                if args.json:
                    args.json.write_text(json.dumps(figures, indent=2))
                return 0
            for n, size in enumerate(sizes):
                before = sizes[n - 1] if n else 0
                figures = asyncio.run(
                    measure(plane, workdir, size, before, args.seconds, 3 + n, not args.no_restart, args.etcd)
                )
                figures["load"] = os.getloadavg()
                print(json.dumps(figures), flush=True)
                results.append(figures)
        finally:
            plane.close()
    if len(results) >= 2:
        a, b = results[0], results[-1]
        per_vm = (b["rss_mib"] - a["rss_mib"]) * 1024 / (b["vms"] - a["vms"])
        print(f"memory per VM (RSS between {a['vms']} and {b['vms']} VMs): {per_vm:.1f} KiB")
        print(f"GET throughput at {b['vms']} / at {a['vms']}: {b['get']['rps'] / a['get']['rps']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
