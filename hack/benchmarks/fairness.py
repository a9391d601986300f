#!/usr/bin/env python3
"""One user's CPU against another user's latency (issue 37, finding 4), against a real control plane.

    .venv/bin/python -m hack.benchmarks.fairness [--seconds S] [--concurrency N] [--minted N]

What it runs, all on 127.0.0.1: kube-apiserver + etcd (tests/realk8s/controlplane.py), the KubeVirt
CRDs, a namespace with a VM and its instancetype, and the server as the Deployment runs it
(tests/realk8s/deployed.py), registered behind the aggregator; twice, one after the other: with
``--cpu-seats=0`` (off: the event loop runs requests in arrival order, as before CPU seats) and with the
default seats. For each, user B (a client certificate of the cluster CA) sends GET expand-spec of the
stored VM, one at a time with 20 ms between them, for ``--seconds``:

  * alone, straight to the server's port and through the aggregator;
  * while user A, from a process of its own, keeps ``--concurrency`` distinct PUT expand-vm-spec in
    flight (a label differs in every body: no answer comes from the response cache), A and B both
    straight to the port, then both through the aggregator;
  * straight, while A keeps as many of one PUT in flight (answered at once from the response cache,
    which takes no CPU seat).

Then, on the server with seats: an editor of another namespace (who may impersonate its ServiceAccounts,
as the ``edit`` role may) opens ``--minted`` watches of expandedvirtualmachines through the aggregator as
as many ServiceAccounts that do not exist (issue 37, finding 3); B's first watch and B's GETs meanwhile.

It prints B's p50/p99 in milliseconds for each, A's PUTs answered per second (what the seats cost
the one who saturates), and the machine's load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from devcluster.objects import large_vm, small_vm
from tests.realk8s.controlplane import CRDS_FILE, ControlPlane, unavailable
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import EXPAND_RULES, binding, user
from tests.realk8s.test_collection import ROLE

GROUP_PATH = "/apis/subresources.kubevirt.io/v1"
COLLECTION = "/apis/expand.kubevirt-expand.io/v1"


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} cores)"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def figures(latencies: list[float]) -> str:
    if not latencies:
        return "no answer"
    return (
        f"p50 {statistics.median(latencies):6.1f} ms, p99 {percentile(latencies, 0.99):6.1f} ms "
        f"({len(latencies)})"
    )


def context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


async def gets(url: str, ctx: ssl.SSLContext, seconds: float) -> list[float]:
    """B's GETs, one at a time, keep-alive, 20 ms apart: their latencies in ms (every one must be 200)."""
    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=1)) as session:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.perf_counter()
            async with session.get(url) as resp:
                await resp.read()
                if resp.status != 200:
                    raise SystemExit(f"hack.benchmarks.fairness: B's GET was answered {resp.status}")
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.02)
    return latencies


async def flood(args: argparse.Namespace, _tmp: Path) -> None:
    """User A's side (a process of its own): ``--concurrency`` distinct PUTs in flight for ``--seconds``;
    prints the answers' codes and how many were answered."""
    ctx = context(Path(args.ca), Path(args.cert), Path(args.key))
    vm = orjson.loads(Path(args.body).read_bytes())  # noqa: ASYNC240  (before anything is under way)
    counts: Counter[int | str] = Counter()
    end = time.monotonic() + args.seconds
    made = 0

    async def worker(number: int) -> None:
        nonlocal made
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=1)) as session:
            while time.monotonic() < end:
                made += 1
                label = "same" if args.same else f"{os.getpid()}-{number}-{made}"
                vm["metadata"]["labels"] = {"flood": label}
                body = orjson.dumps(vm)
                try:
                    async with session.put(
                        args.url, data=body, headers={"Content-Type": "application/json"}
                    ) as resp:
                        await resp.read()
                        counts[resp.status] += 1
                except (aiohttp.ClientError, TimeoutError) as exc:
                    counts[type(exc).__name__] += 1

    await asyncio.gather(*(worker(i) for i in range(args.concurrency)))
    print(orjson.dumps({str(k): v for k, v in counts.items()}).decode())


async def measured_under_flood(
    args: argparse.Namespace,
    same: bool,
    put_url: str,
    get_url: str,
    ca: Path,
    a: Any,
    b_ctx: ssl.SSLContext,
    body: Path,
) -> tuple[list[float], dict[str, int], float]:
    seconds = args.seconds + 2
    attacker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hack.benchmarks.fairness",
        "_flood",
        "--url",
        put_url,
        "--ca",
        str(ca),
        "--cert",
        str(a.cert_file),
        "--key",
        str(a.key_file),
        "--body",
        str(body),
        "--concurrency",
        str(args.concurrency),
        *(["--same"] if same else []),
        "--seconds",
        str(seconds),
        stdout=subprocess.PIPE,
    )
    await asyncio.sleep(1.5)  # A's PUTs under way
    latencies = await gets(get_url, b_ctx, args.seconds)
    out, _ = await attacker.communicate()
    counts = orjson.loads(out)
    answered = sum(v for k, v in counts.items() if k.isdigit())
    return latencies, counts, answered / seconds


async def minted_watches(
    args: argparse.Namespace, cluster: ControlPlane, get_url: str, b_ctx: ssl.SSLContext
) -> None:
    ns = cluster.new_namespace("minted")
    other = cluster.new_namespace("other")
    collection_role = {"kind": "ClusterRole", "name": ROLE}
    cluster.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "impersonate-serviceaccounts", "namespace": ns},
            "rules": [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}],
        },
        binding(ns, "editor", {"kind": "Role", "name": "impersonate-serviceaccounts"}, user("editor")),
        binding(
            ns,
            "accounts-watch",
            collection_role,
            {
                "kind": "Group",
                "apiGroup": "rbac.authorization.k8s.io",
                "name": f"system:serviceaccounts:{ns}",
            },
        ),
        binding(other, "b-watch", collection_role, user("user-b")),
    )
    editor = cluster.pki.client("editor")
    editor_ctx = context(cluster.pki.ca_file, editor.cert_file, editor.key_file)
    minted_url = (
        f"{cluster.url}{COLLECTION}/namespaces/{ns}/expandedvirtualmachines?watch=1&timeoutSeconds=600"
    )
    b_watch_url = (
        f"{cluster.url}{COLLECTION}/namespaces/{other}/expandedvirtualmachines?watch=1&timeoutSeconds=600"
    )
    held: list[aiohttp.ClientResponse] = []
    sessions: list[aiohttp.ClientSession] = []
    codes: Counter[int] = Counter()
    rationed = 0
    gate = asyncio.Semaphore(32)

    async def watch(n: int) -> None:
        nonlocal rationed
        async with gate:
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=editor_ctx, limit=1))
            sessions.append(session)
            headers = {"Impersonate-User": f"system:serviceaccount:{ns}:minted-{n}"}
            deadline = time.monotonic() + 120
            while True:
                resp = await session.get(minted_url, headers=headers)
                if resp.status == 200:
                    held.append(resp)
                    codes[200] += 1
                    return
                text = await resp.read()
                resp.release()
                if resp.status == 429 and b"too many watches" not in text and time.monotonic() < deadline:
                    rationed += 1  # reviews rationed per person: retried after Retry-After, as client-go
                    await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
                    continue
                codes[resp.status] += 1
                return

    try:
        poll_until = time.monotonic() + 30
        probe = {"Impersonate-User": f"system:serviceaccount:{ns}:minted-0"}
        while True:  # RBAC in effect
            async with (
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=editor_ctx)) as s,
                s.get(minted_url.replace("watch=1", "watch=0"), headers=probe) as r,
            ):
                if r.status == 200 or time.monotonic() > poll_until:
                    break
            await asyncio.sleep(0.5)
        started = time.monotonic()
        await asyncio.gather(*(watch(n) for n in range(1, args.minted + 1)))
        opening = time.monotonic() - started
        b_session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=b_ctx, limit=1))
        sessions.append(b_session)
        b_watch = await b_session.get(b_watch_url)
        if b_watch.status == 200:
            held.append(b_watch)
        else:
            await b_watch.read()
        during = await gets(get_url, b_ctx, args.seconds)
        print(
            f"  {args.minted} minted identities' watches: {dict(sorted(codes.items()))} in {opening:.1f} s "
            f"({rationed} 429s for reviews rationed, retried); B's first watch: {b_watch.status}"
        )
        print(f"  B's GET while they are held, through the aggregator: {figures(during)}")
    finally:
        for resp in held:
            resp.close()
        for session in sessions:
            await session.close()


async def run(args: argparse.Namespace, tmp: Path) -> None:
    reason = unavailable()
    if reason:
        raise SystemExit(f"hack.benchmarks.fairness: no real control plane here: {reason}")
    cluster = ControlPlane(tmp / "plane")
    try:
        cluster.start()
        cluster.kubectl("apply", "-f", str(CRDS_FILE))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        ns = "bench"
        cluster.kubectl("create", "namespace", ns)
        instancetype, vm = small_vm(ns)
        cluster.apply(instancetype, vm)
        cluster.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "expander", "namespace": ns},
                "rules": EXPAND_RULES,
            },
            binding(ns, "expanders", {"kind": "Role", "name": "expander"}, user("user-a"), user("user-b")),
        )
        body = tmp / "vm.json"
        body.write_text(json.dumps(large_vm(ns, args.disks)))
        a, b = cluster.pki.client("user-a"), cluster.pki.client("user-b")
        get_path = f"{GROUP_PATH}/namespaces/{ns}/virtualmachines/vm1/expand-spec"
        put_path = f"{GROUP_PATH}/namespaces/{ns}/expand-vm-spec"
        print(
            f"fairness: user A keeps {args.concurrency} distinct PUT expand-vm-spec in flight; user B's GET "
            f"expand-spec, one at a time, {args.seconds:.0f} s each ({load()})"
        )
        for label, extra in (("off (--cpu-seats=0)", ["--cpu-seats=0"]), ("on (default seats)", [])):
            server = DeployedServer(cluster, tmp / label.split()[0], extra_args=extra + args.server_args)
            server.install()
            server.start()
            try:
                server.register()
                b_aggregated = context(cluster.pki.ca_file, b.cert_file, b.key_file)
                b_straight = context(server.serving_ca_file, b.cert_file, b.key_file)
                routes = {
                    "straight": (server.url, server.serving_ca_file, b_straight),
                    "aggregator": (cluster.url, cluster.pki.ca_file, b_aggregated),
                }
                deadline = time.monotonic() + 30
                while True:  # RBAC in effect, caches warm
                    try:
                        await gets(cluster.url + get_path, b_aggregated, 1)
                        break
                    except SystemExit:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.5)
                print(f"CPU seats {label}:")
                for way, (base, ca, b_ctx) in routes.items():
                    await gets(base + get_path, b_ctx, 1)  # warm
                    alone = await gets(base + get_path, b_ctx, args.seconds)
                    under, codes, rate = await measured_under_flood(
                        args, False, base + put_path, base + get_path, ca, a, b_ctx, body
                    )
                    print(f"  {way:10} B's GET alone:           {figures(alone)}")
                    print(
                        f"  {way:10} B's GET while A saturates: {figures(under)}; "
                        f"A's PUTs {rate:.0f}/s, answers {codes}"
                    )
                    if way == "straight":  # answered at once from the response cache: no seat taken
                        cached, codes, rate = await measured_under_flood(
                            args, True, base + put_path, base + get_path, ca, a, b_ctx, body
                        )
                        print(
                            f"  {way:10} B's GET while A repeats one PUT (cached): {figures(cached)}; "
                            f"A's PUTs {rate:.0f}/s, answers {codes}"
                        )
                if not extra and args.minted:
                    await minted_watches(args, cluster, cluster.url + get_path, b_aggregated)
            finally:
                server.stop()
        print(f"({load()})")
    finally:
        cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of B's GETs per measurement")
    parser.add_argument("--concurrency", type=int, default=32, help="A's PUTs in flight")
    parser.add_argument("--disks", type=int, default=32, help="disks and interfaces of A's VMs")
    parser.add_argument("--minted", type=int, default=500, help="watches as minted identities (0: none)")
    parser.add_argument(
        "--server-args", action="append", default=[], help="a flag added to the Deployment's (repeatable)"
    )
    sub = parser.add_subparsers(dest="side")
    p = sub.add_parser("_flood")  # user A's process
    for name in ("--url", "--ca", "--cert", "--key", "--body"):
        p.add_argument(name, required=True)
    p.add_argument("--concurrency", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--same", action="store_true", help="the same body every time (the response cache's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run((flood if args.side == "_flood" else run)(args, Path(tmp)))


if __name__ == "__main__":
    main()
