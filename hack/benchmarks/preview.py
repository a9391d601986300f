#!/usr/bin/env python3
"""The change preview of a fleet, against expanding the same VMs (the baseline), in one run.

Generates FLEET VMs (half on each of two instancetypes; in the proposed folder a quarter switched to a
bigger size within the VMI's limits, a quarter beyond them) and times, alternating ROUNDS times,
``preview_folders`` (every VM: both sides rendered, the assumed VMI, KubeVirt's reconcile, the patch) and
``expand`` of the proposed VMs alone. Prints each median and the ratio preview/expand.

    .venv/bin/python -m hack.benchmarks.preview [--fleet N] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from apiserver.cli.preview import Side, preview_folders
from apiserver.render import ObjectIndex, expand

SIZES = {"small": (1, "2Gi"), "medium": (2, "4Gi"), "large": (4, "8Gi"), "huge": (16, "64Gi")}


def fleet(count: int) -> tuple[Side, Side]:
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "instancetype.kubevirt.io/v1beta1",
            "kind": "VirtualMachineClusterInstancetype",
            "metadata": {"name": name},
            "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
        }
        for name, (cpus, memory) in SIZES.items()
    ]
    before, after = Side(objects=list(objects)), Side(objects=list(objects))
    for i in range(count):
        for side, size in ((before, "small" if i % 2 else "medium"), (after, None)):
            if size is None:
                size = {0: "large", 1: "huge"}.get(i % 4, "small" if i % 2 else "medium")
            vm = {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "metadata": {"name": f"vm-{i}", "namespace": "fleet"},
                "spec": {
                    "runStrategy": "Always",
                    "instancetype": {"name": size, "kind": "VirtualMachineClusterInstancetype"},
                    "template": {"spec": {"domain": {"devices": {}}, "architecture": "amd64"}},
                },
            }
            side.vms[("fleet", f"vm-{i}")] = vm
    return before, after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fleet", type=int, default=1000, help="VMs (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="alternations (default %(default)s)")
    args = parser.parse_args(argv)
    before, after = fleet(args.fleet)
    index = ObjectIndex(after.objects)
    previews: list[float] = []
    expands: list[float] = []
    verdicts: dict[str, int] = {}
    for _ in range(args.rounds):
        start = time.perf_counter()
        entries = preview_folders(before, after, None)
        previews.append(time.perf_counter() - start)
        start = time.perf_counter()
        for vm in after.vms.values():
            expand(vm, index)
        expands.append(time.perf_counter() - start)
        verdicts = {}
        for entry in entries:
            verdicts[entry["verdict"]] = verdicts.get(entry["verdict"], 0) + 1
    p, e = statistics.median(previews), statistics.median(expands)
    print(f"fleet {args.fleet} VMs, {args.rounds} rounds; verdicts {dict(sorted(verdicts.items()))}")
    print(f"preview of the fleet: median {p:.3f} s ({p / args.fleet * 1e3:.2f} ms per VM)")
    print(f"expand of the proposed VMs (baseline): median {e:.3f} s")
    print(f"ratio preview/expand: {p / e:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
