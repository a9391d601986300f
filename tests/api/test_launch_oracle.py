"""The public entry points (``launch_vm``, ``launch_vmi``) against KubeVirt's own ``expand-launcher`` on
generated inputs of the three classes issue 36 found: Multus networks with and without the
ExternalNetResourceInjection gate and their NetworkAttachmentDefinitions present or not, volumes whose
PersistentVolumeClaims are present, absent, block or hotplugged, and VirtualMachineInstances given whole.
Every answer must be KubeVirt's: the pod's containers, init containers, totals and memory overhead, or
the refusal with KubeVirt's message. Skips where the oracle is not built (CI)."""

from __future__ import annotations

import copy
import json
import random
import warnings
from pathlib import Path
from typing import Any

import pytest

from apiserver import api
from apiserver.render.kubernetes.errors import ExpandError
from hack.oracle import launcher_corpus as CORPUS

ORACLE = Path(CORPUS.DEFAULT_ORACLE)
PREFIX = "virt-controller would not create the virt-launcher pod: "
GATE = "ExternalNetResourceInjection"
JSON = dict[str, Any]


def _gate(rng: random.Random) -> JSON | None:
    """The gate as a configuration sets it: not at all (Beta: on), disabled, enabled, or both lists."""
    choice = rng.randrange(4)
    if choice == 0:
        return None
    dev: JSON = {}
    if choice in (1, 3):
        dev["disabledFeatureGates"] = [GATE]
    if choice in (2, 3):
        dev["featureGates"] = [GATE]
    return {"developerConfiguration": dev}


def _nad(name: str, namespace: str | None, resource: str | None) -> JSON:
    meta: JSON = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if resource is not None:
        meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": resource}
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition", "metadata": meta}


def multus_cases(count: int, seed: int = 36) -> list[JSON]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        networks: list[JSON] = [{"name": "default", "pod": {}}]
        interfaces: list[JSON] = [{"name": "default", "masquerade": {}}]
        objects = []
        for i in range(rng.randint(1, 3)):
            name = f"nad{i}"
            ref = rng.choice([name, f"other/{name}", f"default/{name}"])
            networks.append({"name": f"net{i}", "multus": {"networkName": ref}})
            interfaces.append({"name": f"net{i}", rng.choice(["bridge", "sriov"]): {}})
            if rng.random() < 0.7:
                where = ref.partition("/")[0] if "/" in ref else rng.choice([None, "default"])
                resource = rng.choice([None, "", "intel.com/sriov_a", "example.org/vf"])
                objects.append(_nad(name, where, resource))
        tspec = CORPUS.small(devices={"interfaces": interfaces})
        tspec["networks"] = networks
        cases.append(CORPUS.case(tspec, kubevirt=_gate(rng), objects=objects))
    return cases


def _pvc(name: str, namespace: str | None, mode: str | None, access: str) -> JSON:
    claim = CORPUS.pvc(name)
    if namespace is None:
        del claim["metadata"]["namespace"]
    else:
        claim["metadata"]["namespace"] = namespace
    if mode is not None:
        claim["spec"]["volumeMode"] = mode
    claim["spec"]["accessModes"] = [access]
    return claim


def claim_cases(count: int, seed: int = 37) -> list[JSON]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        volumes: list[JSON] = []
        disks: list[JSON] = []
        objects = []
        for i in range(rng.randint(1, 4)):
            claim = f"pvc{i}"
            kind = rng.choice(["persistentVolumeClaim", "dataVolume", "ephemeral", "containerDisk"])
            if kind == "persistentVolumeClaim":
                source: JSON = {"claimName": claim}
                if rng.random() < 0.2:
                    source["hotpluggable"] = True
            elif kind == "dataVolume":
                source = {"name": claim}
                if rng.random() < 0.2:
                    source["hotpluggable"] = True
            elif kind == "ephemeral":
                source = {"persistentVolumeClaim": {"claimName": claim}}
            else:
                source = {"image": "quay.io/containerdisks/fedora:41"}
            volumes.append({"name": f"vol{i}", kind: source})
            disks.append({"name": f"vol{i}", "disk": {"bus": "virtio"}})
            if kind != "containerDisk" and rng.random() < 0.75:
                namespace = rng.choice([None, "default", "default", "elsewhere"])
                mode = rng.choice([None, "Filesystem", "Block"])
                objects.append(_pvc(claim, namespace, mode, rng.choice(["ReadWriteOnce", "ReadWriteMany"])))
        tspec = CORPUS.small(devices={"disks": disks})
        tspec["volumes"] = volumes
        cases.append(CORPUS.case(tspec, objects=objects))
    return cases


def vmi_cases(count: int, seed: int = 38) -> list[JSON]:
    """VMIs given whole: the VM cases of the other classes and of the corpus' families, their template
    made a VMI, under configurations that change the webhook's defaults."""
    rng = random.Random(seed)
    pool = [
        given
        for family in ("topologies", "memory", "devices", "networks")
        for _, given in CORPUS.FAMILIES[family]()
    ]
    pool += multus_cases(40, seed=seed) + claim_cases(40, seed=seed)
    cases = []
    for given in rng.sample(pool, min(count, len(pool))):
        vm = given["vm"]
        template = vm["spec"]["template"]
        vmi: JSON = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "vmi", **({"namespace": "default"} if rng.random() < 0.5 else {})},
            "spec": copy.deepcopy(template["spec"]),
        }
        if template.get("metadata"):
            vmi["metadata"].update(copy.deepcopy(template["metadata"]))
        out = {k: v for k, v in copy.deepcopy(given).items() if k != "vm"}
        out["vmi"] = vmi
        if rng.random() < 0.3 and not out.get("kubevirt"):
            out["kubevirt"] = rng.choice(
                [
                    {"network": {"defaultNetworkInterface": "bridge"}},
                    {
                        "network": {
                            "defaultNetworkInterface": "bridge",
                            "permitBridgeInterfaceOnPodNetwork": False,
                        }
                    },
                    {"vmRolloutStrategy": "LiveUpdate", "liveUpdateConfiguration": {"maxCpuSockets": 8}},
                    {"cpuModel": "Haswell"},
                ]
            )
        cases.append(out)
    return cases


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


CLASSES = {"multus": multus_cases, "claims": claim_cases, "vmis": vmi_cases}


@pytest.mark.skipif(
    not ORACLE.exists(), reason=f"no expand-launcher oracle at {ORACLE} (not built on this machine)"
)
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_generated_class_gets_kubevirts_answer(name: str) -> None:
    cases = CLASSES[name](150)
    answers = CORPUS.ask_oracle(str(ORACLE), cases)
    differ = []
    outcomes: dict[str, int] = {}
    for given, answer in zip(cases, answers, strict=True):
        outcome = "refused" if "error" in answer else "pod"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if json.loads(json.dumps(ours(given))) != answer:
            differ.append((given, answer))
    print(f"{name}: {len(cases)} cases, {len(cases) - len(differ)} equal, {len(differ)} differ, {outcomes}")
    assert not differ, json.dumps(differ[0])[:3000]
    # both outcomes are exercised, else the class proves little
    assert len(outcomes) == 2, outcomes
