#!/usr/bin/env python3
"""Benchmark the body reader (apiserver/documents/reader.py) against baselines measured in the same run.

    .venv/bin/python -m hack.benchmarks.reader [--quick]

Small bodies (the PUT hot path, microseconds, median of many calls):
  json       read_documents on the example VM as compact JSON vs orjson.loads alone: the cost of the
             checks (nesting, duplicate keys, integers beyond 64 bits)
  json-dups  the same VM with a duplicate key (the exact pass runs)
  json-esc   a VM whose cloud-init holds JSON (escaped quotes before colons inside strings)
  json-indent  pretty-printed JSON (whitespace after quotes: the spaced-key check runs)
  yaml       read_documents on the example YAML vs PyYAML's C loader (yaml.load, CSafeLoader)

Bodies of 3 MiB (the body limit; seconds, best of 3) in the densest shapes, valid and broken at the end,
beside PyYAML's C loader on the same text and orjson.loads for the JSON ones, and an alias bomb.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

from apiserver.documents.reader import DocumentError, read_documents

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vm-fedora.yaml"
LIMIT = 3 * 1024 * 1024
HEAD = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: big\n"


def per_call_us(fn: Callable[[], Any], calls: int) -> float:
    samples = []
    for _ in range(7):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(samples)


def best_s(fn: Callable[[], Any], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        with contextlib.suppress(DocumentError, yaml.YAMLError, orjson.JSONDecodeError):
            fn()
        best = min(best, time.perf_counter() - started)
    return best


def small(calls: int) -> None:
    vm = yaml.safe_load(EXAMPLE.read_text())
    compact = orjson.dumps(vm)
    dup = compact.replace(b'"runStrategy":"Always"', b'"runStrategy":"Halted","runStrategy":"Always"')
    esc_vm = json.loads(json.dumps(vm))
    esc_vm["spec"]["template"]["spec"]["volumes"][1]["cloudInitNoCloud"]["userData"] = json.dumps(
        {"users": [{"name": "fedora", "groups": "wheel"}], "chpasswd": {"expire": False}}
    )
    escaped = orjson.dumps(esc_vm)
    indented = json.dumps(vm, indent=2).encode()
    text = EXAMPLE.read_bytes()
    print(f"small bodies ({len(compact)} bytes of JSON, {len(text)} of YAML), microseconds per call:")
    base = per_call_us(lambda: orjson.loads(compact), calls)
    for name, data in (
        ("json", compact),
        ("json-dups", dup),
        ("json-esc", escaped),
        ("json-indent", indented),
    ):
        got = per_call_us(lambda data=data: read_documents(data), calls)  # type: ignore[misc]
        print(f"  {name:12} {got:7.2f}   orjson.loads {base:5.2f}   x{got / base:.1f}   (+{got - base:.2f})")
    ours = per_call_us(lambda: read_documents(text), calls // 10)
    libyaml = per_call_us(lambda: yaml.load(text, Loader=yaml.CSafeLoader), calls // 10)
    print(f"  {'yaml':12} {ours:7.2f}   yaml CSafeLoader {libyaml:5.2f}   x{ours / libyaml:.2f}")


def shapes() -> dict[str, bytes]:
    head = HEAD + "  managedFields:\n  - fieldsV1:\n      f:x: ["
    flow = head + "1," * ((LIMIT - len(head) - 2) // 2 - 1) + "1]\n"
    block_head = HEAD + "  managedFields:\n  - fieldsV1:\n      f:x:\n"
    block = block_head + "      - 1\n" * ((LIMIT - len(block_head)) // 10)
    volumes = HEAD + "spec:\n  template:\n    spec:\n      domain: {devices: {}}\n      volumes:\n"
    entry = "      - name: v{0}\n        containerDisk:\n          image: img{0}\n"
    i = 0
    parts = [volumes]
    size = len(volumes)
    while size + len(entry.format(i)) <= LIMIT:
        parts.append(entry.format(i))
        size += len(entry.format(i))
        i += 1
    jhead = '{"metadata": {"managedFields": [{"fieldsV1": {"f:x": ['
    jflow = jhead + "1," * ((LIMIT - len(jhead) - 8) // 2 - 1) + "1]}}]}}"
    return {
        "yaml flow of 1-char scalars": flow.encode(),
        "yaml block sequence of ints": block.encode(),
        f"yaml VM with {i} volumes": "".join(parts).encode(),
        "json array of 1-char numbers": jflow.encode(),
    }


def large(rounds: int) -> None:
    print(f"3 MiB bodies ({LIMIT} bytes at most), seconds (best of {rounds}):")
    worst = 0.0
    for name, data in shapes().items():
        assert len(data) <= LIMIT, name
        ours = best_s(lambda data=data: read_documents(data), rounds)  # type: ignore[misc]
        broken = best_s(lambda data=data: read_documents(data[:-3] + b"\n[:\n"), rounds)  # type: ignore[misc]
        if name.startswith("json"):
            other, label = best_s(lambda data=data: orjson.loads(data), rounds), "orjson.loads"  # type: ignore[misc]
        else:
            other = best_s(lambda data=data: yaml.load(data, Loader=yaml.CSafeLoader), 1)  # type: ignore[misc]
            label = "yaml CSafeLoader"
        worst = max(worst, ours, broken)
        print(f"  {name:32} {ours:6.3f}  broken at the end {broken:6.3f}   {label} {other:6.3f}")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    print(
        f"  {'alias bomb (' + str(len(bomb)) + ' bytes) refused':32} {best_s(lambda: read_documents(bomb), rounds):6.3f}"
    )
    print(f"worst 3 MiB parse: {worst:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds (a smoke run)")
    args = parser.parse_args()
    small(200 if args.quick else 5000)
    large(1 if args.quick else 3)


if __name__ == "__main__":
    main()
