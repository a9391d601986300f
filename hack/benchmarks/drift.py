#!/usr/bin/env python3
"""What the collection's drift costs the store, per VM rendered, against the same rendering without it.

Writes a fleet of VMS VMs (half on each of two cluster instancetypes, each VM pinned to the
ControllerRevision KubeVirt's controller stores, through its status ref) into a folder, serves it with
the folder source, and times the collection store's rendering of every VM (``RenderedStore._render``:
the rendering, the item, and the drift) in three settings, alternating ROUNDS times:

* ``baseline``: the store with its drift switched off (what it did before the drift);
* ``current``: the drift of every VM, no VM stale (each compares its revision with the live object);
* ``stale``: the first instancetype edited (within maxSockets), so half the VMs are stale and each of
  those runs the change preview of its upgrade (both VMs rendered, the assumed VMI, the reconcile).

Prints the median of each and the ratios to the baseline from the same run.

    .venv/bin/python -m hack.benchmarks.drift [--vms N] [--rounds N] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apiserver.sources.folder import FolderSource
from apiserver.sources.rendered.store import RenderedStore
from tests.support.revisions import captured, status_ref

NS = "fleet"


def instancetype(name: str, cpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name, "uid": f"uid-{name}", "generation": 1},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": "4Gi"}},
    }


def fleet(count: int, edited: bool) -> list[dict[str, Any]]:
    """The objects of the folder: the instancetypes (``edited``: the first one with 4 vCPUs instead of
    2), each VM and its revision of the instancetype as it was (2 vCPUs)."""
    taken = {"it-a": instancetype("it-a", 2), "it-b": instancetype("it-b", 2)}
    objects: list[dict[str, Any]] = [instancetype("it-a", 4 if edited else 2), taken["it-b"]]
    for i in range(count):
        name, it = f"vm-{i}", "it-a" if i % 2 == 0 else "it-b"
        revision = captured(name, NS, taken[it])
        matcher = {"name": it, "kind": "VirtualMachineClusterInstancetype"}
        objects.append(revision)
        objects.append(
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "metadata": {"name": name, "namespace": NS},
                "spec": {
                    "runStrategy": "Always",
                    "instancetype": matcher,
                    "template": {"spec": {"domain": {"devices": {}}, "architecture": "amd64"}},
                },
                "status": {"instancetypeRef": status_ref(matcher, revision)},
            }
        )
    return objects


class NoDrift(RenderedStore):
    async def _drift(self, key: Any, vm: Mapping[str, Any], rendered: Any) -> tuple[None, dict[Any, Any]]:
        return None, {}


def write_folder(folder: Path, objects: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fleet.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


async def source_of(folder: Path) -> FolderSource:
    source = FolderSource(folder, watch=False)
    await source.start()
    return source


async def render_all(store: RenderedStore, vms: list[Mapping[str, Any]]) -> tuple[float, int]:
    """Seconds to render every VM through the store; how many items came out stale."""
    started = time.perf_counter()
    items = [await store._render((NS, str(vm["metadata"]["name"])), vm, "1") for vm in vms]
    seconds = time.perf_counter() - started
    return seconds, sum(1 for item in items if item.fields["status.stale"] == "true")


async def run(count: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        write_folder(Path(tmp) / "current", fleet(count, edited=False))
        write_folder(Path(tmp) / "edited", fleet(count, edited=True))
        current, edited = await source_of(Path(tmp) / "current"), await source_of(Path(tmp) / "edited")
        vms = [o for o in fleet(count, edited=False) if o["kind"] == "VirtualMachine"]
        settings = {
            "baseline": NoDrift(current),
            "current": RenderedStore(current),
            "stale": RenderedStore(edited),
        }
        times: dict[str, list[float]] = {name: [] for name in settings}
        stale: dict[str, int] = {}
        for store in settings.values():  # warm the caches once
            await render_all(store, vms)
        for _ in range(rounds):
            for name, store in settings.items():
                seconds, stale[name] = await render_all(store, vms)
                times[name].append(seconds)
        await current.close()
        await edited.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "vms": count,
        "rounds": rounds,
        "stale": stale,
        "median_ms": {name: round(m * 1000, 1) for name, m in medians.items()},
        "per_vm_us": {name: round(m / count * 1e6, 1) for name, m in medians.items()},
        "ratio": {name: round(m / medians["baseline"], 2) for name, m in medians.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=1000, help="VMs in the fleet (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.vms, args.rounds))
    print(
        f"{args.vms} VMs pinned to revisions, {args.rounds} alternating rounds; the store renders every VM:"
    )
    for name in ("baseline", "current", "stale"):
        print(
            f"  {name:9} {result['median_ms'][name]:8.1f} ms  {result['per_vm_us'][name]:7.1f} us/VM  "
            f"{result['ratio'][name]:5.2f}x  ({result['stale'][name]} stale)"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
