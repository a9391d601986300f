#!/usr/bin/env python3
"""Benchmark ``kubevirt-expand expand`` as a CI job runs it: start-up on one file, and ``-o yaml`` against
``-o jsonl`` on folders of 1,000 and 5,000 VMs, each figure a ratio to a baseline timed in the same run.

    .venv/bin/python -m hack.benchmarks.cli [--rounds N] [--sizes 1000,5000]
                                            [--baseline-tree DIR | --baseline-rev REV]

- start-up: ``expand -f vm.yaml`` (one VM and its instancetype and preference) against ``python -c pass``
  (the interpreter alone), wall and CPU seconds, beside the import of the dependencies the command uses
  (PyYAML, orjson: the floor this code cannot go under; the base install's pydantic is imported only for
  instancetypes of older apiVersions) and of pydantic's ``BaseModel`` alone; with
  ``--baseline-tree DIR`` (another checkout) or ``--baseline-rev REV`` (a commit of this repository,
  exported with ``git archive`` into a temporary folder, e.g. ``main`` or ``HEAD~3``) its command too,
  as a ratio. Children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` dropped) after a
  warm-up run, as an installed package runs (pip compiles the bytecode when it installs). With
  ``--instructions``, each start-up command also runs once under valgrind's callgrind, which counts the
  instructions it executes: the same count whatever else the machine runs (seconds on a shared machine
  are not).
- output: ``expand -f DIR`` with ``-o yaml`` and with ``-o jsonl`` on the same folder (one VM per file,
  each with its own instancetype and preference beside it), the ratio yaml/jsonl; the command with
  PyYAML's pure-Python emitter swapped back in (``to_yaml_pure``, in a child) gives the ratio before
  the fast writer.

Rounds alternate the commands (baseline, candidate, baseline, ...) and the median of each is printed, so a
machine busy with something else slows both alike; beside it the fastest round (``min``), the nearest a
shared machine comes to a quiet one.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

VM = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm-{n}
spec:
  runStrategy: Always
  instancetype:
    kind: VirtualMachineInstancetype
    name: type-{n}
  preference:
    kind: VirtualMachinePreference
    name: pref-{n}
  template:
    spec:
      domain:
        devices:
          interfaces:
          - name: default
            masquerade: {{}}
      networks:
      - name: default
        pod: {{}}
      volumes:
      - name: cloudinit
        cloudInitNoCloud:
          userData: |
            #cloud-config
            password: fedora-{n}
            chpasswd: {{ expire: False }}
---
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineInstancetype
metadata:
  name: type-{n}
spec:
  cpu:
    guest: {cpus}
  memory:
    guest: 2Gi
---
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachinePreference
metadata:
  name: pref-{n}
spec:
  devices:
    preferredDiskBus: virtio
    preferredInterfaceModel: virtio
"""

# The command with PyYAML's pure-Python emitter, as before the fast writer (same bytes: see
# tests/cli/test_yaml_output.py).
PURE = (
    "import sys, apiserver.cli.output as o; o.to_yaml = o.to_yaml_pure; "
    "from apiserver.cli import main; sys.exit(main())"
)


# What the command's dependencies cost to import, with nothing of this project's; and pydantic's models,
# which the command imports only for instancetypes of older apiVersions.
DEPENDENCIES = "import orjson, yaml"
PYDANTIC = "from pydantic import BaseModel, Field, ConfigDict, model_validator"


def export(rev: str, into: Path) -> Path:
    """The tree of commit ``rev`` of this repository, written into ``into`` (``git archive``)."""
    into.mkdir()
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """Instructions one run executes, as callgrind counts them."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    proc = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd="/",
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode not in (0, 1) or found is None:
        raise SystemExit(f"{' '.join(argv)} under callgrind exited {proc.returncode}: {proc.stderr[-2000:]}")
    return int(found.group(1))


def count_instructions(
    runs: dict[str, tuple[list[str], dict[str, str]]], pair: tuple[str, str] | None
) -> None:
    counts = {name: instructions(argv, env) for name, (argv, env) in runs.items()}
    print("start-up on one file, instructions (callgrind):")
    first = next(iter(counts))
    for name, count in counts.items():
        print(f"  {name:<28} {count / 1e6:8.0f} M  ({count / counts[first]:5.2f}x {first})")
    if pair is not None:
        print(f"  {pair[0]} / {pair[1]}: {counts[pair[0]] / counts[pair[1]]:5.2f}x")


def folder(root: Path, count: int) -> Path:
    vms = root / f"vms-{count}"
    vms.mkdir()
    for n in range(count):
        (vms / f"vm-{n:05}.yaml").write_text(VM.format(n=n, cpus=1 + n % 4))
    return vms


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run; stdout discarded, exit 0 or 1 expected. Run
    from the filesystem root: ``python -m`` puts the working directory first on the import path, which would
    shadow the tree PYTHONPATH names."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/", check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def compare(
    label: str,
    runs: dict[str, tuple[list[str], dict[str, str]]],
    rounds: int,
    base: str,
    pair: tuple[str, str] | None = None,
) -> None:
    """Medians of each command, each as a ratio to ``base``; ``pair`` (candidate, baseline) adds their ratio."""
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (argv, env) in runs.items():
            wall, cpu = timed(argv, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"{label}:")
    base_wall, base_cpu = statistics.median(walls[base]), statistics.median(cpus[base])
    for name in runs:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(
            f"  {name:<28} wall {wall:7.3f} s  cpu {cpu:7.3f} s"
            f"  ({wall / base_wall:5.2f}x / {cpu / base_cpu:5.2f}x {base})"
            f"  min wall {min(walls[name]):7.3f} s"
        )
    if pair is not None:
        new, old = pair
        wall_ratio = statistics.median(walls[new]) / statistics.median(walls[old])
        cpu_ratio = statistics.median(cpus[new]) / statistics.median(cpus[old])
        min_ratio = min(walls[new]) / min(walls[old])
        print(f"  {new} / {old}: wall {wall_ratio:5.2f}x, cpu {cpu_ratio:5.2f}x, min wall {min_ratio:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1000,5000")
    parser.add_argument(
        "--instructions", action="store_true", help="count start-up instructions with valgrind (callgrind)"
    )
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline-tree", type=Path, help="another checkout to time the start-up of")
    baseline.add_argument("--baseline-rev", help="a commit of this repository to time the start-up of")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = {**base, "PYTHONPATH": str(ROOT)}
    python = sys.executable
    command = [python, "-m", "apiserver.cli", "expand"]
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "vm.yaml"
        one.write_text(VM.format(n=0, cpus=2))
        startup = {
            "python -c pass": ([python, "-c", "pass"], env),
            "import yaml, orjson": ([python, "-c", DEPENDENCIES], env),
            "import pydantic's BaseModel": ([python, "-c", PYDANTIC], env),
            "expand -f vm.yaml": ([*command, "-f", str(one), "--check"], env),
        }
        tree = args.baseline_tree.resolve() if args.baseline_tree else None
        if args.baseline_rev:
            tree = export(args.baseline_rev, Path(tmp) / "baseline")
        pair = None
        if tree is not None:
            label = f"{args.baseline_rev or 'baseline'} expand -f vm.yaml"
            startup[label] = ([*command, "-f", str(one), "--check"], {**base, "PYTHONPATH": str(tree)})
            pair = ("expand -f vm.yaml", label)
        for argv, child_env in startup.values():  # writes the bytecode caches
            timed(argv, child_env)
        compare("start-up on one file", startup, max(args.rounds, 5), "python -c pass", pair)
        if args.instructions:
            count_instructions(startup, pair)
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            vms = folder(Path(tmp), size)
            runs = {
                "-o jsonl": ([*command, "-f", str(vms), "-o", "jsonl"], env),
                "-o yaml": ([*command, "-f", str(vms), "-o", "yaml"], env),
                "-o yaml (PyYAML's emitter)": ([python, "-c", PURE, "expand", "-f", str(vms)], env),
            }
            compare(f"{size} VMs, one file each", runs, args.rounds, "-o jsonl")
            shutil.rmtree(vms)


if __name__ == "__main__":
    main()
