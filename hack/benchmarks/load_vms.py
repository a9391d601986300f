#!/usr/bin/env python3
"""Load N VirtualMachines (and the instancetypes and preferences they use) into a Kubernetes API server.

Usage: .venv/bin/python -m hack.benchmarks.load_vms --kubeconfig FILE --vms N [--per-namespace K] [--shared M]
                                         [--concurrency C] [--prefix P] [--etcd URL]

Puts K VMs in each namespace (``<prefix>-0``, ``<prefix>-1``, ...; VM i in namespace i // K, so a larger
N only adds), each namespace with two instancetypes and a preference; the first M VMs (default 1,000) use one cluster instancetype (``<prefix>-shared``),
so editing it changes M renderings at once. Objects are created with POSTs over C connections
(an existing object is left as it is), so a control plane of ../shared/k8s (``up.sh``) takes 10,000 VMs
in well under a minute. Used by hack/benchmarks/collection.py; run it by hand to repeat a measurement.

POSTs go at 60-75 VMs/s on a busy 2-core machine (kube-apiserver's admission and etcd writes), so
100,000 VMs would take half an hour. ``--etcd URL`` (the control plane's etcd client URL, as
../shared/k8s starts it: no TLS) puts the VMs straight into etcd instead, as kube-apiserver stores
custom resources (JSON under /registry/kubevirt.io/virtualmachines/NS/NAME, with a uid, a creation
time and generation 1), 100 to a transaction; kube-apiserver's watch cache sees them as any write.
Namespaces, instancetypes and preferences are still POSTed. An existing VM is left as it is.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import json
import ssl
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import yaml

IT = "instancetype.kubevirt.io/v1beta1"


def _ssl_and_server(kubeconfig: Path) -> tuple[str, ssl.SSLContext]:
    doc = yaml.safe_load(kubeconfig.read_text())
    context = next(c for c in doc["contexts"] if c["name"] == doc["current-context"])["context"]
    cluster = next(c for c in doc["clusters"] if c["name"] == context["cluster"])["cluster"]
    user = next(u for u in doc["users"] if u["name"] == context["user"])["user"]
    ctx = ssl.create_default_context(cafile=cluster.get("certificate-authority"))
    if "client-certificate" in user:
        ctx.load_cert_chain(user["client-certificate"], user["client-key"])
    return cluster["server"], ctx


def objects(
    vms: int, per_namespace: int, shared: int, prefix: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(what the VMs reference, the VMs)."""
    refs: list[dict[str, Any]] = [
        {
            "apiVersion": IT,
            "kind": "VirtualMachineClusterInstancetype",
            "metadata": {"name": f"{prefix}-shared"},
            "spec": {"cpu": {"guest": 2}, "memory": {"guest": "2Gi"}},
        }
    ]
    for n in range((vms + per_namespace - 1) // per_namespace):
        ns = f"{prefix}-{n}"
        refs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for name, cpus in (("small", 1), ("large", 4)):
            refs.append(
                {
                    "apiVersion": IT,
                    "kind": "VirtualMachineInstancetype",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"cpu": {"guest": cpus}, "memory": {"guest": f"{cpus}Gi"}},
                }
            )
        refs.append(
            {
                "apiVersion": IT,
                "kind": "VirtualMachinePreference",
                "metadata": {"name": "cores", "namespace": ns},
                "spec": {"cpu": {"preferredCPUTopology": "cores"}},
            }
        )
    out = []
    for i in range(vms):
        ns = f"{prefix}-{i // per_namespace}"
        if i < shared:
            it = {"kind": "VirtualMachineClusterInstancetype", "name": f"{prefix}-shared"}
        else:
            it = {"kind": "VirtualMachineInstancetype", "name": "small" if i % 3 else "large"}
        out.append(
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "metadata": {"name": f"vm-{i:06d}", "namespace": ns, "labels": {"app": f"app-{i % 10}"}},
                "spec": {
                    "runStrategy": "Halted",
                    "instancetype": it,
                    "preference": {"kind": "VirtualMachinePreference", "name": "cores"},
                    "template": {
                        "metadata": {"labels": {"kubevirt.io/vm": f"vm-{i:06d}"}},
                        "spec": {
                            "domain": {"devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}]}},
                            "volumes": [
                                {
                                    "name": "root",
                                    "containerDisk": {"image": "quay.io/containerdisks/fedora:40"},
                                }
                            ],
                        },
                    },
                },
            }
        )
    return refs, out


def path_of(obj: dict[str, Any]) -> str:
    kind = obj["kind"]
    ns = obj["metadata"].get("namespace")
    if kind == "Namespace":
        return "/api/v1/namespaces"
    if kind == "VirtualMachine":
        return f"/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines"
    plural = kind.lower() + "s"
    return (
        f"/apis/instancetype.kubevirt.io/v1beta1/namespaces/{ns}/{plural}" if ns else f"/apis/{IT}/{plural}"
    )


async def create_all(server: str, ctx: ssl.SSLContext, items: list[dict[str, Any]], concurrency: int) -> int:
    created = 0
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=concurrency)) as http:

        async def worker() -> None:
            nonlocal created
            while not queue.empty():
                obj = queue.get_nowait()
                async with http.post(
                    server + path_of(obj), data=json.dumps(obj), headers={"Content-Type": "application/json"}
                ) as resp:
                    body = await resp.read()
                    if resp.status == 201:
                        created += 1
                    elif resp.status != 409:
                        raise RuntimeError(f"POST {path_of(obj)}: {resp.status} {body[:300]!r}")

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return created


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def put_all_etcd(etcd: str, items: list[dict[str, Any]], concurrency: int, batch: int = 100) -> int:
    """Store VMs in etcd as kube-apiserver stores custom resources; those already there are kept."""
    created = 0
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    queue: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue()
    for start in range(0, len(items), batch):
        queue.put_nowait(items[start : start + batch])

    def txn(objs: list[dict[str, Any]]) -> dict[str, Any]:
        keys, puts = [], []
        for obj in objs:
            meta = obj["metadata"]
            key = _b64(f"/registry/kubevirt.io/virtualmachines/{meta['namespace']}/{meta['name']}".encode())
            stored = {**obj, "metadata": {**meta, "uid": str(uuid.uuid4()), "creationTimestamp": now}}
            stored["metadata"]["generation"] = 1
            keys.append(key)
            puts.append({"requestPut": {"key": key, "value": _b64(json.dumps(stored).encode())}})
        # All or nothing: the batch goes in only if none of its keys exists yet.
        compare = [{"key": k, "target": "CREATE", "result": "EQUAL", "createRevision": "0"} for k in keys]
        return {"compare": compare, "success": puts}

    async with aiohttp.ClientSession() as http:

        async def send(body: dict[str, Any]) -> bool:
            async with http.post(f"{etcd}/v3/kv/txn", json=body) as resp:
                answer = await resp.json(content_type=None)
                if resp.status != 200:
                    raise RuntimeError(f"etcd txn: {resp.status} {str(answer)[:300]}")
                return bool(answer.get("succeeded"))

        async def worker() -> None:
            nonlocal created
            while not queue.empty():
                objs = queue.get_nowait()
                if await send(txn(objs)):
                    created += len(objs)
                    continue
                for obj in objs:  # some exist already: one at a time
                    created += await send(txn([obj]))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return created


async def load(
    kubeconfig: Path,
    vms: int,
    per_namespace: int,
    shared: int,
    prefix: str,
    concurrency: int,
    etcd: str | None = None,
) -> float:
    server, ctx = _ssl_and_server(kubeconfig)
    refs, vm_objects = objects(vms, per_namespace, shared, prefix)
    started = time.monotonic()
    await create_all(server, ctx, [r for r in refs if r["kind"] == "Namespace"], concurrency)
    await create_all(server, ctx, [r for r in refs if r["kind"] != "Namespace"], concurrency)
    if etcd:
        await put_all_etcd(etcd.rstrip("/"), vm_objects, min(concurrency, 4))
    else:
        await create_all(server, ctx, vm_objects, concurrency)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kubeconfig", type=Path, required=True, help="an admin kubeconfig (client certificate)"
    )
    parser.add_argument("--vms", type=int, required=True, help="how many VMs")
    parser.add_argument("--per-namespace", type=int, default=1000, help="VMs per namespace")
    parser.add_argument(
        "--shared", type=int, default=1000, help="VMs using the one shared cluster instancetype"
    )
    parser.add_argument("--concurrency", type=int, default=16, help="POSTs in flight")
    parser.add_argument("--prefix", default="load", help="namespace and shared instancetype name prefix")
    parser.add_argument(
        "--etcd",
        metavar="URL",
        help="put the VMs straight into this etcd (http://127.0.0.1:PORT), not by POST",
    )
    args = parser.parse_args(argv)
    took = asyncio.run(
        load(
            args.kubeconfig,
            args.vms,
            args.per_namespace,
            args.shared,
            args.prefix,
            args.concurrency,
            args.etcd,
        )
    )
    print(f"loaded {args.vms} VMs, {args.per_namespace} per namespace, in {took:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
