"""Feature gates: discontinued ones, and the shapes a KubeVirt configuration gives gates in
(``apiserver/render/admission/featuregates.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    JSON,
    NS,
    add_disk,
    add_iface,
    check,
    devices,
    domain,
    firmware,
    gate_list,
    go_file,
    sweep,
    tmeta,
    variant,
)


# Feature gates as the KubeVirt CR gives them: enabled, disabled, both, misspelt, in a CR or bare, in a CR
# whose configuration virt-api refuses (it then uses its defaults).
def _cr(configuration: Any, status: JSON | None = None, kind: str | None = "KubeVirt") -> JSON:
    cr: JSON = {"apiVersion": "kubevirt.io/v1", "metadata": {"name": "kubevirt", "namespace": "kubevirt"}}
    if kind is not None:
        cr["kind"] = kind
    cr["spec"] = {"configuration": configuration}
    if status is not None:
        cr["status"] = status
    return cr


def _gate_shapes(gate: str) -> list[JSON]:
    on = {"developerConfiguration": {"featureGates": [gate]}}
    return [
        on,
        {"developerConfiguration": {"disabledFeatureGates": [gate]}},
        {"developerConfiguration": {"featureGates": [gate], "disabledFeatureGates": [gate]}},
        {"developerConfiguration": {"featureGates": [gate, gate]}},
        {"developerConfiguration": {"featureGates": [gate.lower()]}},
        {"developerConfiguration": {"featureGates": [f" {gate}"]}},
        {"developerConfiguration": {"featureGates": None}},
        {"developerConfiguration": None},
        {"developerConfiguration": {"featureGates": [gate], "memoryOvercommit": -1}},
        {"developerConfiguration": {"featureGates": [gate], "memoryOvercommit": 150}},
        {"developerConfiguration": {"featureGates": [gate], "cpuAllocationRatio": 0}},
        {
            "developerConfiguration": {"featureGates": [gate]},
            "network": {"defaultNetworkInterface": "masquerade"},
        },
        {"developerConfiguration": {"featureGates": [gate]}, "imagePullPolicy": "Never"},
        _cr(on),
        _cr(on, status={"defaultArchitecture": "arm64"}),
        _cr(on, kind=None),
        _cr({**on, "imagePullPolicy": "Sometimes"}),
        _cr(None),
    ]


def discontinued_variants() -> None:
    """Discontinued feature gates (ValidateFeatureGates) and deprecated ones."""
    sweep(
        "gates",
        "interface binding={} with discontinued gates on",
        [{"passt": {}}, {"macvtap": {}}, {"masquerade": {}}],
        lambda vm, v: add_iface(vm, {"name": "old", **v}),
        configs=(
            gate_list("Passt"),
            gate_list("Macvtap"),
            gate_list("Macvtap", "Passt"),
            gate_list("ExperimentalVirtiofsSupport", "PasstIPStackMigration"),
            gate_list(
                "DockerSELinuxMCSWorkaround",
                "MultiArchitecture",
                "DisableMDEVConfiguration",
                "HotplugVolumes",
            ),
            {"developerConfiguration": {"featureGates": ["Macvtap"], "disabledFeatureGates": ["Macvtap"]}},
        ),
    )


def gate_shape_variants() -> None:
    """A gated input under each configuration shape of its gate."""
    for label, gate, change in (
        (
            "hostDisk volume",
            "HostDisk",
            lambda vm: add_disk(vm, "hd", {}, {"hostDisk": {"path": "/x", "type": "Disk"}}),
        ),
        (
            "cdrom without a volume",
            "DeclarativeHotplugVolumes",
            lambda vm: add_disk(vm, "emptycd", {"cdrom": {"bus": "sata"}}, {}),
        ),
        ("passt binding", "PasstBinding", lambda vm: add_iface(vm, {"name": "p", "passtBinding": {}})),
        (
            "downwardMetrics volume",
            "DownwardMetrics",
            lambda vm: add_disk(vm, "dm", {}, {"downwardMetrics": {}}),
        ),
        ("VSOCK", "VSOCK", lambda vm: devices(vm).__setitem__("autoattachVSOCK", True)),
        (
            "SEV",
            "WorkloadEncryptionSEV",
            lambda vm: (
                domain(vm).__setitem__("launchSecurity", {"sev": {}}),
                firmware(vm).__setitem__("bootloader", {"efi": {"secureBoot": False}}),
            ),
        ),
        (
            "ignition annotation",
            "ExperimentalIgnitionSupport",
            lambda vm: tmeta(vm).__setitem__("annotations", {"kubevirt.io/ignitiondata": "{}"}),
        ),
    ):
        variant("gates", f"{label} ({gate}) in each configuration shape", change, configs=_gate_shapes(gate))


def checks() -> None:
    go_file("pkg/virt-config/featuregate/validator.go", "gates")
    check("gates.discontinued", "ValidateFeatureGates", NS, "is discontinued since", gate="Passt, Macvtap")
