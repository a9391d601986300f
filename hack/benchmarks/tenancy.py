#!/usr/bin/env python3
"""What ``--authorize-references`` costs, measured against a real control plane (../shared/k8s).

Usage: .venv/bin/python -m hack.benchmarks.tenancy [--users N] [--duration SECONDS] [--concurrency N]
                                              [--json FILE]

What it runs, all on 127.0.0.1:
  * kube-apiserver + etcd (tests/realk8s/controlplane.py), the KubeVirt CRDs, N tenants: a namespace
    each with an instancetype, a preference, the ControllerRevisions KubeVirt would have written for a
    stored VM, and that VM; a cluster instancetype and preference; RBAC letting each tenant's user
    expand and read those (as view/edit would);
  * two servers as the Deployment runs them (tests/realk8s/deployed.py: the overlay's flags, its
    ServiceAccount's RBAC): the Deployment's flags (the baseline), and the same with
    ``--authorize-references``. Each is called straight, with the front-proxy certificate and
    X-Remote-User, exactly as the aggregator calls it (the aggregator's own hop is the same for both);
  * per server and endpoint (GET expand-spec of a stored VM: two revisions; PUT expand-vm-spec: a
    namespaced instancetype and a cluster preference): a cold round (each user's first request:
    nothing cached), then ``--rounds`` runs of ``--duration`` seconds of load from ``--concurrency``
    clients spread over the users, the two servers taking turns (so that the machine's other load
    falls on both alike, and the review cache's 10 s entries expire between a server's runs and are
    asked again, as over a day).

It prints requests per second, p50/p95 latency and each figure's ratio to the baseline, the
SubjectAccessReviews each server asked per request (its own metrics) with the review cache's hit rate,
and the SubjectAccessReviews kube-apiserver counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.realk8s.controlplane import CRDS_FILE, ControlPlane, unavailable
from tests.realk8s.deployed import DeployedServer

ROOT = Path(__file__).resolve().parents[2]


GROUP = "subresources.kubevirt.io"
IT_API = "instancetype.kubevirt.io/v1beta1"


def tenant_objects(ns: str, user: str, cluster_preference: str) -> list[dict[str, Any]]:
    it = {
        "apiVersion": IT_API,
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "it", "namespace": ns, "uid": f"uid-it-{ns}", "generation": 1},
        "spec": {"cpu": {"guest": 2}, "memory": {"guest": "2Gi"}},
    }
    pref = {
        "apiVersion": IT_API,
        "kind": "VirtualMachineClusterPreference",
        "metadata": {"name": cluster_preference},
        "spec": {"cpu": {"preferredCPUTopology": "cores"}},
    }

    def revision(name: str, data: dict[str, Any], object_name: str) -> dict[str, Any]:
        labels = {"instancetype.kubevirt.io/object-name": object_name}
        return {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "data": data,
            "revision": 1,
        }

    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": ns},
        "spec": {
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": "it"},
            "preference": {"kind": "VirtualMachineClusterPreference", "name": cluster_preference},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
        "status": {
            "instancetypeRef": {"name": "it", "controllerRevisionRef": {"name": "vm-it-1"}},
            "preferenceRef": {"name": cluster_preference, "controllerRevisionRef": {"name": "vm-pref-1"}},
        },
    }
    rules = [
        {"apiGroups": [GROUP], "resources": ["virtualmachines/expand-spec"], "verbs": ["get"]},
        {"apiGroups": [GROUP], "resources": ["expand-vm-spec"], "verbs": ["update"]},
        {
            "apiGroups": ["instancetype.kubevirt.io"],
            "resources": ["virtualmachineinstancetypes", "virtualmachinepreferences"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": ["apps"], "resources": ["controllerrevisions"], "verbs": ["get"]},
    ]
    rbac = "rbac.authorization.k8s.io"
    return [
        it,
        pref,
        revision("vm-it-1", it, "it"),
        revision("vm-pref-1", pref, cluster_preference),
        vm,
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": "tenant", "namespace": ns},
            "rules": rules,
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "tenant", "namespace": ns},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "tenant"},
            "subjects": [{"apiGroup": rbac, "kind": "User", "name": user}],
        },
    ]


def cluster_rbac(users: list[str]) -> list[dict[str, Any]]:
    """What KubeVirt's instancetype.kubevirt.io:view grants every authenticated user: the cluster kinds."""
    rbac = "rbac.authorization.k8s.io"
    return [
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "bench-cluster-instancetypes"},
            "rules": [
                {
                    "apiGroups": ["instancetype.kubevirt.io"],
                    "resources": ["virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "bench-cluster-instancetypes"},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "bench-cluster-instancetypes"},
            "subjects": [{"apiGroup": rbac, "kind": "User", "name": u} for u in users],
        },
    ]


@dataclass
class Load:
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p95_ms: float
    errors: int
    reviews_asked: int  # the server's review cache misses: SubjectAccessReviews it posted
    review_lookups: int
    kube_sars: int  # SubjectAccessReviews kube-apiserver served meanwhile


class Caller:
    """Requests straight to one server as the aggregator makes them."""

    def __init__(self, server: DeployedServer, cluster: ControlPlane, tenants: list[tuple[str, str]]) -> None:
        self.server = server
        self.cluster = cluster
        self.tenants = tenants
        ctx = ssl.create_default_context(cafile=str(server.serving_ca_file))
        proxy = cluster.pki.front_proxy_client
        ctx.load_cert_chain(str(proxy.cert_file), str(proxy.key_file))
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=0))

    async def close(self) -> None:
        await self.session.close()

    async def call(self, endpoint: str, index: int) -> tuple[int, float]:
        ns, user = self.tenants[index % len(self.tenants)]
        headers = {
            "X-Remote-User": user,
            "X-Remote-Group": "system:authenticated",
            "Accept": "application/json",
        }
        base = f"{self.server.url}/apis/{GROUP}/v1/namespaces/{ns}"
        start = time.perf_counter()
        if endpoint == "GET":
            async with self.session.get(f"{base}/virtualmachines/vm/expand-spec", headers=headers) as resp:
                await resp.read()
        else:
            body = {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "metadata": {"name": "put"},
                "spec": {
                    "instancetype": {"kind": "VirtualMachineInstancetype", "name": "it"},
                    "preference": {"kind": "VirtualMachineClusterPreference", "name": PREFERENCE},
                    "template": {"spec": {"domain": {"devices": {}}}},
                },
            }
            headers["Content-Type"] = "application/json"
            async with self.session.put(
                f"{base}/expand-vm-spec", data=json.dumps(body), headers=headers
            ) as resp:
                await resp.read()
        return resp.status, time.perf_counter() - start

    async def review_figures(self) -> tuple[int, int]:
        """(lookups, reviews asked) of the server's SubjectAccessReview cache."""
        headers = {"X-Remote-User": "bench-admin", "X-Remote-Group": "system:masters"}
        async with self.session.get(f"{self.server.url}/metrics", headers=headers) as resp:
            text = await resp.text()
        hits = misses = 0.0
        for line in text.splitlines():
            if line.startswith('kubevirt_expand_review_cache_hits_total{review="subjectaccessreviews"}'):
                hits = float(line.split()[-1])
            if line.startswith('kubevirt_expand_review_cache_misses_total{review="subjectaccessreviews"}'):
                misses = float(line.split()[-1])
        return int(hits + misses), int(misses)


def kube_sars(cluster: ControlPlane) -> int:
    """SubjectAccessReviews kube-apiserver has served (its apiserver_request_total)."""
    total = 0.0
    for line in cluster.request("/metrics").body.decode().splitlines():
        if line.startswith("apiserver_request_total{") and 'resource="subjectaccessreviews"' in line:
            total += float(line.split()[-1])
    return int(total)


async def measure(
    caller: Caller, endpoint: str, *, duration: float, concurrency: int, cold: bool
) -> tuple[Load, list[float]]:
    lookups0, asked0 = await caller.review_figures()
    sars0 = kube_sars(caller.cluster)
    latencies: list[float] = []
    errors = 0
    start = time.perf_counter()
    if cold:  # each user's first request, one after another
        for i in range(len(caller.tenants)):
            code, seconds = await caller.call(endpoint, i)
            errors += code != 200
            latencies.append(seconds)
    else:
        deadline = start + duration
        counter = iter(range(10**9))

        async def client() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                code, seconds = await caller.call(endpoint, next(counter))
                errors += code != 200
                latencies.append(seconds)

        await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    lookups1, asked1 = await caller.review_figures()
    return summary(
        [(len(latencies), elapsed)],
        latencies,
        errors,
        asked1 - asked0,
        lookups1 - lookups0,
        kube_sars(caller.cluster) - sars0,
    ), latencies


def summary(
    runs: list[tuple[int, float]], latencies: list[float], errors: int, asked: int, lookups: int, sars: int
) -> Load:
    """Requests per second: the median over runs; latencies over all requests."""
    ordered = sorted(latencies)
    return Load(
        requests=len(ordered),
        seconds=round(sum(s for _, s in runs), 3),
        rps=round(statistics.median(n / s for n, s in runs), 1),
        p50_ms=round(statistics.median(ordered) * 1000, 2),
        p95_ms=round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 2),
        errors=errors,
        reviews_asked=asked,
        review_lookups=lookups,
        kube_sars=sars,
    )


PREFERENCE = "bench-cpref"


async def run(
    args: argparse.Namespace,
    cluster: ControlPlane,
    servers: dict[str, DeployedServer],
    tenants: list[tuple[str, str]],
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    callers = {name: Caller(server, cluster, tenants) for name, server in servers.items()}
    try:
        for endpoint in ("GET", "PUT"):
            for name, caller in callers.items():
                load, _ = await measure(caller, endpoint, duration=0, concurrency=1, cold=True)
                results[f"{endpoint} cold {name}"] = asdict(load)
            runs: dict[str, list[tuple[Load, list[float]]]] = {name: [] for name in callers}
            for round_ in range(args.rounds):
                order = list(callers) if round_ % 2 == 0 else list(reversed(callers))
                for name in order:
                    runs[name].append(
                        await measure(
                            callers[name],
                            endpoint,
                            duration=args.duration,
                            concurrency=args.concurrency,
                            cold=False,
                        )
                    )
            for name, measured in runs.items():
                loads = [m[0] for m in measured]
                merged = summary(
                    [(m.requests, m.seconds) for m in loads],
                    [x for m in measured for x in m[1]],
                    sum(m.errors for m in loads),
                    sum(m.reviews_asked for m in loads),
                    sum(m.review_lookups for m in loads),
                    sum(m.kube_sars for m in loads),
                )
                results[f"{endpoint} warm {name}"] = asdict(merged)
    finally:
        for caller in callers.values():
            await caller.close()
    return results


def report(results: dict[str, Any]) -> None:
    """One line per run; lookups: decisions the server looked up in its review cache (a request it
    remembers admitting looks up none), SARs: reviews it asked kube-apiserver for."""
    head = f"{'':32} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'lookups/req':>12} {'SARs/req':>9} {'hit rate':>9}"
    print(head + f" {'errors':>6}")
    for endpoint in ("GET", "PUT"):
        for phase in ("cold", "warm"):
            base = results[f"{endpoint} {phase} default"]
            for name in ("default", "authorize-references"):
                r = results[f"{endpoint} {phase} {name}"]
                requests = max(1, r["requests"])
                hit = 1 - r["reviews_asked"] / r["review_lookups"] if r["review_lookups"] else 1.0
                print(
                    f"{endpoint + ' ' + phase + ' ' + name:32} {r['rps']:8.1f} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f}"
                    f" {r['review_lookups'] / requests:12.3f} {r['reviews_asked'] / requests:9.3f} {hit:9.1%}"
                    f" {r['errors']:6}"
                )
            strict = results[f"{endpoint} {phase} authorize-references"]
            print(
                f"{'  ratio (flag / default)':32} {strict['rps'] / base['rps']:8.2f}"
                f" {strict['p50_ms'] / base['p50_ms']:8.2f} {strict['p95_ms'] / base['p95_ms']:8.2f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--users", type=int, default=50, help="tenants, each a user and a namespace (default 50)"
    )
    parser.add_argument(
        "--duration", type=float, default=10.0, help="seconds of each run of load (default 10)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs per server and endpoint, taking turns (default 3)"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="clients at once (default 8)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    reason = unavailable()
    if reason:
        print(f"bench_tenancy: no control plane: {reason}", file=sys.stderr)
        return 2
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    with tempfile.TemporaryDirectory(prefix="bench-tenancy-") as tmp:
        work = Path(tmp)
        cluster = ControlPlane(work / "cluster")
        servers: dict[str, DeployedServer] = {}
        try:
            cluster.start()
            cluster.kubectl("apply", "-f", str(CRDS_FILE))
            cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
            tenants = [(f"tenant-{i}", f"user-{i}") for i in range(args.users)]
            objects: list[dict[str, Any]] = []
            for ns, user in tenants:
                cluster.kubectl("create", "namespace", ns)
                objects += tenant_objects(ns, user, PREFERENCE)
            cluster.apply(*objects, *cluster_rbac([u for _, u in tenants]))
            for name, extra in (("default", []), ("authorize-references", ["--authorize-references"])):
                server = DeployedServer(cluster, work / name, extra_args=extra)
                server.install()
                server.start()
                servers[name] = server
            time.sleep(2)  # the watch caches fill
            results = asyncio.run(run(args, cluster, servers, tenants))
        finally:
            for server in servers.values():
                server.stop()
            cluster.close()
    print(
        f"users {args.users}, concurrency {args.concurrency}, {args.rounds} x {args.duration:g} s of load per "
        f"server and endpoint (taking turns); load average after: {os.getloadavg()[0]:.2f}"
    )
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
