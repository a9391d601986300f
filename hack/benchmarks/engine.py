#!/usr/bin/env python3
"""Benchmark the expand engine over the conformance corpus, in-process, against KubeVirt's Go in the same run.

    .venv/bin/python -m hack.benchmarks.engine [--limit N] [--ops N] [--trials K] [--no-go] [--profile] [--phases]

Cases: ``--limit`` golden cases that expand and pass Strict field validation, spread over the corpus
(27 by default). Per case, microseconds per call, timed as the oracle times Go (five rounds of
``--ops`` calls, the median round), the lowest of ``--trials`` such measurements taken in turn with
Go's, of:
  api-ignore         the Python API, ``apiserver.expand(vm, objects, kubevirt, field_validation="Ignore")``,
                     warm: the same dicts again (as a UI backend holding its objects calls it)
  api-strict         the same at the default ``Strict`` (the VM's schema checked too)
  api-expander       ``apiserver.Expander(objects, kubevirt).expand(vm, field_validation="Ignore")``, the
                     Expander made once: objects checked and copied once, only the VM checked per call
  api-ignore+catalog api-ignore with ``--catalog`` more instancetypes and preferences beside the case's
                     objects (as a caller holding a cluster's catalog passes them), checked on every call
  expander+catalog   api-expander with the same catalog
  api-fresh          the Python API on a VM decoded afresh per call, as a script or a UI backend calls it:
                     VM JSON text -> orjson.loads -> ``apiserver.expand(vm, objects, kubevirt,
                     field_validation="Ignore")`` -> orjson.dumps, the objects the same dicts every call
  expander-fresh     the same through an Expander made once
  api-json           ``apiserver.expand_json(text, objects, kubevirt, field_validation="Ignore")``: JSON
                     text in (read as the server reads a PUT body), JSON text out
  expander-json      the same through an Expander made once (``Expander.expand_json``)
  render             the server's render: ``render.expand`` with the objects' decoded specs cached (their
                     uid and resourceVersion), the VM as parsed, no input check (a source's objects are JSON)
  expand-cold        ``render.expand`` decoding the instancetypes and preferences every time
  json-in/json-out   VM JSON bytes -> orjson.loads -> render (warm) -> orjson.dumps -> bytes
  go-server          KubeVirt's Go, timed by the oracle (``expand-oracle -bench``) on the same input right
                     after: unmarshal the VM, Expand with warm stores, marshal (what virt-api does per call)
  go-stateless       the same plus decoding every referenced object into fresh stores
and, as baselines measured in the same run on the same VMs, orjson loads+dumps (the floor for JSON in and
out) and the standard library's json.loads+json.dumps. Ratios are printed against those baselines and the
Go rows only: figures from another machine or another run do not divide into this run's. Without the
oracle binary (../shared/oracle builds it) the Go rows are left out and the script says so; KubeVirt's
Go figures measured elsewhere are then printed as a reference, never divided into.
``--phases`` also splits the warm JSON path into its steps (loads, decode, infer, find, config, the
defaults and appliers, encode, dumps), timed inline per call.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from apiserver import api
from apiserver.render import ExpandError, ObjectIndex, expand
from apiserver.render.defaults import (
    set_default_network_interface,
    set_default_volume_disks,
    set_vmi_spec_defaults,
)
from apiserver.render.expand import decode_vm
from apiserver.render.golang import gojson
from apiserver.render.golang.tree import child
from apiserver.render.instancetype.apply_instancetype import apply_instancetype
from apiserver.render.instancetype.apply_preference import apply_preference
from apiserver.render.instancetype.find import clear_spec_cache, find_instancetype, find_preference
from apiserver.render.instancetype.infer import infer_matchers
from apiserver.render.virtconfig import cluster_config
from hack.benchmarks.server import generated_objects
from tests.support.oracle import find_oracle

REPO = Path(__file__).resolve().parents[2]


CASES = Path(REPO.parent / "shared" / "conformance" / "cases")
# KubeVirt's Go, measured once on another 2-core machine over 27 corpus cases (median of the per-case
# medians): a reference when the oracle is not here, never a divisor.
GO_REFERENCE = {"expand": 4.1, "json-in/json-out": 16.2, "json-in/json-out + object decode": 42.6}
ROWS = (
    "api-ignore",
    "api-strict",
    "api-expander",
    "api-fresh",
    "expander-fresh",
    "api-json",
    "expander-json",
    "api-ignore+catalog",
    "expander+catalog",
    "render",
    "expand-cold",
    "json-in/json-out",
    "go-server",
    "go-stateless",
    "orjson",
    "stdlib-json",
)


def per_call_us(fn: Callable[[], Any], ops: int) -> float:
    """Microseconds per call as the oracle's ``-bench`` times Go: ``ops // 4 + 1`` calls to warm up,
    then five rounds of ``ops`` calls, the median round."""
    for _ in range(ops // 4 + 1):
        fn()
    rounds = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(ops):
            fn()
        rounds.append((time.perf_counter_ns() - start) / ops / 1000)
    return statistics.median(rounds)


def stamped(obj: dict[str, Any], n: int) -> dict[str, Any]:
    """A copy carrying a uid and resourceVersion, as every object read from an API server does."""
    meta = {**obj.get("metadata", {}), "uid": f"bench-{n}", "resourceVersion": str(n)}
    return {**obj, "metadata": meta}


def _strict_ok(case: dict[str, Any]) -> bool:
    inp = case["input"]
    try:
        api.expand(inp["vm"], inp["objects"], inp.get("kubevirt"))
    except ExpandError:
        return False
    return True


def load_cases(limit: int | None) -> list[dict[str, Any]]:
    """``limit`` golden cases spread evenly over those that expand (presets aside): at each step the
    first that also passes Strict, so that both levels time the same VMs."""
    cases = []
    for path in sorted(CASES.glob("*.json")):
        case = json.loads(path.read_text())
        if "expanded" in case["expected"] and not path.stem.startswith("presets-"):
            case["id"] = path.stem
            cases.append(case)
    step = max(1, len(cases) // limit) if limit else 1
    picked = []
    for start in range(0, len(cases), step):
        found = next((c for c in cases[start : start + step] if _strict_ok(c)), None)
        if found is not None:
            picked.append(found)
        if limit and len(picked) == limit:
            break
    return picked


class GoBench:
    """``expand-oracle -bench N`` kept running: one input line in, ``{server_ns, stateless_ns}`` out."""

    def __init__(self, binary: Path, ops: int) -> None:
        self.proc = subprocess.Popen(
            [str(binary), "-bench", str(ops)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def time(self, inp: dict[str, Any]) -> dict[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(inp, ensure_ascii=False).encode() + b"\n")
        self.proc.stdin.flush()
        answer = orjson.loads(self.proc.stdout.readline())
        if "inputError" in answer:
            raise RuntimeError(f"the oracle cannot read the case: {answer['inputError']}")
        return {"go-server": answer["server_ns"] / 1000, "go-stateless": answer["stateless_ns"] / 1000}

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def time_case(
    case: dict[str, Any], ops: int, trials: int, go: GoBench | None, catalog: list[dict[str, Any]]
) -> dict[str, float]:
    """Per-call microseconds of one case on every path, the lowest of ``trials`` measurements taken
    in turn with KubeVirt's Go (when there), so that both see the same moments of a shared machine."""
    inp = case["input"]
    vm, objects, kubevirt = inp["vm"], inp["objects"], inp.get("kubevirt")
    expander = api.Expander(objects, kubevirt)
    with_catalog = objects + catalog
    catalog_expander = api.Expander(with_catalog, kubevirt)
    index = ObjectIndex(objects)
    warm_index = ObjectIndex(stamped(o, n) for n, o in enumerate(objects))
    body = orjson.dumps(vm)
    text = body.decode()

    def api_ignore() -> Any:
        return api.expand(vm, objects, kubevirt, field_validation="Ignore")

    def api_strict() -> Any:
        return api.expand(vm, objects, kubevirt)

    def api_expander() -> Any:
        return expander.expand(vm, field_validation="Ignore")

    def api_fresh() -> bytes:
        return orjson.dumps(api.expand(orjson.loads(body), objects, kubevirt, field_validation="Ignore").vm)

    def expander_fresh() -> bytes:
        return orjson.dumps(expander.expand(orjson.loads(body), field_validation="Ignore").vm)

    def api_json() -> bytes:
        return api.expand_json(body, objects, kubevirt, field_validation="Ignore")

    def expander_json() -> bytes:
        return expander.expand_json(body, field_validation="Ignore")

    def api_catalog() -> Any:
        return api.expand(vm, with_catalog, kubevirt, field_validation="Ignore")

    def expander_catalog() -> Any:
        return catalog_expander.expand(vm, field_validation="Ignore")

    def render() -> Any:
        return expand(vm, warm_index, kubevirt=kubevirt)

    def cold() -> Any:
        clear_spec_cache()
        return expand(vm, index, kubevirt=kubevirt)

    def json_path() -> bytes:
        return orjson.dumps(expand(orjson.loads(body), warm_index, kubevirt=kubevirt).vm)

    def baseline() -> bytes:
        return orjson.dumps(orjson.loads(body))

    def stdlib_baseline() -> str:
        return json.dumps(json.loads(text), separators=(",", ":"))

    paths: tuple[tuple[str, Callable[[], Any], int], ...] = (
        ("api-ignore", api_ignore, ops),
        ("api-strict", api_strict, ops),
        ("api-expander", api_expander, ops),
        ("api-fresh", api_fresh, ops),
        ("expander-fresh", expander_fresh, ops),
        ("api-json", api_json, ops),
        ("expander-json", expander_json, ops),
        # Each call checks every catalog object: fewer calls, so that the row takes seconds, not minutes.
        ("api-ignore+catalog", api_catalog, max(1, ops // 8) if catalog else ops),
        ("expander+catalog", expander_catalog, ops),
        ("render", render, ops),
        ("json-in/json-out", json_path, ops),
        ("expand-cold", cold, max(1, ops // 4)),
        ("orjson", baseline, ops),
        ("stdlib-json", stdlib_baseline, ops),
    )
    best: dict[str, float] = {}
    for _ in range(trials):
        measured = {name: per_call_us(fn, n) for name, fn, n in paths}
        if go is not None:
            measured.update(go.time(inp))
        for name, value in measured.items():
            best[name] = min(value, best.get(name, value))
    return best


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


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "load average unknown"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--limit", type=int, default=27, help="cases to run, spread over the corpus (0 = all)"
    )
    parser.add_argument("--ops", type=int, default=200, help="calls per timed round, for Python and Go alike")
    parser.add_argument("--trials", type=int, default=3, help="measurements per case, the lowest kept")
    parser.add_argument(
        "--no-go", action="store_true", help="leave KubeVirt's Go out even when the oracle is here"
    )
    parser.add_argument("--repeat", type=int, default=7, help="rounds per step with --phases")
    parser.add_argument(
        "--catalog",
        type=int,
        default=150,
        help="instancetypes and preferences added beside each case's objects in the +catalog rows",
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the warm Python API path")
    parser.add_argument("--phases", action="store_true", help="split the warm JSON path by step")
    args = parser.parse_args()

    cases = load_cases(args.limit or None)
    catalog = generated_objects(args.catalog)
    binary = None if args.no_go else find_oracle()
    go = GoBench(binary, args.ops) if binary is not None else None
    print(f"{len(cases)} cases; {_load()} at the start")
    results: dict[str, list[float]] = {k: [] for k in ROWS}
    phases: dict[str, list[float]] = {name: [] for name in PHASES}
    try:
        for case in cases:
            for name, value in time_case(case, args.ops, args.trials, go, catalog).items():
                results[name].append(value)
            if args.phases:
                inp = case["input"]
                warm_index = ObjectIndex(stamped(o, n) for n, o in enumerate(inp["objects"]))
                for name, value in phase_split(
                    orjson.dumps(inp["vm"]), warm_index, inp.get("kubevirt"), args.repeat
                ).items():
                    phases[name].append(value)
    finally:
        if go is not None:
            go.close()

    print(f"{_load()} at the end")
    print("per-case medians, microseconds: geometric mean, median, p99")
    for name in ROWS:
        values = sorted(results[name])
        if not values:
            continue
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(
            f"  {name:18s} geomean {statistics.geometric_mean(values):8.1f}"
            f"   median {statistics.median(values):8.1f}   p99 {p99:8.1f}"
        )

    def geo(name: str) -> float:
        return statistics.geometric_mean(results[name])

    print("ratios of geometric means, both measured in this run on the same cases")
    pairs = [
        (
            "api-fresh",
            "json-in/json-out",
            "the Python API on a VM decoded afresh over the server's render path",
        ),
        ("expander-fresh", "json-in/json-out", "the same through an Expander"),
        ("api-json", "json-in/json-out", "expand_json (text in, text out) over the server's render path"),
        ("expander-json", "json-in/json-out", "the same through an Expander"),
        ("api-fresh", "api-ignore", "a VM decoded afresh against the same dict again"),
        ("api-strict", "api-ignore", "Strict's cost over Ignore"),
        ("api-expander", "api-ignore", "an Expander made once against expand() per call"),
        ("api-ignore+catalog", "api-ignore", f"{args.catalog} more objects passed on every call"),
        ("expander+catalog", "api-expander", f"{args.catalog} more objects in an Expander"),
        ("json-in/json-out", "orjson", "JSON in and out over a bare orjson round trip"),
        ("json-in/json-out", "stdlib-json", "over the standard library's json"),
        ("expand-cold", "render", "decoding the objects every time"),
    ]
    if go is not None:
        pairs[:0] = [
            ("api-ignore", "go-server", "Python API (Ignore) against KubeVirt's Go"),
            ("api-expander", "go-server", "Python API (an Expander, Ignore) against KubeVirt's Go"),
            ("api-strict", "go-server", "Python API (Strict) against KubeVirt's Go"),
            ("json-in/json-out", "go-server", "JSON in and out, both (the server's render path)"),
            ("api-fresh", "go-server", "Python API on a VM decoded afresh, JSON in and out, both"),
            ("api-json", "go-server", "expand_json, JSON in and out, both"),
            ("expand-cold", "go-stateless", "objects decoded every time, both"),
        ]
    for top, bottom, what in pairs:
        print(f"  {top} / {bottom}: {geo(top) / geo(bottom):.2f}x  ({what})")
    if go is None:
        reason = "--no-go" if args.no_go else "no expand-oracle binary (../shared/oracle builds it)"
        print(
            f"KubeVirt's Go was not timed in this run ({reason}). Reference from elsewhere, not measured "
            f"here and not comparable with the figures above: KubeVirt's Go code took "
            f"{GO_REFERENCE['json-in/json-out']} us for json-in/json-out "
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
        prepared = [(c["input"]["vm"], c["input"]["objects"], c["input"].get("kubevirt")) for c in cases]
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(50):
            for vm, objects, kubevirt in prepared:
                api.expand(vm, objects, kubevirt, field_validation="Ignore")
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
