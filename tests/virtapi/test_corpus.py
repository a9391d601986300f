"""Ours and KubeVirt's virt-api, side by side behind one kube-apiserver (issue 29): every example of
examples/ and every distinct shape of the golden corpus, stored in the cluster with its instancetypes,
preferences and ControllerRevisions, then GET expand-spec of it and PUT expand-vm-spec of the VM as stored
(managedFields and all) to both. The answers must be equal as a caller sees them: status, media type and
the body parsed as JSON (key order aside), errors' Status bodies included.

A shape is the set of JSON paths (with their value types) of a case's input plus its outcome: 562 of the
2,367 shared cases. ``KUBEVIRT_EXPAND_VIRTAPI_CASES=all`` runs every case instead.

Every difference found is either fixed or of a kind :func:`known` names, with its reason; any other
difference fails the test, and the summary counts each kind. A case kube-apiserver refuses to store
(revision-023: a ControllerRevision without ``data``) is skipped.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml

from apiserver import ExpandError, expand_vm
from devcluster.deployed import DeployedServer
from devcluster.paths import REPO
from devcluster.patience import patience
from devcluster.virtapi import VirtApi
from tests.support.conformance import CASES_DIR, Case, case_files, load
from tests.support.shared import parametrize
from tests.virtapi.sides import TALLY, Answer, Kube, Placed, Sides, Unstorable, place, store

CASES_ENV = "KUBEVIRT_EXPAND_VIRTAPI_CASES"
EXAMPLES = REPO / "examples"


def _paths(value: Any, path: str, out: set[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, member in value.items():
            name = "*" if path.endswith(("labels", "annotations")) else key
            _paths(member, f"{path}.{name}", out)
    elif isinstance(value, list):
        for member in value:
            _paths(member, f"{path}[]", out)
    else:
        out.add((path, type(value).__name__))


def shape(case: Case) -> tuple[frozenset[tuple[str, str]], str]:
    """The case's input as JSON paths and value types (labels' and annotations' keys as one), and its
    outcome (expanded, or the error's kind)."""
    found: set[tuple[str, str]] = set()
    data = case.input
    _paths(data["vm"], "vm", found)
    for obj in data.get("objects", []):
        _paths(obj, str(obj.get("kind")), found)
    if data.get("kubevirt"):
        _paths(data["kubevirt"], "kubevirt", found)
    expected = case.expected
    return frozenset(found), "expanded" if "expanded" in expected else str(expected.get("kind"))


def selected() -> list[str]:
    """The first case of every shape (or every case), those with a cluster configuration last: they
    change the KubeVirt CR both servers read."""
    every = os.environ.get(CASES_ENV, "") == "all"
    seen: set[tuple[frozenset[tuple[str, str]], str]] = set()
    plain: list[str] = []
    configured: list[str] = []
    for path in case_files():
        case = load(path)
        key = shape(case)
        if not every and key in seen:
            continue
        seen.add(key)
        (configured if case.input.get("kubevirt") else plain).append(case.id)
    return plain + configured


SELECTED = selected()

SCHEMA_TEXT = "Object is not a valid VirtualMachine"


def _message(answer: Answer) -> str:
    return str(answer.body.get("message", "")) if isinstance(answer.body, dict) else ""


def known(case_id: str, request: str, ours: Answer, theirs: Answer) -> str | None:
    """Why ours answers differently from virt-api here, where that is known; None for a difference that
    is not."""
    area = case_id.partition("-")[0]
    if area == "legacy" and theirs.status >= 400 and "ControllerRevision" in _message(theirs):
        # api-contract.md, deliberate differences: KubeVirt v1.7+ refuses pre-v1beta1 revisions; we
        # decode them as v1.6.6 did (then render, or fail later, as KubeVirt does today).
        return "legacy ControllerRevision: decoded here, refused by virt-api (by design)"
    decode_failed = "failed to decode object in ControllerRevision: Object 'Kind' is missing in "
    if ours.status == theirs.status and all(decode_failed in _message(a) for a in (ours, theirs)):
        # apimachinery quotes the revision's whole data; ours ends the message before it (by design:
        # an error is no way to read a revision, and the corpus pins only the prefix).
        return "undecodable revision: its data not quoted in the message (by design)"
    return None


def _unordered(body: Any) -> Any:
    """A Status' causes in a fixed order: go-openapi reports schema problems in Go's map order, which has
    none (the same body gets its causes in another order from one request to the next)."""
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message") == SCHEMA_TEXT:
        causes = sorted((body.get("details") or {}).get("causes") or [], key=json.dumps)
        return {**body, "details": {**body["details"], "causes": causes}}
    return body


def differences(ours: Answer, theirs: Answer) -> list[str]:
    found = [m for m in ("status", "content_type") if getattr(ours, m) != getattr(theirs, m)]
    if _unordered(ours.body) != _unordered(theirs.body):
        found.append("body")
    return found


def report(what: str, ours: Answer, theirs: Answer) -> str:
    return f"{what}\n  ours:     {ours.shown()}\n  virt-api: {theirs.shown()}"


def offline(vm: Mapping[str, Any], objects: list[dict[str, Any]], cr: Mapping[str, Any]) -> Answer:
    """What ours must answer a GET of ``vm`` with, under ``--kubevirt-error-codes``, by the engine offline."""
    try:
        return Answer(200, "application/json", expand_vm(vm, objects, cr))
    except ExpandError as err:
        return Answer(500, "application/json", err.message)


def _same(got: Answer, want: Answer) -> bool:
    if want.status == 200:
        return got == want
    return got.status == want.status and f"Internal error occurred: {want.body}" == got.body.get("message")


def settle(sides: Sides, placed: Placed, want: Answer) -> None:
    """After a change of the KubeVirt CR: wait until ours answers as the engine does under it, then until
    virt-api answers as ours (at most a few seconds: where it never does, the test shows the difference)."""
    deadline = time.monotonic() + patience(20)
    while True:
        got, _ = sides.get(placed.namespace, placed.name)
        if _same(got, want):
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"ours never took the configuration: {got.shown()}\nwant {want.shown()}")
        time.sleep(0.05)
    deadline = time.monotonic() + patience(5)
    while True:
        got, theirs = sides.get(placed.namespace, placed.name)
        if got == theirs or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def compare(
    sides: Sides, placed: Placed, vm: dict[str, Any], case_id: str = ""
) -> tuple[list[str], list[str]]:
    """GET and PUT of the stored VM to both: (a line per unexplained difference, the known ones' reasons)."""
    found, explained = [], []
    for request, answers in (
        ("GET", sides.get(placed.namespace, placed.name)),
        ("PUT", sides.put(placed.namespace, json.dumps(vm).encode())),
    ):
        if not differences(*answers):
            continue
        reason = known(case_id, request, *answers)
        if reason is None:
            found.append(report(f"{request} ({', '.join(differences(*answers))})", *answers))
        else:
            explained.append(f"{request}: {reason}")
    return found, explained


@pytest.fixture
def configured(virt_api: VirtApi, sides: Sides) -> Iterator[list[Any]]:
    """Sets the KubeVirt CR's configuration for one test (see :func:`settle`); puts the default back."""
    probes: list[Any] = []
    yield probes
    if probes:
        cr = virt_api.configure({})
        placed, vm, objects = probes[-1]
        settle(sides, placed, offline(vm, objects, cr))


@parametrize("case_id", SELECTED, ids=SELECTED)
def test_golden_case_answers_as_virt_api(
    sides: Sides, kube: Kube, virt_api: VirtApi, configured: list[Any], ours: DeployedServer, case_id: str
) -> None:
    case = load(CASES_DIR / f"{case_id}.json")
    placed = place(case.input["vm"], case.input.get("objects", []), f"c-{case_id}")
    try:
        vm, objects = store(kube, placed)
    except Unstorable as err:
        pytest.skip(f"kube-apiserver refuses to store this input: {err}")
    kubevirt = case.input.get("kubevirt")
    if kubevirt:
        configuration = (
            (kubevirt.get("spec") or {}).get("configuration", {}) if "spec" in kubevirt else kubevirt
        )
        cr = virt_api.configure(configuration)
        configured.append((placed, vm, objects))
        settle(sides, placed, offline(vm, objects, cr))
    found, explained = compare(sides, placed, vm, case_id)
    TALLY[" | ".join(explained) if explained else "equal"] += 1
    assert not found, "\n".join(found)


def examples() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """examples/' VMs and the objects beside them (the KubeVirt CR aside: it is the default one)."""
    vms: list[dict[str, Any]] = []
    objects: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") == "KubeVirt":
                continue
            (vms if doc["kind"] == "VirtualMachine" else objects).append(doc)
    return vms, objects


EXAMPLE_VMS, EXAMPLE_OBJECTS = examples()


@pytest.mark.parametrize("name", [vm["metadata"]["name"] for vm in EXAMPLE_VMS])
def test_example_answers_as_virt_api(sides: Sides, kube: Kube, name: str) -> None:
    source = next(vm for vm in EXAMPLE_VMS if vm["metadata"]["name"] == name)
    placed = place(source, EXAMPLE_OBJECTS, f"ex-{name}")
    vm, _ = store(kube, placed)
    assert vm["metadata"]["managedFields"], "kube-apiserver records who wrote the VM"
    found, explained = compare(sides, placed, vm)
    assert not found and not explained, "\n".join(found + explained)
    ours, _ = sides.get(placed.namespace, placed.name)
    # Not two servers agreeing on an error: the example renders, managedFields kept.
    assert ours.status == 200 and ours.body["metadata"]["managedFields"] == vm["metadata"]["managedFields"]
