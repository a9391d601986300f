#!/usr/bin/env python3
"""Differential test of ``validate=true`` against KubeVirt's own VM webhook (the ``expand-admit`` oracle).

Generates near-miss VMs from the golden admission cases (a member removed, set to null, to a wrong or
bogus value, a list item doubled, a feature gate switched), asks KubeVirt (``expand-admit``, see
../shared/oracle/README.md) and the renderer, and prints every input on which the verdicts differ. Not for CI
(the oracle is built on a developer machine); tests/render/admission/test_oracle.py runs a small sample of it
when the binary is there.

    .venv/bin/python -m hack.oracle.diff_admission [--oracle PATH] [--per-case N] [--depth N] [--seed S] [--limit N]
                                            [--out FILE]

Verdicts are equal when both admit (with the same warnings), both refuse with the same causes in the same
order (for the schema stage, in any order: go-openapi visits members in Go's random map order), both refuse
where KubeVirt panics or answers a bare error, or KubeVirt admits a VM that cannot be rendered (the
rendering error stands).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from apiserver import ExpandError, expand
from apiserver.render.admission import AdmissionDenied
from apiserver.render.admission.featuregates import GATES

REPO = Path(__file__).resolve().parents[2]


# Where ../shared/oracle/build.sh put it on a developer machine (beside the repository), unless told.
DEFAULT_ORACLE = os.environ.get("KUBEVIRT_EXPAND_ADMIT_ORACLE") or str(
    REPO.parent / "oracle" / "bin" / "expand-admit"
)
CASES = REPO.parent / "shared" / "conformance-admission" / "cases"
EXPAND_CASES = REPO.parent / "shared" / "conformance" / "cases"
BOGUS: list[Any] = [
    "",
    "bogus",
    "Bogus_Name",
    "-1",
    0,
    -1,
    1,
    3,
    65536,
    2.5,
    True,
    False,
    [],
    {},
    None,
    "1Mi",
    "/",
]


def ours(inp: dict[str, Any]) -> dict[str, Any]:
    try:
        result = expand(
            inp["vm"], inp.get("objects", []), inp.get("kubevirt"), validate=True, field_validation="Ignore"
        )
    except AdmissionDenied as err:
        if err.verdict.panic:
            return {"panic": err.verdict.panic}
        if err.verdict.error:
            return {"allowed": False, "error": err.verdict.error, "stage": err.verdict.stage}
        return {"allowed": False, "causes": err.causes, "stage": err.verdict.stage}
    except ExpandError as err:
        return {"renderError": err.message}
    return {"allowed": True, "warnings": list(result.warnings)}


def oracle(path: str, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    lines = "".join(json.dumps(i) + "\n" for i in inputs)
    proc = subprocess.run([path], input=lines, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def agree(mine: dict[str, Any], theirs: dict[str, Any]) -> bool | None:
    """Whether the verdicts agree (None: the oracle could not take the input)."""
    if "inputError" in theirs:
        return None
    if "panic" in theirs:
        return "panic" in mine or mine.get("allowed") is False or "renderError" in mine
    if theirs.get("allowed"):
        if "renderError" in mine:
            return True
        return mine.get("allowed") is True and mine.get("warnings", []) == (theirs.get("warnings") or [])
    if "causes" in theirs:
        if mine.get("stage") == "schema":
            key = json.dumps
            return sorted(map(key, mine.get("causes", []))) == sorted(map(key, theirs["causes"]))
        return mine.get("causes") == theirs["causes"]
    if "error" in mine:  # the webhook's bare error (its decode): the same text
        return bool(mine["error"] == (theirs.get("result") or {}).get("message"))
    return mine.get("allowed") is False or "renderError" in mine


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield (*path, i)
            yield from _paths(item, (*path, i))


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def mutate(inp: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One near miss: a change at a random place of the VM's spec (or status), or of the feature gates."""
    out = copy.deepcopy(inp)
    vm = out["vm"]
    if rng.random() < 0.15:
        gates = (
            out.setdefault("kubevirt", {})
            .setdefault("developerConfiguration", {})
            .setdefault("featureGates", [])
        )
        gate = rng.choice(sorted(GATES))
        if gate in gates:
            gates.remove(gate)
        else:
            gates.append(gate)
        return out
    paths = [p for p in _paths(vm) if p and p[0] in ("spec", "status")]
    if not paths:
        return out
    path = rng.choice(paths)
    parent = _parent(vm, path)
    action = rng.random()
    if action < 0.2 and isinstance(parent, dict):
        del parent[path[-1]]
    elif action < 0.3 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[path[-1]]))
    else:
        parent[path[-1]] = rng.choice(BOGUS)
    return out


def generate(
    per_case: int, seed: int, limit: int | None, depth: int = 1, cases: Path = CASES
) -> list[dict[str, Any]]:
    """``per_case`` inputs from each case of ``cases``: with 1 to ``depth`` changes each (0: the case as is)."""
    rng = random.Random(seed)
    inputs = []
    for path in sorted(cases.glob("*.json")):
        base = json.loads(path.read_text())["input"]
        if depth == 0:
            inputs.append(base)
            continue
        for _ in range(per_case):
            inp = base
            for _ in range(rng.randint(1, depth)):
                inp = mutate(inp, rng)
            inputs.append(inp)
    rng.shuffle(inputs)
    return inputs[:limit] if limit else inputs


def run(
    oracle_path: str, inputs: list[dict[str, Any]], batch: int = 200
) -> list[tuple[dict[str, Any], Any, Any]]:
    """The inputs on which the verdicts differ, with both verdicts."""
    differ = []
    for start in range(0, len(inputs), batch):
        chunk = inputs[start : start + batch]
        for inp, theirs in zip(chunk, oracle(oracle_path, chunk), strict=True):
            mine = ours(inp)
            if agree(mine, theirs) is False:
                differ.append((inp, theirs, mine))
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--oracle", default=DEFAULT_ORACLE, help="the expand-admit binary (default %(default)s)"
    )
    parser.add_argument("--per-case", type=int, default=3, help="mutations of each golden case (default 3)")
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--limit", type=int, default=None, help="run at most this many inputs")
    parser.add_argument(
        "--depth",
        type=int,
        default=1,
        help="changes per input: 1 to this many (default 1; 0: the cases as they are)",
    )
    parser.add_argument(
        "--corpus",
        choices=("admission", "expand"),
        default="admission",
        help="the cases to start from: ../shared/conformance-admission (default) or ../shared/conformance",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the differing inputs here (JSON lines)")
    args = parser.parse_args()
    if not Path(args.oracle).exists():
        print(f"no oracle at {args.oracle} (build it: ../shared/oracle/README.md)", file=sys.stderr)
        return 2
    cases = CASES if args.corpus == "admission" else EXPAND_CASES
    inputs = generate(args.per_case, args.seed, args.limit, args.depth, cases)
    differ = run(args.oracle, inputs)
    for _inp, theirs, mine in differ[:20]:
        print("KubeVirt:", json.dumps(theirs)[:400])
        print("ours:    ", json.dumps(mine)[:400])
        print()
    if args.out:
        with args.out.open("w") as out:
            for inp, theirs, mine in differ:
                out.write(json.dumps({"input": inp, "kubevirt": theirs, "ours": mine}) + "\n")
    print(f"{len(inputs)} inputs, {len(differ)} verdicts differ (seed {args.seed})")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
