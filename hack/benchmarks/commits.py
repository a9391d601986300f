#!/usr/bin/env python3
"""Warm throughput and latency of ``kubevirt-expand serve`` at two commits, measured in one run.

Usage: .venv/bin/python -m hack.benchmarks.commits BASE [HEAD] [--duration SECONDS] [--rounds N]
                                              [--connections N] [--client auto|wrk|python]
                                              [--objects N] [--skip-cluster]

Each commit is exported with ``git archive`` (the repository, its worktrees and its index are left
alone) into a temporary folder, and its own server code is run from there: ``python -m apiserver.cli
serve`` with the current directory and PYTHONPATH set to that export, with the project's .venv Python
(its dependencies; the editable install of this repository comes after PYTHONPATH on the import path,
and the script checks before measuring that the export's ``apiserver`` is the one imported). Committed
code only: uncommitted changes of the working tree are in neither export.

Everything else is the same for both commits and comes from this working tree, through hack/benchmarks/server.py:
the TLS certificate, the served objects (examples/), the request body, the load generator, and the fake
Kubernetes API of tests/fakekube (run in this process). The targets, as hack/benchmarks/server.py runs them:
  * folder source (examples/), no authentication: GET expand-spec and PUT expand-vm-spec;
  * cluster source against the fake API with --vm-cache, every request authenticated with a bearer
    token (TokenReview and SubjectAccessReview answered by the fake, then cached by the server), the
    fake holding the examples and N generated instancetypes and preferences: GET and PUT.
Both commits' servers of a source run side by side; after a warm-up of each, the measured runs of a
target alternate before, after, before, after, ... and the median run by requests per second counts
(its p50 and p99 are that run's). Beside them, the server's CPU time per request (user + system, from
/proc/PID/stat around each run; the median of the runs): on a small machine the load generator shares
the cores and often bounds requests/s, while CPU per request still shows what the server spends. The
machine's load average is printed at the start and the end:
figures from a loaded machine compare only with each other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack.benchmarks import server as bench

HACK = Path(__file__).resolve().parents[1]
ROOT = HACK.parent


LoadRunner = Callable[[str, Path | None, int, float, str], Coroutine[Any, Any, bench.Load]]
ENDPOINTS = (("GET expand-spec", "GET", bench.GET_PATH), ("PUT expand-vm-spec", "PUT", bench.PUT_PATH))


# --- the two commits ------------------------------------------------------------------------------


@dataclass
class Commit:
    role: str  # "before" or "after"
    rev: str  # as given
    sha: str
    subject: str
    tree: Path  # the exported files

    @property
    def label(self) -> str:
        return f"{self.role} {self.sha[:7]}"

    def env(self) -> dict[str, str]:
        """This environment with the export first on the import path."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
        env["PYTHONPATH"] = str(self.tree)
        return env


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def resolve(rev: str) -> tuple[str, str]:
    """(full commit id, subject) of ``rev``, or SystemExit naming it."""
    try:
        sha = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"hack.benchmarks.commits: {rev!r} is not a commit of {ROOT.name}") from None
    return sha, git("log", "-1", "--format=%s", sha)


def export(sha: str, where: Path) -> None:
    """The commit's files (``git archive``) extracted into ``where``."""
    where.mkdir(parents=True)
    archive = where.with_suffix(".tar")
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", sha], check=True, stdout=out)
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    archive.unlink()


def check_imports(commit: Commit) -> None:
    """The export's apiserver package is the one its server will import (not this repository's)."""
    code = "import apiserver, apiserver.cli; print(apiserver.__file__); print(apiserver.cli.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=commit.tree,
        env=commit.env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for path in out:
        if not Path(path).resolve().is_relative_to(commit.tree.resolve()):
            raise SystemExit(
                f"hack.benchmarks.commits: {commit.label} imports {path}, not its export {commit.tree}"
            )


# --- measurements ---------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used (/proc/PID/stat, clock-tick resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    load: bench.Load
    cpu_us: float  # the server's CPU time per request answered in the run, microseconds


@dataclass
class Target:
    source: str
    endpoint: str
    runs: dict[str, list[Run]] = field(default_factory=dict)  # by commit role

    def median(self, role: str) -> bench.Load:
        return bench.median([r.load for r in self.runs[role]])

    def cpu_us(self, role: str) -> float:
        """The median of the runs' CPU per request (a figure of its own, not the median run's)."""
        return statistics.median(r.cpu_us for r in self.runs[role])


def ratio(after: float, before: float) -> str:
    return f"{after / before:.3f}x" if before else "n/a"


class Runner:
    def __init__(self, args: argparse.Namespace, work: Path, commits: list[Commit]) -> None:
        self.args, self.work, self.commits = args, work, commits
        self.certs = bench.make_certs(work / "certs")
        client = args.client
        if client == "auto":
            client = "wrk" if shutil.which("wrk") else "python"
        self.client: str = client
        self.run_load: LoadRunner = bench.run_wrk if client == "wrk" else bench.run_python_load
        self.vm_body = work / "vm.json"
        self.vm_body.write_bytes(json.dumps(bench.example_vm()).encode())
        self.targets: list[Target] = []
        self.notes: list[str] = []

    @asynccontextmanager
    async def servers(
        self, source: str, extra: list[str], within: float
    ) -> AsyncIterator[list[bench.Server]]:
        """One server per commit, each running its export's code, started one after the other."""
        started: list[bench.Server] = []
        try:
            for commit in self.commits:
                port = bench.free_port()
                server = bench.Server(
                    bench.serve_argv(port, self.certs, *extra),
                    port,
                    f"{source} {commit.label}",
                    self.work / f"{source}-{commit.role}.log",
                    cwd=commit.tree,
                    env=commit.env(),
                )
                started.append(server)
                await server.start(self.certs, within=within)
            yield started
        finally:
            for server in started:
                await server.stop()

    async def measure(self, source: str, servers: list[bench.Server], token: str) -> None:
        """Check both commits answer 200 JSON, then load each endpoint, alternating the commits."""
        for endpoint, method, path in ENDPOINTS:
            body = self.vm_body.read_bytes() if method == "PUT" else None
            answers: list[bytes] = []
            for server in servers:
                status, headers, payload = await bench.fetch(
                    server, method, path, self.certs, body, token=token
                )
                if status != 200 or headers.get("Content-Type", "").split(";")[0] != "application/json":
                    raise RuntimeError(f"{server.name}: {method} {path} answered {status}: {payload[:500]!r}")
                answers.append(payload)
            if len(set(answers)) > 1:
                sizes = ", ".join(str(len(a)) for a in answers)
                self.notes.append(f"{source} {endpoint}: the commits' answers differ (bytes: {sizes})")
            body_file = self.vm_body if method == "PUT" else None
            args = self.args
            for server in servers:  # warm-up: connections, caches, first calls
                await self.run_load(
                    server.url + path, body_file, args.connections, min(1.0, args.duration / 2), token
                )
            target = Target(source, endpoint, {c.role: [] for c in self.commits})
            for round_ in range(1, args.rounds + 1):
                line = []
                for commit, server in zip(self.commits, servers, strict=True):
                    cpu = cpu_seconds(server.pid)
                    load = await self.run_load(
                        server.url + path, body_file, args.connections, args.duration, token
                    )
                    cpu_us = (cpu_seconds(server.pid) - cpu) / load.requests * 1e6 if load.requests else 0.0
                    target.runs[commit.role].append(Run(load, cpu_us))
                    line.append(
                        f"{commit.label} {load.rps:.0f} rps p99 {load.p99_ms:.2f} ms {cpu_us:.0f} us cpu/req"
                    )
                load1 = os.getloadavg()[0]
                print(
                    f"   {source} {endpoint} round {round_}: {'; '.join(line)} (load {load1:.2f})", flush=True
                )
            self.targets.append(target)

    async def folder(self) -> None:
        extra = ["--manifests", str(ROOT / "examples")]
        async with self.servers("folder", extra, within=60) as servers:
            await self.measure("folder", servers, token="")

    async def cluster(self) -> None:
        from tests.support.fakekube import FakeKube
        from tests.support.fakekube.reviews import Reviews, Rule
        from tests.support.fakekube.testing import kubeconfig

        fake = FakeKube(bookmark_interval=5.0)
        reviews = Reviews.install(fake)
        reviews.tokens[bench.TOKEN] = ("bench", ["system:authenticated"])
        reviews.rules.append(Rule(answer="allow"))
        for obj in bench.example_objects() + bench.generated_objects(self.args.objects):
            fake.create(obj)
        await fake.start()
        try:
            config = kubeconfig(fake, self.work / "fake.kubeconfig")
            async with self.servers(
                "cluster+vm-cache", [f"--kubeconfig={config}", "--vm-cache"], 300
            ) as servers:
                await self.measure("cluster+vm-cache", servers, token=bench.TOKEN)
        finally:
            await fake.stop()

    def report(self, load_start: tuple[float, float, float], load_end: tuple[float, float, float]) -> None:
        args = self.args
        before, after = self.commits
        print()
        for c in self.commits:
            print(f"{c.role:6} {c.sha[:12]} ({c.rev}): {c.subject}")
        print(
            f"load: {self.client}, {args.connections} keep-alive HTTPS connections, {args.duration:g}s per run,"
            f" {args.rounds} rounds alternating before/after, median run by rps; {os.cpu_count()} CPUs"
        )
        print(f"load average (1, 5, 15 min): start {fmt_load(load_start)}, end {fmt_load(load_end)}")
        head = f"{'source':17} {'endpoint':19} {'figure':7} {before.label:>15} {after.label:>15} {'after/before':>13}"
        print(head)
        print("-" * len(head))
        for t in self.targets:
            b, a = t.median(before.role), t.median(after.role)
            for name, x, y in (
                ("rps", b.rps, a.rps),
                ("p50 ms", b.p50_ms, a.p50_ms),
                ("p99 ms", b.p99_ms, a.p99_ms),
                ("cpu us", t.cpu_us(before.role), t.cpu_us(after.role)),
            ):
                digits = 2 if name.endswith(" ms") else 0
                print(
                    f"{t.source:17} {t.endpoint:19} {name:7} {x:15.{digits}f} {y:15.{digits}f} {ratio(y, x):>13}"
                )
        print()
        print(
            "cpu us: the server process's CPU time (user + system) per request answered, median of the runs;"
        )
        print("  it shows the server's cost even when the load generator, on the same cores, bounds rps.")
        print("every run, rps (in the order run):")
        for t in self.targets:
            for c in self.commits:
                runs = t.runs[c.role]
                errors = sum(r.load.errors for r in runs)
                print(
                    f"  {t.source} {t.endpoint} {c.label}: {' '.join(f'{r.load.rps:.0f}' for r in runs)}"
                    f" (cpu us/req {' '.join(f'{r.cpu_us:.0f}' for r in runs)})"
                    + (f" ({errors} errors)" if errors else "")
                )
        for note in self.notes:
            print(f"note: {note}")


def fmt_load(load: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


async def amain(args: argparse.Namespace, work: Path, commits: list[Commit]) -> None:
    load_start = os.getloadavg()
    print(f"== load average at start: {fmt_load(load_start)}", flush=True)
    for commit in commits:
        export(commit.sha, commit.tree)
        check_imports(commit)
        print(f"== {commit.label} exported to {commit.tree} ({commit.subject})", flush=True)
    runner = Runner(args, work, commits)
    print(f"== folder source (examples/), load with {runner.client}", flush=True)
    await runner.folder()
    if not args.skip_cluster:
        print(f"== cluster source + --vm-cache against tests/fakekube (+{args.objects} objects)", flush=True)
        await runner.cluster()
    runner.report(load_start, os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hack/benchmarks/commits.py",
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Committed code only; see the module docstring for what is shared between the two runs.",
    )
    parser.add_argument("base", metavar="BASE", help="the commit measured first in each round ('before')")
    parser.add_argument(
        "head",
        metavar="HEAD",
        nargs="?",
        default="HEAD",
        help="the commit measured second in each round ('after'; default: HEAD, committed, without "
        "uncommitted changes); ratios are after/before",
    )
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measured run (default: 5)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="measured runs per commit and target, alternating before/after; the median counts (default: 3)",
    )
    parser.add_argument(
        "--connections", type=int, default=64, help="keep-alive HTTPS connections of the load (default: 64)"
    )
    parser.add_argument(
        "--client",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="load generator: wrk, hack/benchmarks/server.py's aiohttp client processes, or wrk when installed (default)",
    )
    parser.add_argument(
        "--objects",
        type=int,
        default=10_000,
        help="generated instancetypes and preferences the fake API holds beside examples/ for the "
        "cluster target, as hack/benchmarks/server.py runs it (default: 10000)",
    )
    parser.add_argument(
        "--skip-cluster",
        action="store_true",
        help="only the folder source (no fake API, no authentication)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.connections <= 1024 or not 0 < args.duration <= 120 or not 1 <= args.rounds <= 15:
        parser.error("--connections must be 1..1024, --duration 0..120 seconds and --rounds 1..15")
    if args.objects < 0:
        parser.error("--objects must be 0 or more")
    if args.client == "wrk" and not shutil.which("wrk"):
        parser.error("wrk is not installed (apt-get install wrk), use --client python")
    revs = [(role, rev, *resolve(rev)) for role, rev in (("before", args.base), ("after", args.head))]
    with tempfile.TemporaryDirectory(prefix="kubevirt-expand-bench-commits-") as tmp:
        work = Path(tmp)
        commits = [Commit(role, rev, sha, subject, work / role) for role, rev, sha, subject in revs]
        try:
            asyncio.run(amain(args, work, commits))
        except KeyboardInterrupt:
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
