"""Template metadata: reserved labels, ignition and sidecar annotations
(``apiserver/render/admission/metadata.py``)."""

from __future__ import annotations

from hack.oracle.admission.base import INV, NS, VMI_CREATE, check, go_file, sweep, tmeta


def variants() -> None:
    """ValidateVirtualMachineInstanceMetadata."""
    sweep(
        "metadata",
        "template labels={}",
        [
            {"kubevirt.io/created-by": "x"},
            {"kubevirt.io/nodeName": "n"},
            {"kubevirt.io/migrationJobUID": "x"},
            {"kubevirt.io/migrationTargetNodeName": "x"},
            {"kubevirt.io/schedulable": "true"},
            {"kubevirt.io/install-strategy": "x"},
            {"kubevirt.io/domain": "x"},
            {"kubevirt.io/size": "x"},
            {"kubevirt.io": "x"},
            {"app": "x"},
        ],
        lambda vm, v: tmeta(vm).__setitem__("labels", v),
    )
    sweep(
        "metadata",
        "template annotations={}",
        [
            {"kubevirt.io/ignitiondata": "{}"},
            {"kubevirt.io/ignitiondata": ""},
            {"hooks.kubevirt.io/hookSidecars": "[]"},
            {"hooks.kubevirt.io/hookSidecars": ""},
            {"kubevirt.io/ignitiondata": "x", "hooks.kubevirt.io/hookSidecars": "x"},
        ],
        lambda vm, v: tmeta(vm).__setitem__("annotations", v),
        gates=("ExperimentalIgnitionSupport", "Sidecar"),
    )


def checks() -> None:
    go_file(VMI_CREATE, "metadata")
    check(
        "metadata.reserved-labels",
        "ValidateVirtualMachineInstanceMetadata",
        NS,
        "reserved kubevirt.io/ labels",
    )
    check(
        "metadata.ignition",
        "ValidateVirtualMachineInstanceMetadata",
        INV,
        "ExperimentalIgnitionSupport feature gate is not enabled",
        gate="ExperimentalIgnitionSupport",
    )
    check(
        "metadata.sidecar",
        "ValidateVirtualMachineInstanceMetadata",
        INV,
        "sidecar feature gate is not enabled",
        gate="Sidecar",
    )
