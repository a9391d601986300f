#!/usr/bin/env python3
"""Benchmark the expand engine over the conformance corpus, in-process.

    .venv/bin/python hack/bench_expand.py [--limit N] [--repeat R] [--profile] [--phases]

For every case that expands, prints nothing per case but aggregates per-case medians (microseconds):
  expand             expand() on the parsed VM with the objects (decoding instancetypes and preferences
                     from their raw dicts, VM decode and Go-order encode included)
  expand-warm        the same with the objects' decoded specs already cached (a server's steady state)
  json-in/json-out   VM JSON bytes -> orjson.loads -> expand (warm) -> orjson.dumps -> bytes
and, as baselines measured in the same run on the same VMs, orjson loads+dumps (the floor for JSON in and
out) and the standard library's json.loads+json.dumps. Ratios are printed against those baselines only:
figures from another machine or another run do not divide into this run's.
``--phases`` also splits the warm JSON path into its steps (loads, decode, infer, find, config, the
defaults and appliers, encode, dumps), timed inline per call.
For reference only (printed as such, never divided into): KubeVirt's Go code, measured once on another
2-core machine over 27 corpus cases (median of per-case medians): Expand alone 4.1 us; JSON in -> Expand
-> JSON out (objects decoded) 16.2 us; decoding objects as well 42.6 us.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apiserver.render import ObjectIndex, expand, gojson  # noqa: E402
from apiserver.render.apply_instancetype import apply_instancetype  # noqa: E402
from apiserver.render.apply_preference import apply_preference  # noqa: E402
from apiserver.render.config import cluster_config  # noqa: E402
from apiserver.render.defaults import (  # noqa: E402
    set_default_network_interface,
    set_default_volume_disks,
    set_vmi_spec_defaults,
)
from apiserver.render.expand import decode_vm  # noqa: E402
from apiserver.render.find import clear_spec_cache, find_instancetype, find_preference  # noqa: E402
from apiserver.render.infer import infer_matchers  # noqa: E402
from apiserver.render.tree import child  # noqa: E402

CASES = Path(REPO.parent / "shared" / "conformance" / "cases")
GO_REFERENCE = {"expand": 4.1, "json-in/json-out": 16.2, "json-in/json-out + object decode": 42.6}


def per_call_us(fn: Callable[[], Any], repeat: int) -> float:
    """Median of ``repeat`` timed batches, in microseconds per call."""
    batch = 20
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter_ns() - start) / batch / 1000)
    return statistics.median(samples)


def stamped(obj: dict[str, Any], n: int) -> dict[str, Any]:
    """A copy carrying a uid and resourceVersion, as every object read from an API server does."""
    meta = {**obj.get("metadata", {}), "uid": f"bench-{n}", "resourceVersion": str(n)}
    return {**obj, "metadata": meta}


def load_cases(limit: int | None) -> list[dict[str, Any]]:
    cases = []
    for path in sorted(CASES.glob("*.json")):
        case = json.loads(path.read_text())
        if "expanded" in case["expected"] and not path.stem.startswith("presets-"):
            case["id"] = path.stem
            cases.append(case)
    if limit:
        step = max(1, len(cases) // limit)
        cases = cases[::step][:limit]
    return cases


def time_case(
    vm: dict[str, Any], index: ObjectIndex, warm_index: ObjectIndex, kubevirt: Any, body: bytes, repeat: int
) -> dict[str, float]:
    """Per-call microseconds of one case: cold and warm expand, the warm JSON path, the orjson floor."""

    def cold() -> Any:
        clear_spec_cache()
        return expand(vm, index, kubevirt=kubevirt)

    def warm() -> Any:
        return expand(vm, warm_index, kubevirt=kubevirt)

    def json_path() -> bytes:
        return orjson.dumps(expand(orjson.loads(body), warm_index, kubevirt=kubevirt).vm)

    def baseline() -> bytes:
        return orjson.dumps(orjson.loads(body))

    text = body.decode()

    def stdlib_baseline() -> str:
        return json.dumps(json.loads(text), separators=(",", ":"))

    timings = {"expand": per_call_us(cold, repeat)}
    warm()
    timings["expand-warm"] = per_call_us(warm, repeat)
    timings["json-in/json-out"] = per_call_us(json_path, repeat)
    timings["orjson"] = per_call_us(baseline, repeat)
    timings["stdlib-json"] = per_call_us(stdlib_baseline, repeat)
    return timings


PHASES = (
    "loads",
    "decode",
    "infer",
    "find",
    "config",
    "defaults-before",
    "apply-instancetype",
    "apply-preference",
    "defaults-after",
    "encode",
    "dumps",
)


def phase_split(body: bytes, index: ObjectIndex, kubevirt: Any, repeat: int) -> dict[str, float]:
    """Median microseconds per step of the warm JSON path, the steps of expand() run one by one."""
    clock = time.perf_counter_ns
    samples: dict[str, list[float]] = {name: [] for name in PHASES}
    for _ in range(repeat * 5):
        t0 = clock()
        vm = orjson.loads(body)
        t1 = clock()
        decoded = decode_vm(vm)
        t2 = clock()
        infer_matchers(decoded, index)
        t3 = clock()
        instancetype = find_instancetype(decoded, index)
        preference = find_preference(decoded, index)
        t4 = clock()
        config = cluster_config(kubevirt)
        t5 = clock()
        template = decoded["spec"]["template"]
        tspec, tmeta = child(template, "spec"), child(template, "metadata")
        set_default_volume_disks(tspec)
        set_default_network_interface(config, tspec)
        t6 = clock()
        if instancetype is not None:
            apply_instancetype(instancetype, preference, tspec, tmeta)
        t7 = clock()
        if preference is not None:
            apply_preference(preference, tspec, tmeta)
        t8 = clock()
        set_vmi_spec_defaults(config, tspec)
        t9 = clock()
        out = gojson.encode(decoded, "VirtualMachine")
        t10 = clock()
        orjson.dumps(out)
        t11 = clock()
        stamps = (t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11)
        for name, start, end in zip(PHASES, stamps, stamps[1:], strict=False):
            samples[name].append((end - start) / 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--limit", type=int, default=200, help="cases to run, spread over the corpus (0 = all)"
    )
    parser.add_argument("--repeat", type=int, default=7, help="timed batches per case")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the warm JSON path")
    parser.add_argument("--phases", action="store_true", help="split the warm JSON path by step")
    args = parser.parse_args()

    cases = load_cases(args.limit or None)
    results: dict[str, list[float]] = {
        k: [] for k in ("expand", "expand-warm", "json-in/json-out", "orjson", "stdlib-json")
    }
    phases: dict[str, list[float]] = {name: [] for name in PHASES}
    for case in cases:
        inp = case["input"]
        vm, index, kubevirt = inp["vm"], ObjectIndex(inp["objects"]), inp.get("kubevirt")
        warm_index = ObjectIndex(stamped(o, n) for n, o in enumerate(inp["objects"]))
        body = orjson.dumps(vm)

        for name, value in time_case(vm, index, warm_index, kubevirt, body, args.repeat).items():
            results[name].append(value)
        if args.phases:
            for name, value in phase_split(body, warm_index, kubevirt, args.repeat).items():
                phases[name].append(value)

    print(f"{len(cases)} cases, median and p99 of the per-case medians, microseconds")
    for name, values in results.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"  {name:20s} median {statistics.median(values):8.1f}   p99 {p99:8.1f}")
    warm_json = statistics.median(results["json-in/json-out"])
    print("ratios to baselines measured in this run, on the same VMs (median over median)")
    for baseline in ("orjson", "stdlib-json"):
        print(f"  json-in/json-out / {baseline:12s} {warm_json / statistics.median(results[baseline]):6.1f}x")
    print(
        "  expand / expand-warm (cost of decoding the objects)"
        f" {statistics.median(results['expand']) / statistics.median(results['expand-warm']):.1f}x"
    )
    print(
        "reference from elsewhere, not measured here and not comparable with the figures above: KubeVirt's "
        f"Go code took {GO_REFERENCE['json-in/json-out']} us for json-in/json-out "
        f"({GO_REFERENCE['expand']} us expand alone) on another 2-core machine"
    )

    if args.phases:
        print("warm JSON path by step (mean and median of the per-case medians, microseconds)")
        total = 0.0
        for name, values in phases.items():
            total += statistics.mean(values)
            print(
                f"  {name:20s} mean {statistics.mean(values):7.2f}   median {statistics.median(values):7.2f}"
            )
        print(f"  {'sum of means':20s} {total:7.2f}")

    if args.profile:
        prepared = [
            (
                orjson.dumps(case["input"]["vm"]),
                ObjectIndex(stamped(o, n) for n, o in enumerate(case["input"]["objects"])),
                case["input"].get("kubevirt"),
            )
            for case in cases
        ]
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(20):
            for body, index, kubevirt in prepared:
                orjson.dumps(expand(orjson.loads(body), index, kubevirt=kubevirt).vm)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
