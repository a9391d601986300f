#!/usr/bin/env python3
"""What rendering the virt-launcher pod's resources costs, as a share of an expand, in one run.

    .venv/bin/python -m hack.benchmarks.launcher [--cases N] [--rounds K] [--ops N]

Cases: the first ``--cases`` inputs of the launcher corpus (tests/render/launcher/cases, every family in
turn). Per case, microseconds per call of:
  expand    ``apiserver.render.expand`` of the VM (what GET expand-spec renders), warm objects
  launch    ``apiserver.render.launcher.launch`` of the expanded VM: the VM controller's VMI, the VMI
            webhook's defaults, the memory overhead and the pod's containers and totals
The two are timed alternately (``--rounds`` rounds of ``--ops`` calls each, the median round per case),
so both meet the same machine load; the ratio launch/expand is printed per family and over all cases.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apiserver.render import ObjectIndex
from apiserver.render import expand as render_expand
from apiserver.render.launcher import cluster_inputs, launch
from hack.oracle.launcher_corpus import harness_kubevirt

CASES = Path(__file__).resolve().parents[2] / "tests" / "render" / "launcher" / "cases"


def _cases(limit: int) -> list[tuple[str, dict[str, Any]]]:
    families = []
    for path in sorted(CASES.glob("*.jsonl")):
        families.append([(path.stem, json.loads(line)) for line in path.read_text().splitlines()])
    picked: list[tuple[str, dict[str, Any]]] = []
    while len(picked) < limit and any(families):
        for family in families:
            if family and len(picked) < limit:
                picked.append(family.pop(0))
    return [(f, c) for f, c in picked if "error" not in c["answer"]]


def _time(fn: Callable[[], Any], ops: int) -> float:
    start = time.perf_counter()
    for _ in range(ops):
        fn()
    return (time.perf_counter() - start) / ops * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", type=int, default=20)
    args = parser.parse_args(argv)
    rows: dict[str, list[tuple[float, float]]] = {}
    warnings.simplefilter("ignore")
    for family, case in _cases(args.cases):
        given = case["input"]
        kubevirt = harness_kubevirt(given.get("kubevirt"), given.get("arch") or "amd64")
        index = ObjectIndex(given.get("objects") or [])
        vm = given["vm"]
        expanded = render_expand(copy.deepcopy(vm), index, kubevirt=kubevirt).vm
        arch = given.get("arch") or "amd64"
        found = cluster_inputs(given.get("objects") or [], vm["metadata"].get("namespace") or "default")

        def do_expand(vm: dict[str, Any] = vm, index: ObjectIndex = index, kv: Any = kubevirt) -> Any:
            return render_expand(vm, index, kubevirt=kv)

        def do_launch(
            expanded: dict[str, Any] = expanded, kv: Any = kubevirt, arch: str = arch, found: Any = found
        ) -> Any:
            return launch(expanded, kv, arch=arch, nads=found["nads"], pvcs=found["pvcs"])

        pairs = []
        for _ in range(args.rounds):
            pairs.append((_time(do_expand, args.ops), _time(do_launch, args.ops)))
        rows.setdefault(family, []).append(
            (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs))
        )
    print(f"{'family':<16}{'cases':>6}{'expand us':>12}{'launch us':>12}{'launch/expand':>15}")
    every: list[tuple[float, float]] = []
    for family, got in rows.items():
        every += got
        e, la = statistics.median(g[0] for g in got), statistics.median(g[1] for g in got)
        print(f"{family:<16}{len(got):>6}{e:>12.1f}{la:>12.1f}{la / e:>15.2f}")
    e, la = statistics.median(g[0] for g in every), statistics.median(g[1] for g in every)
    ratios = sorted(g[1] / g[0] for g in every)
    print(f"{'all':<16}{len(every):>6}{e:>12.1f}{la:>12.1f}{la / e:>15.2f}")
    print(
        f"launch/expand per case: median {statistics.median(ratios):.2f}, min {ratios[0]:.2f}, max {ratios[-1]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
