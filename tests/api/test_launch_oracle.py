"""The public entry points (``launch_vm``, ``launch_vmi``) against KubeVirt's own ``expand-launcher`` on
generated inputs of the three classes issue 36 found: Multus networks with and without the
ExternalNetResourceInjection gate and their NetworkAttachmentDefinitions present or not, volumes whose
PersistentVolumeClaims are present, absent, block or hotplugged, and VirtualMachineInstances given whole.
Every answer must be KubeVirt's as the cluster stores it (``tests/support/launcher.py``'s
``stored_answer``: kube-apiserver's requests defaulted from limits, the VMI controller's memory overhead):
the pod's containers, init containers, totals and memory overhead, the VMI's parts, or the refusal with
KubeVirt's message. Skips where the oracle is not built (CI)."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from apiserver import api
from apiserver.render.kubernetes.errors import ExpandError
from hack.oracle import launcher_corpus as CORPUS
from tests.support.launcher import stored_answer

ORACLE = Path(CORPUS.DEFAULT_ORACLE)
PREFIX = "virt-controller would not create the virt-launcher pod: "
JSON = dict[str, Any]


def ours(given: JSON) -> JSON:
    """The public API's answer in the oracle's answer shape."""
    kubevirt = CORPUS.harness_kubevirt(given.get("kubevirt"), given.get("arch") or "amd64")
    objects = list(copy.deepcopy(given.get("objects") or []))
    subject = given.get("vm") or given["vmi"]
    namespace = (subject.get("metadata") or {}).get("namespace") or "default"
    if given.get("namespace"):
        objects.append({"kind": "Namespace", **given["namespace"]})
    if given.get("namespaceQuota"):
        objects.append(given["namespaceQuota"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if "vm" in given:
                got = api.launch_vm(given["vm"], objects, kubevirt, arch=given.get("arch"))
            else:
                got = api.launch_vmi(given["vmi"], objects, kubevirt, arch=given.get("arch"))
    except ExpandError as err:
        if "vmi" in given and not err.message.startswith(PREFIX):
            # refused by virt-api's VMI webhook (the harness applies its answer as kube-apiserver does)
            return {"error": f"admission denied: {err.message}", "stage": "vmi-mutation"}
        assert err.message.startswith(PREFIX), err.message
        return {"error": err.message.removeprefix(PREFIX), "stage": "render"}
    assert got["metadata"]["namespace"] == namespace
    pod = got["pod"]
    vmi = got["vmi"]
    return {
        "memoryOverhead": pod["memoryOverhead"],
        "containers": pod["containers"],
        "initContainers": pod["initContainers"],
        "total": pod["total"],
        "vmi": {".".join(path): CORPUS._dig(vmi, path) for path in CORPUS.VMI_PATHS},
    }


CLASSES = {"multus": CORPUS.multus_cases, "claims": CORPUS.claim_cases, "vmis": CORPUS.vmi_cases}


@pytest.mark.skipif(
    not ORACLE.exists(), reason=f"no expand-launcher oracle at {ORACLE} (not built on this machine)"
)
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_generated_class_gets_kubevirts_answer(name: str) -> None:
    cases = CLASSES[name](150)
    answers = CORPUS.ask_oracle(str(ORACLE), cases)
    differ = []
    outcomes: dict[str, int] = {}
    for given, kubevirts in zip(cases, answers, strict=True):
        answer = stored_answer(kubevirts)
        outcome = "refused" if "error" in answer else "pod"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if json.loads(json.dumps(ours(given))) != answer:
            differ.append((given, answer))
    print(f"{name}: {len(cases)} cases, {len(cases) - len(differ)} equal, {len(differ)} differ, {outcomes}")
    assert not differ, json.dumps(differ[0])[:3000]
    # both outcomes are exercised, else the class proves little
    assert len(outcomes) == 2, outcomes
