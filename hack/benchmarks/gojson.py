#!/usr/bin/env python3
"""Micro-benchmark of the Go JSON codec: median microseconds per call on a typical corpus VM.

    .venv/bin/python -m hack.benchmarks.gojson [case-file]

Uses the expected output of a ``common-*`` vm-b (app-vm) case (disks, cdrom, interfaces, dataVolumeTemplates)
unless a case file is given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apiserver.render.golang import gojson

REPO = Path(__file__).resolve().parents[2]


CASES = REPO.parent / "shared" / "conformance" / "cases"


def _pick_case() -> Path:
    for path in sorted(CASES.glob("common-*.json")):
        case = json.loads(path.read_text())
        if "vm-b" in case["name"] and "expanded" in case["expected"]:
            return path
    raise SystemExit("no common app-vm case found")


def _median_us(fn: Callable[[], Any], rounds: int = 15, number: int = 200) -> float:
    fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog="Without CASE_FILE, a common-* vm-b case of ../shared/conformance/cases.",
    )
    parser.add_argument(
        "case_file", nargs="?", type=Path, metavar="CASE_FILE", help="a conformance case (JSON)"
    )
    args = parser.parse_args()
    path = args.case_file if args.case_file is not None else _pick_case()
    case = json.loads(path.read_text())
    vm_in = case["input"]["vm"]
    vm_out = case["expected"]["expanded"]
    decoded = gojson.decode(vm_out, "VirtualMachine")
    print(f"case: {path.name} ({case['name']}), expanded VM {len(json.dumps(vm_out))} bytes of JSON")
    figures = {
        "decode(expanded)": lambda: gojson.decode(vm_out, "VirtualMachine"),
        "decode(expanded, exact_names)": lambda: gojson.decode(vm_out, "VirtualMachine", exact_names=True),
        "encode(decoded)": lambda: gojson.encode(decoded, "VirtualMachine"),
        "roundtrip(expanded)": lambda: gojson.roundtrip(vm_out, "VirtualMachine"),
        "roundtrip(input vm)": lambda: gojson.roundtrip(vm_in, "VirtualMachine"),
        "check(input vm)": lambda: gojson.check(vm_in, "VirtualMachine"),
        "json.loads+dumps (reference)": lambda: json.loads(json.dumps(vm_out)),
    }
    for label, fn in figures.items():
        print(f"{label:32s} {_median_us(fn):8.1f} µs")


if __name__ == "__main__":
    main()
