"""What each fast path and memo of the request path buys: the server with one of them switched off, beside
the server with all of them on, in one run.

usage: .venv/bin/python -m hack.benchmarks.switches [NAME ...] [--rounds N] [--duration S] [--skip-cluster]

Each switch turns one fast path or memo off in a server process, without a flag of the product's: the
benchmark starts the server with ``hack/benchmarks/hook`` on its PYTHONPATH, whose sitecustomize applies the
switches named in ``KUBEVIRT_EXPAND_BENCH_WITHOUT`` (monkeypatches: a memo becomes a dict that keeps nothing,
so every look-up computes again; a fast path is not taken). Every server runs this working tree's code.
The targets are hack/benchmarks/commits.py's (its Runner, with variants instead of commits): warm GET
expand-spec and PUT expand-vm-spec on the folder source without authentication, and with ``--vm-cache``
and authentication against the fake API (the memos of authentication only matter there). Rounds go
through every variant in turn; what counts is the server's CPU time per request (user + system, from
/proc, the median of the rounds), which does not depend on how fast the load generator on the same
cores is, beside requests per second.

The figures go in the docstring of each fast path and memo (issue 25: each keeps its place only with a
figure measured here).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hack.benchmarks import commits

ROOT = Path(__file__).resolve().parents[2]
HOOK = Path(__file__).resolve().parent / "hook"
ENV = "KUBEVIRT_EXPAND_BENCH_WITHOUT"


class NeverKeeps(dict):  # type: ignore[type-arg]
    """A memo that remembers nothing: every look-up misses and computes again."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return default


def _forget(module: str, *names: str) -> Callable[[], None]:
    def off() -> None:
        import importlib

        target = importlib.import_module(module)
        for name in names:
            setattr(target, name, NeverKeeps())

    return off


def _no_fast_routes() -> None:
    from apiserver.http.pipeline import Pipeline

    install = Pipeline.install

    def routed(self: Pipeline, runner: Any, *, dispatch: bool = True) -> None:
        install(self, runner, dispatch=False)

    Pipeline.install = routed  # type: ignore[method-assign]


def _no_answer_now() -> None:
    from apiserver.http import pipeline

    pipeline.admits_now = lambda filters: None  # type: ignore[assignment]


def _no_route_memo() -> None:
    from apiserver.http.routing import RouteTable

    init = RouteTable.__init__

    def forgetting(self: RouteTable, routes: Iterable[Any]) -> None:
        init(self, routes)
        self._matched = NeverKeeps()

    RouteTable.__init__ = forgetting  # type: ignore[method-assign]


def _no_remembered_admissions() -> None:
    from apiserver.auth.gate import AuthGate

    init = AuthGate.__init__

    def forgetting(self: AuthGate, *args: Any, **kw: Any) -> None:
        init(self, *args, **kw)
        self._admitted = NeverKeeps()
        self._by_credentials = NeverKeeps()

    AuthGate.__init__ = forgetting  # type: ignore[method-assign]


def _no_identity_memo() -> None:
    from apiserver.auth.gate import AuthGate

    init = AuthGate.__init__

    def forgetting(self: AuthGate, *args: Any, **kw: Any) -> None:
        init(self, *args, **kw)
        self._identity_memo = NeverKeeps()

    AuthGate.__init__ = forgetting  # type: ignore[method-assign]


def _no_spec_memo() -> None:
    from apiserver.render.instancetype import find

    class Computes:
        def get(self, obj: Any, compute: Callable[[], Any], **kw: Any) -> Any:
            return compute()

        def clear(self) -> None:
            pass

    find._SPECS = Computes()  # type: ignore[assignment]
    find._REFS = NeverKeeps()


def _no_response_cache() -> None:
    from apiserver.http.endpoints.respcache import ResponseCache

    ResponseCache.get = lambda self, key, source: None  # type: ignore[assignment,method-assign]


@dataclass(frozen=True)
class Switch:
    name: str
    what: str
    off: Callable[[], None]
    authenticated: bool = False  # only the authenticated target exercises it


SWITCHES = {
    s.name: s
    for s in (
        Switch("response-cache", "the response cache (http/endpoints/respcache.py)", _no_response_cache),
        Switch("fast-routes", "expand routes matched ahead of aiohttp's router (http/routing.py)", _no_fast_routes),
        Switch("answer-now", "the synchronous answer, filters not run as coroutines (http/pipeline.py)", _no_answer_now),
        Switch("route-memo", "RouteTable._matched: request target -> route", _no_route_memo),
        Switch("negotiation-memo", "media._NEGOTIATED: Accept header -> media type", _forget("apiserver.http.media", "_NEGOTIATED")),
        Switch("peekable-memo", "gather._PEEKABLE: source class -> Peekable", _forget("apiserver.sources.gather", "_PEEKABLE")),
        Switch("open-scope-memo", "scoping._PATH_SCOPES: path -> scope", _forget("apiserver.http.filters.scoping", "_PATH_SCOPES")),
        Switch("spec-memo", "find._SPECS and _REFS: objects -> decoded specs, refs", _no_spec_memo),
        Switch("remembered-admissions", "AuthGate._admitted/_by_credentials: request -> admission", _no_remembered_admissions, True),
        Switch("identity-headers-memo", "AuthGate._identity_memo: header names -> identity headers", _no_identity_memo, True),
        Switch("path-memos", "gate._CLASSES and _ATTRIBUTES: path -> class, attributes", _forget("apiserver.auth.gate", "_CLASSES", "_ATTRIBUTES"), True),
        Switch("certificate-memos", "gate._CERTIFICATES, certs._CHECKS: DER -> certificate, check", _forget("apiserver.auth.gate", "_CERTIFICATES"), True),
        Switch("certificate-check-memo", "certs._CHECKS: (certificate, bundle) -> verdict", _forget("apiserver.auth.certs", "_CHECKS"), True),
        Switch("stripped-headers-memo", "authentication._STRIPPED: headers -> headers without identity", _forget("apiserver.http.filters.authentication", "_STRIPPED"), True),
        Switch("interned-reviews", "access._INTERNED: reads -> Reviews", _forget("apiserver.sources.access", "_INTERNED"), True),
    )
}  # fmt: skip


def turn_off(names: Iterable[str]) -> None:
    """Called by hook/sitecustomize.py in the server process."""
    for name in names:
        if name:
            SWITCHES[name].off()


@dataclass
class Variant:
    """A server to measure (what hack.benchmarks.commits.Runner takes for a commit)."""

    role: str
    label: str
    tree: Path
    without: tuple[str, ...]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", ENV)}
        env["PYTHONPATH"] = os.pathsep.join([str(HOOK), str(self.tree)])
        env[ENV] = ",".join(self.without)
        return env


def report(runner: commits.Runner, variants: list[Variant]) -> None:
    base = variants[0]
    print()
    print(f"{'target':38} {'switched off':24} {'cpu us/req':>10} {'x all on':>9} {'rps':>7} {'x all on':>9}")
    for target in runner.targets:
        base_cpu = target.cpu_us(base.role)
        base_rps = target.median(base.role).rps
        for v in variants:
            if v.role not in target.runs:
                continue
            cpu = target.cpu_us(v.role)
            rps = target.median(v.role).rps
            spread = [r.cpu_us for r in target.runs[v.role]]
            print(
                f"{target.source + ' ' + target.endpoint:38} {v.label:24} {cpu:10.0f} "
                f"{cpu / base_cpu if base_cpu else 0:9.3f} {rps:7.0f} {rps / base_rps if base_rps else 0:9.3f}"
                f"   (cpu runs {min(spread):.0f}-{max(spread):.0f})"
            )
    print()
    print("cpu us/req: the server's CPU time per request, median of the rounds; x all on: against the server")
    print("with every fast path and memo on, in the same rounds. Above 1: what the switch's subject saves.")


async def amain(args: argparse.Namespace, work: Path) -> None:
    chosen = args.names or list(SWITCHES)
    print(f"== load average at start: {commits.fmt_load(os.getloadavg())}", flush=True)
    plain = [n for n in chosen if not SWITCHES[n].authenticated]
    variants = [Variant("all-on", "(none: all on)", ROOT, ())]
    variants += [Variant(n, n, ROOT, (n,)) for n in plain]
    runner = commits.Runner(args, work, variants)  # type: ignore[arg-type]
    print("== folder source (examples/), no authentication", flush=True)
    await runner.folder()
    if not args.skip_cluster:
        variants = [Variant("all-on", "(none: all on)", ROOT, ())]
        variants += [Variant(n, n, ROOT, (n,)) for n in chosen]
        cluster = commits.Runner(args, work / "cluster", variants)  # type: ignore[arg-type]
        print(
            f"== cluster source + --vm-cache, authenticated, against tests/fakekube (+{args.objects})",
            flush=True,
        )
        await cluster.cluster()
        runner.targets += cluster.targets
        variants_all = variants
    else:
        variants_all = variants
    report(runner, variants_all)
    print(f"load average at the end: {commits.fmt_load(os.getloadavg())}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.benchmarks.switches",
        description=(__doc__ or "").split("\n\n")[0],
        epilog="switches: " + "; ".join(f"{s.name} ({s.what})" for s in SWITCHES.values()),
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="the switches to measure (default: all)")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per measured run (default: 3)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds through every variant (default: 5)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (default: 16)")
    parser.add_argument("--client", choices=["auto", "wrk", "python"], default="auto", help="load generator")
    parser.add_argument(
        "--objects", type=int, default=1000, help="generated objects the fake API holds (default: 1000)"
    )
    parser.add_argument("--skip-cluster", action="store_true", help="only the folder source")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in SWITCHES]
    if unknown:
        parser.error(f"no such switch: {', '.join(unknown)} (known: {', '.join(SWITCHES)})")
    with tempfile.TemporaryDirectory(prefix="kubevirt-expand-switches-") as tmp:
        work = Path(tmp)
        (work / "cluster").mkdir()
        asyncio.run(amain(args, work))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
