#!/usr/bin/env python3
"""A catalog change previewed across a large fleet, against previewing every VM (the baseline), in one run.

Generates FLEET VMs over common-instancetypes' names (../shared/catalogs; instancetypes of the u1, cx1,
o1 and n1 series, preferences drawn so that about SHARE of the VMs name one that v1.7.0 edits, and some
VMs halted) and previews v1.6.0 -> v1.7.0 with :func:`apiserver.cli.catalogchange.preview_catalog_change`
(only the VMs that name a changed object are rendered), then the same upgrade for every VM with
:func:`apiserver.cli.preview.preview_folders` (``--upgrade``: every VM rendered twice) on a sample of
BASELINE VMs, scaled to the fleet. Prints both, the VMs each rendered, and the ratio.

    .venv/bin/python -m hack.benchmarks.catalogchange [--fleet N] [--share F] [--baseline N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from apiserver.cli.preview import Side, preview_folders
from apiserver.render import ExpandError, ObjectIndex, expand
from apiserver.render.catalogchange import UNAFFECTED, changed_objects, preview_catalog_change, versioned

CATALOGS = Path(__file__).resolve().parents[2].parent / "shared" / "catalogs" / "common-instancetypes"
SERIES = ("u1", "cx1", "o1", "n1")


def _catalog(version: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in sorted((CATALOGS / version).glob("*.yaml")):
        objects.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return objects


def _names(objects: list[dict[str, Any]], kind: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects if o.get("kind") == kind)


def fleet(
    count: int, share: float, before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> dict[Any, Any]:
    rng = random.Random(40)
    instancetypes = [
        n for n in _names(before, "VirtualMachineClusterInstancetype") if n.split(".")[0] in SERIES
    ]
    changed = {ref.name for ref in changed_objects(before, after) if ref.kind.endswith("Preference")}
    preferences = _names(before, "VirtualMachineClusterPreference")
    touched = sorted(p for p in preferences if p in changed and not p.endswith((".arm64", ".s390x")))
    untouched = [p for p in preferences if p not in changed and not p.endswith((".arm64", ".s390x"))]
    index = ObjectIndex(versioned(before, "before"))
    admitted: dict[tuple[str, str], bool] = {}
    vms: dict[tuple[str, str], dict[str, Any]] = {}
    while len(vms) < count:
        i = len(vms)
        preference = rng.choice(touched if rng.random() < share else untouched)
        vm: dict[str, Any] = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": f"vm-{i}", "namespace": f"team-{i % 20}"},
            "spec": {
                "runStrategy": "Halted" if i % 5 == 0 else "Always",
                "instancetype": {"name": rng.choice(instancetypes)},
                "preference": {"name": preference},
                "template": {"spec": {"domain": {"devices": {}}}},
            },
        }
        combo = (vm["spec"]["instancetype"]["name"], preference)
        if combo not in admitted:  # only VMs KubeVirt admits under v1.6.0: a fleet that could exist
            try:
                expand(vm, index, validate=True)
                admitted[combo] = True
            except ExpandError:
                admitted[combo] = False
        if admitted[combo]:
            vms[(f"team-{i % 20}", f"vm-{i}")] = vm
    return vms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--fleet", type=int, default=10_000, help="VMs (default %(default)s)")
    parser.add_argument(
        "--share", type=float, default=0.1, help="VMs naming an edited preference (%(default)s)"
    )
    parser.add_argument("--baseline", type=int, default=500, help="VMs the baseline previews (%(default)s)")
    args = parser.parse_args(argv)
    if not CATALOGS.is_dir():
        print(f"error: {CATALOGS} not found (../shared beside the repository)", file=sys.stderr)
        return 2
    before, after = _catalog("v1.6.0"), _catalog("v1.7.0")
    vms = fleet(args.fleet, args.share, before, after)

    started = time.perf_counter()
    answer = preview_catalog_change(vms, [], before, after, None)
    seconds = time.perf_counter() - started
    rendered = sum(1 for e in answer.entries if e["verdict"] != UNAFFECTED)

    sample = dict(list(vms.items())[: args.baseline])
    started = time.perf_counter()
    # the baseline's objects versioned as well, so that both decode each instancetype once
    old, new = versioned(before, "before"), versioned(after, "after")
    preview_folders(
        Side(vms=sample, objects=[dict(o) for o in old]),
        Side(vms=sample, objects=[dict(o) for o in new]),
        None,
        upgrade=True,
    )
    baseline_sample = time.perf_counter() - started
    baseline = baseline_sample * len(vms) / len(sample)

    counts = ", ".join(f"{n} {v}" for v, n in sorted(answer.counts().items()))
    print(
        f"fleet: {len(vms)} VMs in 20 namespaces; common-instancetypes v1.6.0 -> v1.7.0 ({len(answer.changed)} objects)"
    )
    print(f"catalog change preview: {seconds:.2f} s, {rendered} VMs rendered ({counts})")
    print(
        f"every VM previewed (baseline): {baseline_sample:.2f} s for {len(sample)} VMs, "
        f"{baseline:.1f} s scaled to {len(vms)}"
    )
    print(f"ratio baseline/catalog change: {baseline / seconds:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
