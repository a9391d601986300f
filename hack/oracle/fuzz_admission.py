#!/usr/bin/env python3
"""Differential test of ``validate=true`` against KubeVirt's VM webhook, from KubeVirt's checks outward.

Independent of hack/oracle/diff_admission.py (which mutates the golden cases): the inputs come from
hack/oracle/admission/ (a variant per break, near miss and boundary of each check of the webhook's
CREATE path, applied to four base VMs written for it, with the gates each check reads on and off), from
KubeVirt's OpenAPI schema (wrong types, enums, null, missing required members, unknown members at every
depth), and from random combinations of several variants (cause order, the ten-cause cut). Each input
goes to KubeVirt (the ``expand-admit`` oracle, ../shared/oracle/README.md) and to ``validate=True``;
every difference in verdict, causes (order included), message or warnings is reported.

    .venv/bin/python -m hack.oracle.fuzz_admission [--oracle PATH] [--only checks,schema,combos] [--combos N] [--area A]
                                            [--seed S] [--limit N] [--out FILE] [--families] [--table FILE]

Exits 0 when nothing differs, 1 when something does, 2 without the oracle (it is built on a developer
machine, never in CI). ``--table docs/reference/admission-rules.md`` also writes the rules table: every check of
:data:`CHECKS`, its KubeVirt function, gate and cause, the function here that gives the cause, and a break
and a near-miss input from this run (what KubeVirt answered for each).
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiserver import ExpandError, expand
from apiserver.render.admission import PREFIX, AdmissionDenied
from hack.oracle import admission as checks

REPO = Path(__file__).resolve().parents[2]


DEFAULT_ORACLE = os.environ.get("KUBEVIRT_EXPAND_ADMIT_ORACLE") or str(
    REPO.parent / "oracle" / "bin" / "expand-admit"
)
JSON = dict[str, Any]


# --- the two sides --------------------------------------------------------------------------------------


class Oracle:
    """One long-lived ``expand-admit`` process (it answers each line as it reads it)."""

    def __init__(self, path: str) -> None:
        self.proc = subprocess.Popen(
            [path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1 << 20,
        )

    def ask(self, inputs: list[JSON]) -> list[JSON]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        stdin = self.proc.stdin

        def feed() -> None:
            for inp in inputs:
                stdin.write(json.dumps(inp, ensure_ascii=False) + "\n")
            stdin.flush()

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        out = [json.loads(self.proc.stdout.readline()) for _ in inputs]
        writer.join()
        return out

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


_CONFIG_NOTE = "the KubeVirt configuration is invalid ("


def ours(inp: JSON) -> JSON:
    """``validate=True``'s verdict in the oracle's terms (plus what kind of refusal it was)."""
    try:
        result = expand(
            inp["vm"], inp.get("objects", []), inp.get("kubevirt"), validate=True, field_validation="Ignore"
        )
    except AdmissionDenied as err:
        if err.verdict.panic:
            return {"allowed": False, "panic": err.verdict.panic}
        if err.verdict.error:
            return {"allowed": False, "error": err.verdict.error, "stage": err.verdict.stage}
        causes = [c.to_dict() for c in err.verdict.causes]
        return {"allowed": False, "causes": causes, "message": err.message, "stage": err.verdict.stage}
    except ExpandError as err:
        return {"allowed": False, "renderError": err.message, "code": err.code}
    except Exception as err:  # a traceback is a defect whatever KubeVirt says
        return {"crash": f"{type(err).__name__}: {err}"}
    # The note naming a KubeVirt configuration validateConfig refuses is ours, beside the verdict
    # (docs/rendering.md); KubeVirt's webhook gives no such warning.
    return {"allowed": True, "warnings": [w for w in result.warnings if not w.startswith(_CONFIG_NOTE)]}


def judge(mine: JSON, theirs: JSON) -> str:
    """'' when the verdicts agree, else what differs. Schema causes are compared as multisets (go-openapi
    visits members in Go's random map order); everything else in order."""
    if "crash" in mine:
        return "crash"
    if "inputError" in theirs:
        return ""
    if "panic" in theirs:
        return "" if mine.get("allowed") is False else "kubevirt panics, we admit"
    if theirs.get("allowed"):
        if mine.get("allowed"):
            return "" if mine.get("warnings", []) == (theirs.get("warnings") or []) else "warnings"
        if "renderError" in mine:
            # KubeVirt admits a VM that cannot be rendered (a missing instancetype or preference, a
            # matcher without a name, a kind other than VirtualMachine, a VM being deleted, which the
            # webhook admits before it applies the instancetype): the rendering error stands.
            expected = (
                "not found",
                "resource name may not be empty",
                "kind: Unsupported value",
                "got unexpected kind in",
                "conflicts with selected instance type",
            )
            return "" if any(e in mine["renderError"] for e in expected) else "render-error"
        return "we refuse, kubevirt admits"
    if mine.get("allowed"):
        return "kubevirt refuses, we admit"
    if "causes" not in theirs:
        # A bare error (decode, defaults): any refusal, and where ours is one too (the webhook's decode),
        # the same text.
        if "error" in mine and mine["error"] != (theirs.get("result") or {}).get("message"):
            return "bare error"
        return ""
    if "causes" not in mine:
        return "kubevirt gives causes, we " + ("panic" if "panic" in mine else "give a rendering error")
    theirs_causes, mine_causes = theirs["causes"], mine["causes"]
    if mine.get("stage") == "schema":
        key = json.dumps
        if len(mine_causes) <= 10:
            return "" if sorted(map(key, mine_causes)) == sorted(map(key, theirs_causes)) else "schema causes"
        return "" if set(map(key, theirs_causes)) <= set(map(key, mine_causes)) else "schema causes"
    if mine_causes[:10] != theirs_causes:
        if sorted(map(json.dumps, mine_causes[:10])) == sorted(map(json.dumps, theirs_causes)):
            return "cause order"
        return "causes"
    if mine["message"] != PREFIX + theirs["result"]["message"]:
        return "message"
    return ""


# --- inputs -------------------------------------------------------------------------------------------


@dataclass
class Case:
    source: str  # checks | schema | combos
    area: str
    label: str
    base: str
    gates: tuple[str, ...]
    input: JSON
    labels: tuple[str, ...] = field(default_factory=tuple)


def _kubevirt(gates: tuple[str, ...], config: JSON | None) -> JSON | None:
    """``config`` (a KubeVirtConfiguration or a KubeVirt CR) with ``gates`` added to its feature gates."""
    if not gates and not config:
        return None
    out = copy.deepcopy(config) if config else {}
    if gates:
        conf = out
        if isinstance(out.get("spec"), dict):  # a CR
            if not isinstance(out["spec"].get("configuration"), dict):
                out["spec"]["configuration"] = {}
            conf = out["spec"]["configuration"]
        if not isinstance(conf.get("developerConfiguration"), dict):
            conf["developerConfiguration"] = {}
        dev = conf["developerConfiguration"]
        dev["featureGates"] = sorted(set(dev.get("featureGates") or []) | set(gates))
    return out


def _gate_states(gates: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every gate off, each on alone, all on."""
    states: list[tuple[str, ...]] = [()]
    states += [(g,) for g in gates]
    if len(gates) > 1:
        states.append(gates)
    return states


def _build(base: checks.Base, mutations: list[checks.Mutation]) -> JSON | None:
    vm = base.vm()
    try:
        for mutate in mutations:
            mutate(vm)
    except (KeyError, IndexError, TypeError, AttributeError):
        return None  # the variant does not apply to this base
    return vm


def check_cases() -> Iterator[Case]:
    for var in checks.VARIANTS:
        configs: list[JSON | None] = [None, *var.configs]
        for base in checks.BASES:
            vm = _build(base, [var.apply])
            if vm is None:
                continue
            for config in configs:
                for gates in _gate_states(var.gates):
                    inp: JSON = {"vm": vm, "objects": [*base.objects, *var.objects]}
                    kv = _kubevirt(gates, config)
                    if kv is not None:
                        inp["kubevirt"] = kv
                    yield Case(
                        "checks", var.area, var.label, base.name, gates, copy.deepcopy(inp), (var.label,)
                    )


def _unique(objects: list[JSON]) -> list[JSON]:
    """The first object of each kind, namespace and name (the oracle's fake clients refuse a second)."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for o in objects:
        meta = o.get("metadata") or {}
        key = (o.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


def combo_cases(count: int, rng: random.Random) -> Iterator[Case]:
    """``count`` inputs with 2 to 5 variants each, on a random base, their gates each randomly on or off."""
    for _ in range(count):
        chosen = rng.sample(checks.VARIANTS, rng.randint(2, 5))
        base = rng.choice(checks.BASES)
        vm = _build(base, [v.apply for v in chosen])
        if vm is None:
            continue
        gates = tuple(sorted({g for v in chosen for g in v.gates if rng.random() < 0.5}))
        configs = [c for v in chosen for c in v.configs]
        config = rng.choice(configs) if configs and rng.random() < 0.5 else None
        inp: JSON = {"vm": vm, "objects": _unique([*base.objects, *(o for v in chosen for o in v.objects)])}
        kv = _kubevirt(gates, config)
        if kv is not None:
            inp["kubevirt"] = kv
        labels = tuple(v.label for v in chosen)
        yield Case(
            "combos",
            "+".join(sorted({v.area for v in chosen})),
            " + ".join(labels),
            base.name,
            gates,
            inp,
            labels,
        )


# --- the schema stage ------------------------------------------------------------------------------------


def _definitions() -> dict[str, JSON]:
    raw = (REPO / "apiserver" / "render" / "admission" / "openapi.json").read_text()
    return json.loads(raw)["definitions"]  # type: ignore[no-any-return]


_WRONG: dict[str, list[Any]] = {
    "string": [5, True, {}, [], 2.5],
    "integer": ["5", 2.5, True, {}, 1e20, -1, 2147483648, 1.0],
    "number": ["5", True],
    "boolean": ["true", 1, {}],
    "object": ["x", [], 1],
    "array": [{}, "x", 1],
}


def _schema_paths(defs: dict[str, JSON], max_depth: int) -> Iterator[tuple[tuple[Any, ...], JSON]]:
    """(path under spec, property schema) for every property reachable within ``max_depth`` objects;
    an array's item is index 0."""
    seen_at: dict[str, int] = {}

    def walk(ref: str, path: tuple[Any, ...], depth: int) -> Iterator[tuple[tuple[Any, ...], JSON]]:
        if depth > max_depth or seen_at.get(ref, 99) < depth - 3:
            return
        seen_at.setdefault(ref, depth)
        schema = defs[ref]
        yield path, {"$ref": ref}
        for name, prop in sorted((schema.get("properties") or {}).items()):
            sub = (*path, name)
            yield sub, prop
            if "$ref" in prop:
                yield from walk(prop["$ref"], sub, depth + 1)
            elif "items" in prop and "$ref" in prop["items"]:
                yield from walk(prop["items"]["$ref"], (*sub, 0), depth + 1)

    yield from walk("v1.VirtualMachineSpec", (), 0)


def _put(spec: JSON, path: tuple[Any, ...], value: Any) -> None:
    """Set ``path`` under the VM's spec, creating objects and list items on the way (existing ones kept)."""
    cur: Any = spec
    for key, nxt in zip(path, (*path[1:], None), strict=True):
        if nxt is None:
            if isinstance(cur, list):
                if cur:
                    cur[0] = value
                else:
                    cur.append(value)
            else:
                cur[key] = value
            return
        if isinstance(cur, list):
            if not cur or not isinstance(cur[0], dict):
                cur[:1] = [{}]
            cur = cur[0]
            continue
        want: Any = [] if isinstance(nxt, int) else {}
        if not isinstance(cur.get(key), type(want)):
            cur[key] = want
        cur = cur[key]


def schema_cases(rng: random.Random, max_depth: int = 7) -> Iterator[Case]:
    defs = _definitions()
    for path, prop in _schema_paths(defs, max_depth):
        shown = ".".join(str(p) for p in ("spec", *path))
        resolved = defs[prop["$ref"]] if "$ref" in prop else prop
        types = resolved.get("type") or []
        values: list[tuple[str, Any]] = []
        for t in types:
            for wrong in _WRONG.get(t, []):
                values.append((f"{json.dumps(wrong)}", wrong))
        values.append(("null", None))
        if resolved.get("enum"):
            values += [('"bogus"', "bogus"), ('""', "")]
        if types == ["object"] or "$ref" in prop:
            values.append(("{bogusField}", {"bogusField": 1}))
            if resolved.get("required"):
                values.append(("{} (required missing)", {}))
        if resolved.get("format") == "int32":
            values += [("2147483647", 2147483647), ("-2147483649", -2147483649)]
        if resolved.get("format") in ("date-time", "byte"):
            values += [('"bogus"', "bogus")]
        for label, value in values:
            base = rng.choice(checks.BASES)
            vm = base.vm()
            if path:
                _put(vm["spec"], path, copy.deepcopy(value))
            else:
                vm["spec"] = copy.deepcopy(value)
            yield Case(
                "schema",
                "schema",
                f"{shown}={label}",
                base.name,
                (),
                {"vm": vm, "objects": base.objects},
                (f"{shown}={label}",),
            )
    # the top level
    for label, change in (
        ("unknown top-level member", lambda vm: vm.__setitem__("bogus", 1)),
        ("no spec", lambda vm: vm.pop("spec")),
        ("status a string", lambda vm: vm.__setitem__("status", "x")),
        ("status unknown member (open)", lambda vm: vm.__setitem__("status", {"bogus": 1, "ready": "yes"})),
        ("metadata a list", lambda vm: vm.__setitem__("metadata", [])),
        ("kind wrong", lambda vm: vm.__setitem__("kind", "Pod")),
        ("two unknown top-level members", lambda vm: vm.update({"a": 1, "b": 2})),
    ):
        vm = checks.BASES[0].vm()
        change(vm)
        yield Case("schema", "schema", label, "cd", (), {"vm": vm, "objects": []}, (label,))


# --- running and reporting ---------------------------------------------------------------------------


@dataclass
class Finding:
    case: Case
    kind: str
    theirs: JSON
    mine: JSON


def run(
    oracle: Oracle, cases: list[Case], batch: int = 2000, progress: bool = True
) -> tuple[list[Finding], list[tuple[Case, JSON]]]:
    findings: list[Finding] = []
    answered: list[tuple[Case, JSON]] = []
    started = time.monotonic()
    for start in range(0, len(cases), batch):
        chunk = cases[start : start + batch]
        verdicts = oracle.ask([c.input for c in chunk])
        for case, theirs in zip(chunk, verdicts, strict=True):
            mine = ours(case.input)
            answered.append((case, theirs))
            kind = judge(mine, theirs)
            if kind:
                findings.append(Finding(case, kind, theirs, mine))
        if progress:
            done = start + len(chunk)
            print(
                f"  {done}/{len(cases)} inputs, {len(findings)} differ ({time.monotonic() - started:.0f}s)",
                file=sys.stderr,
            )
    return findings, answered


def _short(verdict: JSON) -> str:
    if "causes" in verdict:
        return json.dumps(
            [f"{c['reason']} {c['field']}: {c['message']}" for c in verdict["causes"]], ensure_ascii=False
        )[:700]
    return json.dumps(verdict, ensure_ascii=False)[:400]


def families(cases: list[Case], findings: list[Finding]) -> None:
    """Inputs and differences per family (a family of the checks, the schema, the combinations)."""

    def family(case: Case) -> str:
        return "combos" if case.source == "combos" else f"{case.source}/{case.area}"

    run = collections.Counter(family(c) for c in cases)
    differ = collections.Counter(family(f.case) for f in findings)
    print(f"{'family':28} {'inputs':>7} {'differ':>7}")
    for name in sorted(run):
        print(f"{name:28} {run[name]:7d} {differ[name]:7d}")


def report(findings: list[Finding], total: int) -> None:
    by_area: dict[str, list[Finding]] = collections.defaultdict(list)
    for f in findings:
        by_area[f"{f.case.source}/{f.case.area} [{f.kind}]"].append(f)
    for key, group in sorted(by_area.items(), key=lambda kv: -len(kv[1])):
        first = group[0]
        print(
            f"{len(group):6d}  {key}: e.g. [{first.case.base} gates={','.join(first.case.gates) or '-'}] {first.case.label}"
        )
        print(f"        KubeVirt: {_short(first.theirs)}")
        print(f"        ours:     {_short(first.mine)}")
    print(f"{total} inputs, {len(findings)} differ")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--oracle", default=DEFAULT_ORACLE, help="the expand-admit binary (default %(default)s)"
    )
    parser.add_argument(
        "--only",
        default="checks,schema,combos",
        help="which inputs: checks, schema, combos (comma-separated)",
    )
    parser.add_argument(
        "--combos", type=int, default=5000, help="random combinations of variants (default 5000)"
    )
    parser.add_argument("--area", default=None, help="only the variants of these areas (comma-separated)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument(
        "--limit", type=int, default=None, help="run at most this many inputs (a random sample)"
    )
    parser.add_argument("--out", type=Path, default=None, help="write every difference here (JSON lines)")
    parser.add_argument(
        "--families", action="store_true", help="also print inputs and differences per family"
    )
    parser.add_argument("--table", type=Path, default=None, help="write the rules table (markdown) here")
    args = parser.parse_args()
    if not Path(args.oracle).exists():
        print(
            f"no oracle at {args.oracle} (build it: ../shared/oracle/README.md); nothing run", file=sys.stderr
        )
        return 2
    rng = random.Random(args.seed)
    only = set(args.only.split(","))
    cases: list[Case] = []
    if "checks" in only:
        cases += check_cases()
    if "schema" in only:
        cases += schema_cases(rng)
    if "combos" in only:
        cases += combo_cases(args.combos, rng)
    if args.area:
        areas = set(args.area.split(","))
        cases = [c for c in cases if set(c.area.split("+")) & areas]
    if args.limit and len(cases) > args.limit:
        cases = rng.sample(cases, args.limit)
    print(f"{len(cases)} inputs", file=sys.stderr)
    oracle = Oracle(args.oracle)
    try:
        findings, answered = run(oracle, cases)
    finally:
        oracle.close()
    report(findings, len(cases))
    if args.families:
        families(cases, findings)
    if args.out:
        with args.out.open("w") as out:
            for f in findings:
                row = {
                    "kind": f.kind,
                    "source": f.case.source,
                    "area": f.case.area,
                    "label": f.case.label,
                    "base": f.case.base,
                }
                out.write(
                    json.dumps(
                        {**row, "input": f.case.input, "kubevirt": f.theirs, "ours": f.mine},
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    if args.table:
        from hack.oracle import admission_table

        args.table.write_text(admission_table.render(answered))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
