#!/usr/bin/env python3
"""Memory of the VM cache and the rendered-VM collection per VM, in process, without a control plane.

Usage: .venv/bin/python -m hack.benchmarks.collection_memory [--sizes 1000,10000,100000] [--tracemalloc] [--relist]
                                               [--managed-fields kept|none|both] [--json FILE]

For each size, in a fresh process: the cluster source with ``vm_cache`` over an in-memory Kubernetes
API (list pages decoded from JSON as the real client decodes them; VMs shaped as hack/benchmarks/load_vms.py makes
them, with the metadata kube-apiserver adds), waits for the collection to be rendered, then reports RSS
(and with ``--tracemalloc`` the Python heap by file) and the growth per VM against the smallest size of the
same run. ``--relist`` then lists everything again as after a 410 Gone, every VM changed (new
resourceVersions), and reports the peak RSS during it, RSS after it, and the longest time the event loop
was held (sampled every 10 ms). The figures are the store's alone: no HTTP server runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from apiserver.sources.cluster import ClusterSource, kinds
from hack.benchmarks import load_vms

ROOT = Path(__file__).resolve().parents[2]


PER_NAMESPACE = 500


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class MemoryKube:
    """The part of :class:`~apiserver.sources.cluster.client.KubeClient` the caches use, over dicts."""

    def __init__(self, objects: list[dict[str, Any]], *, managed_fields: bool = True) -> None:
        self.revision = 1000
        self.managed_fields = managed_fields
        self.by_path: dict[str, list[dict[str, Any]]] = {}
        for obj in objects:
            self.add(obj)

    def resource_of(self, obj: Mapping[str, Any]) -> kinds.Resource:
        for resource in (*kinds.CACHED, kinds.VIRTUAL_MACHINE):
            if resource.kind == obj["kind"]:
                return resource
        raise KeyError(obj["kind"])

    def add(self, obj: dict[str, Any]) -> None:
        self.revision += 1
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", "2024-05-01T10:00:00Z")
        meta.setdefault("generation", 1)
        meta["resourceVersion"] = str(self.revision)
        if self.managed_fields:
            meta["managedFields"] = managed_fields(obj, self.revision)
        self.by_path.setdefault(self.resource_of(obj).path(), []).append(obj)

    def touch_all(self, kind: str) -> None:
        """Every object of ``kind`` written again (a new resourceVersion), as while a watch was away."""
        for objects in self.by_path.values():
            for obj in objects:
                if obj["kind"] == kind:
                    self.revision += 1
                    obj["metadata"]["resourceVersion"] = str(self.revision)

    async def get(
        self, path: str, query: Mapping[str, str] | None = None, *, verb: str = "get", seconds: float = 0
    ) -> dict[str, Any]:
        await asyncio.sleep(0)
        if verb == "discovery":
            group_resources = [
                r for r in (*kinds.CACHED, kinds.VIRTUAL_MACHINE) if r.group_version_path == path
            ]
            return {"resources": [{"name": r.plural} for r in group_resources]}
        objects = self.by_path.get(path, [])
        start = int((query or {}).get("continue") or 0)
        end = start + int((query or {}).get("limit") or 500)
        meta: dict[str, Any] = {"resourceVersion": str(self.revision)}
        if end < len(objects):
            meta["continue"] = str(end)
        # Decoded from JSON, as the real client decodes kube-apiserver's answer: fresh objects.
        return orjson.loads(orjson.dumps({"metadata": meta, "items": objects[start:end]}))  # type: ignore[no-any-return]

    async def watch(
        self, path: str, query: Mapping[str, str], *, idle_timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        while True:
            await asyncio.sleep(3600)
            yield {}

    async def close(self) -> None:
        return None


def fields_v1(value: Any, root: bool = True) -> Any:
    """The FieldsV1 set kube-apiserver records for a manager that wrote ``value``: every member of every
    object (``f:name``), ``.`` for each object but the root, lists atomic (as KubeVirt's CRDs declare
    them)."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {} if root else {".": {}}
    for key, member in value.items():
        out[f"f:{key}"] = fields_v1(member, False)
    return out


def managed_fields(obj: Mapping[str, Any], revision: int) -> list[dict[str, Any]]:
    """What ``kubectl apply`` leaves on a VM it created: one entry of the client-side apply manager, the
    fields it set (labels, the last-applied annotation, spec), its time to the second (a bulk load
    writes ~200 objects a second, so times repeat)."""
    meta = obj["metadata"]
    written = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": ""},
            **({"labels": meta["labels"]} if meta.get("labels") else {}),
        },
        "spec": obj.get("spec", {}),
    }
    second = revision // 200
    return [
        {
            "apiVersion": obj["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(written),
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "time": f"2024-05-01T{10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z",
        }
    ]


def objects(size: int) -> list[dict[str, Any]]:
    refs, vms = load_vms.objects(size, PER_NAMESPACE, min(1000, size), "bench")
    return [r for r in refs if r["kind"] != "Namespace"] + vms


async def measure(size: int, trace: bool, relist: bool, managed: bool = True) -> dict[str, Any]:
    kube = MemoryKube(objects(size), managed_fields=managed)
    gc.collect()
    base_rss = rss_mib()
    if trace:
        tracemalloc.start()
    started = time.monotonic()
    source = ClusterSource(kube, vm_cache=True, progress_every=3600)  # type: ignore[arg-type]
    await source.start()
    assert source.rendered is not None
    await asyncio.wait_for(source.rendered.ready.wait(), 3600)
    out: dict[str, Any] = {
        "vms": size,
        "managed_fields": managed,
        "ready_seconds": round(time.monotonic() - started, 1),
    }
    gc.collect()
    out["rss_mib"] = round(rss_mib() - base_rss, 1)
    if trace:
        snap = tracemalloc.take_snapshot()
        out["traced_mib"] = round(sum(s.size for s in snap.statistics("filename")) / 2**20, 1)
        out["by_line"] = [
            (str(s.traceback), round(s.size / 2**20, 2)) for s in snap.statistics("lineno")[:12]
        ]
    if relist:
        out.update(await relisted(source, kube))
    await source.close()
    return out


async def relisted(source: ClusterSource, kube: MemoryKube) -> dict[str, Any]:
    """List every VM again with every one changed; peak and final RSS, the longest loop stall."""
    store = source.rendered
    assert store is not None
    cache = source.caches["VirtualMachine"]
    kube.touch_all("VirtualMachine")
    renders = store.renders
    peak = rss_mib()
    longest = 0.0
    done = False

    async def sample() -> None:
        nonlocal peak, longest
        last = time.monotonic()
        while not done:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            longest = max(longest, now - last - 0.01)
            last = now
            peak = max(peak, rss_mib())

    sampler = asyncio.create_task(sample())
    started = time.monotonic()
    await cache._list()
    # Polled: the store has no event for "this many renderings done".
    while store.pending or store.renders - renders < len(cache.store):  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    took = time.monotonic() - started
    done = True
    await sampler
    gc.collect()
    return {
        "relist_seconds": round(took, 1),
        "relist_peak_rss_mib": round(peak, 1),
        "after_relist_rss_mib": round(rss_mib(), 1),
        "relist_longest_stall_ms": round(longest * 1e3, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="VM counts, ascending (comma-separated)")
    parser.add_argument("--tracemalloc", action="store_true", help="also the traced Python heap by line")
    parser.add_argument("--relist", action="store_true", help="also a relist with every VM changed")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--managed-fields",
        choices=["kept", "none", "both"],
        default="kept",
        help="VMs with the managedFields kubectl apply leaves (kept, as the cache keeps them), without any "
        "(none: what the cache held when it dropped them), or both, and the difference per VM (default: kept)",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: one size
    parser.add_argument("--no-managed-fields", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        found = asyncio.run(measure(args.one, args.tracemalloc, args.relist, not args.no_managed_fields))
        print(json.dumps(found))
        return 0
    print(f"load before: {os.getloadavg()}", flush=True)
    variants = {"kept": [True], "none": [False], "both": [True, False]}[args.managed_fields]
    results: dict[bool, list[dict[str, Any]]] = {managed: [] for managed in variants}
    for size in (int(s) for s in args.sizes.split(",")):
        for managed in variants:
            command = [sys.executable, "-m", "hack.benchmarks.collection_memory", f"--one={size}"]
            command += ["--tracemalloc"] if args.tracemalloc else []
            command += ["--relist"] if args.relist else []
            command += [] if managed else ["--no-managed-fields"]
            done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
            found = json.loads(done.stdout)
            found["load"] = os.getloadavg()
            print(json.dumps(found), flush=True)
            results[managed].append(found)
    for managed, runs in results.items():
        label = "with managedFields" if managed else "without managedFields"
        a = runs[0]
        for b in runs[1:]:
            per_vm = (b["rss_mib"] - a["rss_mib"]) * 1024 / (b["vms"] - a["vms"])
            print(f"{label}: RSS per VM between {a['vms']} and {b['vms']} VMs: {per_vm:.2f} KiB")
            if "traced_mib" in a:
                traced = (b["traced_mib"] - a["traced_mib"]) * 1024 / (b["vms"] - a["vms"])
                print(f"{label}: traced heap per VM between {a['vms']} and {b['vms']} VMs: {traced:.2f} KiB")
    if len(results) == 2:
        for kept, dropped in zip(results[True], results[False], strict=True):
            more = kept["rss_mib"] - dropped["rss_mib"]
            print(
                f"{kept['vms']} VMs: managedFields cost {more:.1f} MiB RSS ({more * 1024 / kept['vms']:.2f} KiB per VM)"
            )
    if args.json:
        args.json.write_text(json.dumps([r for runs in results.values() for r in runs], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
