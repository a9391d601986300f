"""What application-aware-quota charges for a VM's virt-launcher pod, by calculator (AAQ's
built-in-usage-calculators): the pod's usage, the guest's memory and vCPUs under the standard or the
``/vmi`` names, or the compute container less KubeVirt's overhead; which calculator an AAQ CR makes the
controller use; which namespaces AAQ gates."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver import launch_vm
from apiserver.documents.manifests import read_manifest_paths
from apiserver.render.aaq import calculator_of, gates, launcher_usage
from apiserver.render.kubernetes.quantity import parse_quantity
from apiserver.render.kubernetes.quantitymath import resource_list, resource_text
from apiserver.render.kubernetes.quota import Pod, pod_usage
from tests.cli.test_resources import EXAMPLES

OBJECTS = [obj for _, obj in read_manifest_paths([str(EXAMPLES)])]


def launched(name: str) -> tuple[dict[str, Any], Pod]:
    vm = next(o for o in OBJECTS if o["kind"] == "VirtualMachine" and o["metadata"]["name"] == name)
    answer = launch_vm(vm, OBJECTS)
    pod = answer["pod"]
    containers = [
        (
            c["name"],
            resource_list(c["resources"].get("requests")),
            resource_list(c["resources"].get("limits")),
        )
        for c in [*pod["containers"], *pod["initContainers"]]
    ]
    return answer, Pod(
        name,
        resource_list(pod["total"]["requests"]),
        resource_list(pod["total"].get("limits")),
        containers,
    )


def value(text: str) -> int:
    return int(parse_quantity(text).value)


@pytest.mark.parametrize("name", ["fedora", "fedora-pinned"])
def test_each_calculator_charges_what_it_says(name: str) -> None:
    answer, pod = launched(name)
    vmi, overhead = answer["vmi"], parse_quantity(answer["pod"]["memoryOverhead"])
    guest_memory = value(vmi["status"]["memory"]["guestRequested"])
    topology = vmi["status"]["currentCPUTopology"]
    guest_cpus = topology["sockets"] * topology["cores"] * topology["threads"]

    # VmiPodUsage and IgnoreVmiCalculator: the pod as Kubernetes counts it, overhead and all.
    for calculator in ("VmiPodUsage", "IgnoreVmiCalculator"):
        charged = resource_text(launcher_usage(calculator, vmi, pod, overhead))
        assert charged == resource_text(pod_usage(pod))
        assert value(charged["requests.memory"]) == value(answer["pod"]["total"]["requests"]["memory"])

    # VirtualResources: the guest's memory and vCPUs, requests and limits alike.
    virtual = {
        k: value(v) for k, v in resource_text(launcher_usage("VirtualResources", vmi, pod, overhead)).items()
    }
    assert virtual == {
        "pods": 1,
        "count/pods": 1,
        "requests.memory": guest_memory,
        "memory": guest_memory,
        "limits.memory": guest_memory,
        "requests.cpu": guest_cpus,
        "cpu": guest_cpus,
        "limits.cpu": guest_cpus,
    }

    # DedicatedVirtualResources: the same figures under names of their own, none of the standard ones.
    dedicated = resource_text(launcher_usage("DedicatedVirtualResources", vmi, pod, overhead))
    assert {k: value(v) for k, v in dedicated.items()} == {
        "requests.instances/vmi": 1,
        "instances/vmi": 1,
        "requests.memory/vmi": guest_memory,
        "memory/vmi": guest_memory,
        "requests.cpu/vmi": guest_cpus,
        "cpu/vmi": guest_cpus,
    }

    # GuestEffectiveResources: the compute container's requests, less the memory overhead.
    effective = resource_text(launcher_usage("GuestEffectiveResources", vmi, pod, overhead))
    compute = answer["pod"]["containers"][0]
    assert compute["name"] == "compute"
    assert value(effective["requests.memory"]) == value(compute["resources"]["requests"]["memory"]) - int(
        overhead.value
    )
    assert effective["requests.cpu"] == compute["resources"]["requests"]["cpu"]


@pytest.mark.parametrize(
    ("aaq", "calculator"),
    [
        (None, "VmiPodUsage"),  # no AAQ CR: the controller runs without the flag
        ({"spec": {}}, "VmiPodUsage"),
        ({"spec": {"configuration": {"vmiCalculatorConfiguration": {}}}}, "DedicatedVirtualResources"),
        (
            {"spec": {"configuration": {"vmiCalculatorConfiguration": {"configName": "VirtualResources"}}}},
            "VirtualResources",
        ),
    ],
)
def test_the_aaq_cr_names_the_calculator(aaq: dict[str, Any] | None, calculator: str) -> None:
    assert calculator_of(aaq) == calculator


def namespace(**labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": labels}}


def test_aaq_gates_the_namespaces_its_selector_picks() -> None:
    assert gates(None, namespace(**{"application-aware-quota/enable-gating": ""})) is True
    assert gates(None, namespace(team="a")) is False
    assert gates(None, None) is None
    own = {"spec": {"namespaceSelector": {"matchLabels": {"team": "a"}}}}
    assert gates(own, namespace(team="a")) is True
    assert gates(own, namespace(**{"application-aware-quota/enable-gating": ""})) is False
