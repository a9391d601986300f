"""What virt-controller's VMI controller writes to a new VMI once it has created its virt-launcher pod.

Mirrors ``(*Controller).execute`` (``pkg/virt-controller/watch/vmi/vmi.go``: ``SetLatestApiVersionAnnotation``
first, on every VMI it has not seen yet) and ``updateStatus`` (``lifecycle.go``): a pending VMI whose pod
exists is ``Scheduling``; while scheduling, ``status.qosClass`` is the pod's (kube-apiserver's
``GetPodQOS`` of the stored pod) and ``updateMemoryOverheadStatusFromPod`` copies the pod's
``kubevirt.io/memory-overhead-bytes`` annotation (written by the template service under the
``VmiMemoryOverheadReport`` gate, GA) into ``status.memory.memoryOverhead``, as a BinarySI quantity.

Left out, as no renderer can know them: uid, resourceVersion, timestamps (``phaseTransitionTimestamps``,
the conditions), ``activePods`` (the pod's uid), ``launcherContainerImageVersion`` (virt-controller's
image) and ``topologyHints`` (the nodes' TSC frequency). The phases after ``Scheduling`` are the node's.
"""

from __future__ import annotations

from typing import Any

from apiserver.render.kubernetes.quantity import BINARY_SI, Quantity
from apiserver.render.kubernetes.quantitymath import new_quantity

JSON = dict[str, Any]

LATEST_OBSERVED = "kubevirt.io/latest-observed-api-version"
STORAGE_OBSERVED = "kubevirt.io/storage-observed-api-version"
API_LATEST_VERSION = "v1"  # v1.ApiLatestVersion
API_STORAGE_VERSION = "v1"  # v1.ApiStorageVersion
SCHEDULING = "Scheduling"


def set_latest_api_version_annotation(vmi: JSON) -> None:
    """``controller.SetLatestApiVersionAnnotation``."""
    annotations = vmi.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[LATEST_OBSERVED] = API_LATEST_VERSION
    annotations[STORAGE_OBSERVED] = API_STORAGE_VERSION


def pod_created(vmi: JSON, *, qos_class: str, memory_overhead: Quantity) -> JSON:
    """The VMI (as virt-api's webhook left it) once virt-controller has seen it, created its pod, and
    seen the pod stored with ``qos_class`` and the memory overhead ``memory_overhead`` (changed in place
    and returned)."""
    set_latest_api_version_annotation(vmi)
    status = vmi.setdefault("status", {})
    if status.get("phase") in (None, "", "Pending"):
        status["phase"] = SCHEDULING
    if qos_class:
        status["qosClass"] = qos_class
    status.setdefault("memory", {})["memoryOverhead"] = new_quantity(
        memory_overhead.value_ceil(), BINARY_SI
    ).canonical()
    return vmi
