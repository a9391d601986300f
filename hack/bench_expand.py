#!/usr/bin/env python3
"""Benchmark the expand engine over the conformance corpus, in-process.

    .venv/bin/python hack/bench_expand.py [--limit N] [--repeat R] [--profile]

For every case that expands, prints nothing per case but aggregates per-case medians (microseconds):
  expand             expand() on the parsed VM with the objects (decoding instancetypes and preferences
                     from their raw dicts, VM decode and Go-order encode included)
  expand-warm        the same with the objects' decoded specs already cached (a server's steady state)
  json-in/json-out   VM JSON bytes -> orjson.loads -> expand (warm) -> orjson.dumps -> bytes
and, as a baseline measured in the same run, orjson loads+dumps of the same VM (the floor for JSON in/out).
KubeVirt's Go code, measured on this machine over 27 corpus cases (median of per-case medians):
Expand alone 4.1 us; JSON in -> Expand -> JSON out (objects decoded) 16.2 us; decoding objects as well 42.6 us.
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

from apiserver.render import ObjectIndex, expand  # noqa: E402
from apiserver.render.find import clear_spec_cache  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--limit", type=int, default=200, help="cases to run, spread over the corpus (0 = all)"
    )
    parser.add_argument("--repeat", type=int, default=7, help="timed batches per case")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the warm JSON path")
    args = parser.parse_args()

    cases = load_cases(args.limit or None)
    results: dict[str, list[float]] = {k: [] for k in ("expand", "expand-warm", "json-in/json-out", "orjson")}
    for case in cases:
        inp = case["input"]
        vm, index, kubevirt = inp["vm"], ObjectIndex(inp["objects"]), inp.get("kubevirt")
        warm_index = ObjectIndex(stamped(o, n) for n, o in enumerate(inp["objects"]))
        body = orjson.dumps(vm)

        def cold() -> Any:
            clear_spec_cache()
            return expand(vm, index, kubevirt=kubevirt)

        def warm() -> Any:
            return expand(vm, warm_index, kubevirt=kubevirt)

        def json_path() -> bytes:
            return orjson.dumps(expand(orjson.loads(body), warm_index, kubevirt=kubevirt).vm)

        def baseline() -> bytes:
            return orjson.dumps(orjson.loads(body))

        results["expand"].append(per_call_us(cold, args.repeat))
        warm()
        results["expand-warm"].append(per_call_us(warm, args.repeat))
        results["json-in/json-out"].append(per_call_us(json_path, args.repeat))
        results["orjson"].append(per_call_us(baseline, args.repeat))

    print(f"{len(cases)} cases, median and p99 of the per-case medians, microseconds")
    for name, values in results.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"  {name:20s} median {statistics.median(values):8.1f}   p99 {p99:8.1f}")
    warm_json = statistics.median(results["json-in/json-out"])
    print(
        f"  ratio json-in/json-out to KubeVirt's Go figure ({GO_REFERENCE['json-in/json-out']} us): "
        f"{warm_json / GO_REFERENCE['json-in/json-out']:.2f}x"
    )
    print(
        f"  ratio json-in/json-out to orjson loads+dumps of the same VM in this run: "
        f"{warm_json / statistics.median(results['orjson']):.1f}x"
    )

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(20):
            for case in cases:
                inp = case["input"]
                index = ObjectIndex(stamped(o, n) for n, o in enumerate(inp["objects"]))
                orjson.dumps(
                    expand(orjson.loads(orjson.dumps(inp["vm"])), index, kubevirt=inp.get("kubevirt")).vm
                )
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
