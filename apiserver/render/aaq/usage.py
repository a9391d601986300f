"""What an ApplicationAwareResourceQuota charges for a VM's virt-launcher pod when it starts (the only
launcher: no migration), after AAQ's ``pkg/aaq-controller/built-in-usage-calculators``
(``VirtLauncherCalculator.CalculateUsageByConfig``, ``CalculateResourceLauncherVMIUsagePodResources``,
``cpu.GetNumberOfVCPUs``) at commit c7d385c6.

- ``VmiPodUsage`` (what the controller uses when the AAQ CR names no calculator at all) and
  ``IgnoreVmiCalculator``: the pod's usage as Kubernetes counts it, KubeVirt's overhead included.
- ``VirtualResources``: the guest's: memory and vCPUs as ``requests``, bare names and ``limits`` alike,
  and one pod.
- ``DedicatedVirtualResources`` (the CRD's default once the AAQ CR has a ``vmiCalculatorConfiguration``):
  the guest's, under resources of their own (``requests.memory/vmi``, ``memory/vmi``, ``requests.cpu/vmi``,
  ``cpu/vmi``, ``requests.instances/vmi``, ``instances/vmi``); nothing of the standard ones.
- ``GuestEffectiveResources``: the compute container's usage, memory requests and limits less KubeVirt's
  memory overhead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.kubernetes.quantity import Quantity, parse_quantity
from apiserver.render.kubernetes.quantitymath import ResourceList, new_quantity, resource_list, sub, zero
from apiserver.render.kubernetes.quota import Pod, pod_usage
from apiserver.render.presets.selector import MalformedSelector, SelectorError, label_selector_as_selector

VMI_POD_USAGE = "VmiPodUsage"
VIRTUAL_RESOURCES = "VirtualResources"
DEDICATED_VIRTUAL_RESOURCES = "DedicatedVirtualResources"
IGNORE_VMI_CALCULATOR = "IgnoreVmiCalculator"
GUEST_EFFECTIVE_RESOURCES = "GuestEffectiveResources"
CALCULATORS = (
    VMI_POD_USAGE,
    VIRTUAL_RESOURCES,
    DEDICATED_VIRTUAL_RESOURCES,
    IGNORE_VMI_CALCULATOR,
    GUEST_EFFECTIVE_RESOURCES,
)
# util.DefaultLauncherConfig: the controller's calculator when its flag is empty or unknown.
DEFAULT_CALCULATOR = VMI_POD_USAGE
# The CRD's default for spec.configuration.vmiCalculatorConfiguration.configName.
CRD_DEFAULT_CALCULATOR = DEDICATED_VIRTUAL_RESOURCES
COMPUTE = "compute"


def calculator_of(aaq: Mapping[str, Any] | None) -> str:
    """The calculator an AAQ CR makes the controller use: its ``configName``; the CRD's default where
    ``vmiCalculatorConfiguration`` is given without one; else (no such object: the operator passes no
    flag) the controller's default."""
    spec = (aaq or {}).get("spec")
    configuration = spec.get("configuration") if isinstance(spec, Mapping) else None
    calc = configuration.get("vmiCalculatorConfiguration") if isinstance(configuration, Mapping) else None
    if not isinstance(calc, Mapping):
        return DEFAULT_CALCULATOR
    name = calc.get("configName")
    if not name:
        return CRD_DEFAULT_CALCULATOR
    return str(name) if name in CALCULATORS else DEFAULT_CALCULATOR


def _one() -> Quantity:
    return new_quantity(1, "DecimalSI")


def vcpus(topology: Mapping[str, Any]) -> int:
    """``cpu.GetNumberOfVCPUs``: cores x sockets x threads, a zero factor left out."""
    count = int(topology.get("cores") or 0)
    for factor in (int(topology.get("sockets") or 0), int(topology.get("threads") or 0)):
        if factor:
            count = factor if count == 0 else count * factor
    return count


def virtual_resources(vmi: Mapping[str, Any]) -> ResourceList:
    """``CalculateResourceLauncherVMIUsagePodResources`` for the source (only) launcher."""
    spec = vmi.get("spec") or {}
    domain = spec.get("domain") or {}
    status = vmi.get("status") or {}
    resources = domain.get("resources") or {}
    memory: Quantity = zero()
    cpu: Quantity = zero()
    for part in ("limits", "requests"):
        given = resource_list(resources.get(part))
        memory = given.get("memory", memory)
        cpu = given.get("cpu", cpu)
    guest = (domain.get("memory") or {}).get("guest")
    if guest is not None:
        memory = parse_quantity(guest)
    if domain.get("cpu") is not None:
        cpu = new_quantity(vcpus(domain["cpu"]), "BinarySI")
    requested = (status.get("memory") or {}).get("guestRequested")
    if status.get("memory") is not None and requested is not None:
        memory = parse_quantity(requested)
    if status.get("currentCPUTopology") is not None:
        cpu = new_quantity(vcpus(status["currentCPUTopology"]), "BinarySI")
    return {
        "pods": _one(),
        "count/pods": _one(),
        "requests.memory": memory,
        "memory": memory,
        "requests.cpu": cpu,
        "cpu": cpu,
        "limits.memory": memory,
        "limits.cpu": cpu,
    }


def launcher_usage(calculator: str, vmi: Mapping[str, Any], pod: Pod, overhead: Quantity) -> ResourceList:
    """``CalculateUsageByConfig``: what the calculator charges for the pod of ``vmi`` (``pod``: its
    requests, limits and containers; ``overhead``: KubeVirt's memory overhead for it)."""
    if calculator == VIRTUAL_RESOURCES:
        return virtual_resources(vmi)
    if calculator == DEDICATED_VIRTUAL_RESOURCES:
        guest = virtual_resources(vmi)
        out: ResourceList = {"requests.instances/vmi": _one(), "instances/vmi": _one()}
        for key, source in (("memory", "limits.memory"), ("cpu", "limits.cpu")):
            out[f"requests.{key}/vmi"] = guest[source]
            out[f"{key}/vmi"] = guest[source]
        return out
    if calculator == GUEST_EFFECTIVE_RESOURCES:
        compute = [c for c in pod.containers if c[0] == COMPUTE][:1]
        requests = compute[0][1] if compute else {}
        limits = compute[0][2] if compute else {}
        found = pod_usage(Pod(pod.label, dict(requests), dict(limits), compute))
        if not overhead.is_zero():
            for key in ("requests.memory", "limits.memory"):
                if key in found:
                    found[key] = _non_negative(sub(found[key], overhead))
        return found
    return pod_usage(pod)


def _non_negative(q: Quantity) -> Quantity:
    return q if q.sign() >= 0 else zero()


# aaq-operator's default spec.namespaceSelector: namespaces with this label key are gated.
GATING_LABEL = "application-aware-quota/enable-gating"


def gates(aaq: Mapping[str, Any] | None, namespace: Mapping[str, Any] | None) -> bool | None:
    """Whether AAQ gates the pods of ``namespace`` (its AAQ CR's ``spec.namespaceSelector``, by default
    the ``application-aware-quota/enable-gating`` label key): only there does an
    ApplicationAwareResourceQuota hold a pod back. None where the Namespace is unknown."""
    if namespace is None:
        return None
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, Mapping):
        labels = {}
    spec = (aaq or {}).get("spec")
    selector = spec.get("namespaceSelector") if isinstance(spec, Mapping) else None
    if selector is None:
        return GATING_LABEL in labels
    try:
        return label_selector_as_selector(selector).matches({str(k): str(v) for k, v in labels.items()})
    except (SelectorError, MalformedSelector):
        return False
