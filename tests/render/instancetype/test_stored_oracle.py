"""Which revision a stored VM is read from, against KubeVirt's own expand (``expand-oracle``): the status
ref virt-controller writes (``status.instancetypeRef.controllerRevisionRef``) and a user's
``spec.instancetype.revisionName``, agreeing, disagreeing, missing or of another object. Built from the
golden case revision-013 (a revision captured at 8 vCPUs, the live instancetype at 2). Skips where the
oracle binary is absent (CI)."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from apiserver import ExpandError, expand_vm
from tests.support import shared
from tests.support.conformance import CASES_DIR
from tests.support.oracle import find_oracle, where

pytestmark = [
    pytest.mark.skipif(
        find_oracle() is None, reason=f"no expand-oracle at {where()} (../shared/oracle builds it)"
    ),
    shared.needs_shared(CASES_DIR),
]

Case = dict[str, Any]


def _vm(c: Case) -> dict[str, Any]:
    vm: dict[str, Any] = c["vm"]
    return vm


def _no_revision_object(c: Case) -> None:
    c["objects"] = [o for o in c["objects"] if o["kind"] != "ControllerRevision"]


def _label_of_another_object(c: Case) -> None:
    for o in c["objects"]:
        if o["kind"] == "ControllerRevision":
            o["metadata"]["labels"]["instancetype.kubevirt.io/object-name"] = "other"


def _spec(name: str) -> Callable[[Case], None]:
    return lambda c: _vm(c)["spec"]["instancetype"].update(revisionName=name)


def _status(name: str) -> Callable[[Case], None]:
    return lambda c: _vm(c)["status"]["instancetypeRef"]["controllerRevisionRef"].update(name=name)


def _no_status(c: Case) -> None:
    _vm(c).pop("status")


def _all(*steps: Callable[[Case], None]) -> Callable[[Case], None]:
    def run(c: Case) -> None:
        for step in steps:
            step(c)

    return run


REVISION = "testvm-it-v1beta1-11111111-1111-1111-1111-111111111111-1"
VARIANTS: dict[str, Callable[[Case], None]] = {
    "status ref to the matcher's revision": lambda c: None,
    "status ref, the revision deleted": _no_revision_object,
    "status ref naming no revision": _status("gone"),
    "status ref to a revision of another object": _label_of_another_object,
    "status ref name differs from the matcher": lambda c: _vm(c)["status"]["instancetypeRef"].update(
        name="x"
    ),
    "status ref with an empty controllerRevisionRef": lambda c: _vm(c)["status"]["instancetypeRef"].update(
        controllerRevisionRef={}
    ),
    "revisionName wins over a status ref naming no revision": _all(_spec(REVISION), _status("gone")),
    "revisionName naming no revision, status ref good": _spec("gone"),
    "revisionName alone": _all(_spec(REVISION), _no_status),
    "revisionName to a revision of another object": _all(
        _spec(REVISION), _label_of_another_object, _no_status
    ),
    "neither: the live object": _no_status,
}


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[Case, dict[str, Any]]]:
    base = json.loads((CASES_DIR / "revision-013.json").read_text())["input"]
    inputs = {}
    for name, change in VARIANTS.items():
        c = copy.deepcopy(base)
        change(c)
        inputs[name] = c
    oracle = find_oracle()
    assert oracle is not None
    text = "".join(json.dumps(c) + "\n" for c in inputs.values())
    done = subprocess.run([str(oracle)], input=text, capture_output=True, text=True, timeout=300, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {name: (c, line) for (name, c), line in zip(inputs.items(), lines, strict=True)}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_revision_kubevirt_reads(answers: dict[str, tuple[Case, dict[str, Any]]], variant: str) -> None:
    case, kubevirt = answers[variant]
    if "expanded" in kubevirt:
        assert expand_vm(case["vm"], case["objects"]) == kubevirt["expanded"]
        return
    with pytest.raises(ExpandError) as raised:
        expand_vm(case["vm"], case["objects"])
    assert raised.value.message == kubevirt["error"]
