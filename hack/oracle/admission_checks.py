"""The checks of KubeVirt's VM webhook on a CREATE (``VMsAdmitter.Admit`` at d923fdb), with inputs for each.

Written from KubeVirt's code, independently of the golden cases: every ``StatusCause`` the webhook can
return on a VM CREATE is a :class:`Check` (the KubeVirt function, the feature gate it depends on, the
cause it gives); every area has a list of :class:`Variant` changes that break its checks, just miss
them, or sit on their boundaries. ``hack/oracle/fuzz_admission.py`` applies them to a few base VMs, with the
relevant gates on and off, asks KubeVirt (the ``expand-admit`` oracle) and ``validate=True``, and diffs.
It also writes docs/admission-rules.md from :data:`CHECKS`, with a break and a near-miss input per check
taken from what the oracle answered.
"""

from __future__ import annotations

import argparse
import collections
import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
Mutation = Callable[[JSON], Any]

# --- base VMs (written for this generator; the golden cases are not read) ---------------------------

_CLOUD_INIT = "#cloud-config\npassword: fedora\nchpasswd: { expire: False }\n"


def _base_cd() -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "cd", "namespace": "default"},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "metadata": {"labels": {"app": "cd"}},
                "spec": {
                    "domain": {
                        "resources": {"requests": {"memory": "512Mi"}},
                        "devices": {
                            "disks": [
                                {"name": "root", "disk": {"bus": "virtio"}},
                                {"name": "init", "disk": {"bus": "virtio"}},
                            ],
                            "interfaces": [{"name": "default", "masquerade": {}}],
                        },
                    },
                    "networks": [{"name": "default", "pod": {}}],
                    "volumes": [
                        {
                            "name": "root",
                            "containerDisk": {"image": "quay.io/kubevirt/cirros-container-disk-demo"},
                        },
                        {"name": "init", "cloudInitNoCloud": {"userData": _CLOUD_INIT}},
                    ],
                },
            },
        },
    }


def _base_dv() -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "dv", "namespace": "default"},
        "spec": {
            "running": False,
            "dataVolumeTemplates": [
                {
                    "metadata": {"name": "dv-root"},
                    "spec": {
                        "storage": {"resources": {"requests": {"storage": "8Gi"}}},
                        "source": {"registry": {"url": "docker://quay.io/containerdisks/centos-stream:9"}},
                    },
                }
            ],
            "template": {
                "metadata": {"labels": {"app": "dv"}, "annotations": {"note": "x"}},
                "spec": {
                    "domain": {
                        "cpu": {"sockets": 1, "cores": 2, "threads": 1},
                        "memory": {"guest": "2Gi"},
                        "resources": {
                            "requests": {"memory": "2Gi", "cpu": "2"},
                            "limits": {"memory": "2Gi", "cpu": "2"},
                        },
                        "firmware": {"bootloader": {"efi": {"secureBoot": False}}},
                        "devices": {
                            "disks": [
                                {"name": "root", "disk": {"bus": "virtio"}, "bootOrder": 1},
                                {"name": "data", "disk": {"bus": "scsi"}},
                            ],
                            "interfaces": [
                                {"name": "default", "bridge": {}},
                                {"name": "storage", "bridge": {}},
                            ],
                        },
                    },
                    "networks": [
                        {"name": "default", "pod": {}},
                        {"name": "storage", "multus": {"networkName": "storage-net"}},
                    ],
                    "volumes": [
                        {"name": "root", "dataVolume": {"name": "dv-root"}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}},
                    ],
                },
            },
        },
    }


def _base_it() -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "it", "namespace": "default"},
        "spec": {
            "runStrategy": "Halted",
            "instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": "c1.medium"},
            "preference": {"kind": "VirtualMachinePreference", "name": "linux"},
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [
                        {"name": "root", "containerDisk": {"image": "quay.io/containerdisks/debian:12"}},
                    ],
                }
            },
        },
    }


_IT_OBJECTS: list[JSON] = [
    {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "c1.medium"},
        "spec": {"cpu": {"guest": 2}, "memory": {"guest": "4Gi"}},
    },
    {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "linux", "namespace": "default"},
        "spec": {
            "devices": {"preferredDiskBus": "virtio", "preferredInterfaceModel": "virtio"},
            "requirements": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}},
        },
    },
]


def _base_min() -> JSON:
    """No networks, no disks: virt-api's defaults add the pod network and a disk per volume."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "min", "namespace": "default"},
        "spec": {
            "runStrategy": "Manual",
            "template": {
                "spec": {
                    "domain": {"memory": {"guest": "1Gi"}, "devices": {}},
                    "volumes": [{"name": "boot", "containerDisk": {"image": "registry.example/os:1.0"}}],
                }
            },
        },
    }


@dataclass(frozen=True)
class Base:
    name: str
    vm: Callable[[], JSON]
    objects: list[JSON] = field(default_factory=list)


BASES = [
    Base("cd", _base_cd),
    Base("dv", _base_dv),
    Base("it", _base_it, _IT_OBJECTS),
    Base("min", _base_min),
]

# --- helpers that reach into a VM ----------------------------------------------------------------------


def tspec(vm: JSON) -> JSON:
    template = vm["spec"].setdefault("template", {})
    if not isinstance(template.get("spec"), dict):
        template["spec"] = {}
    return template["spec"]  # type: ignore[no-any-return]


def tmeta(vm: JSON) -> JSON:
    template = vm["spec"].setdefault("template", {})
    if not isinstance(template.get("metadata"), dict):
        template["metadata"] = {}
    return template["metadata"]  # type: ignore[no-any-return]


def _sub(parent: JSON, key: str) -> JSON:
    if not isinstance(parent.get(key), dict):
        parent[key] = {}
    return parent[key]  # type: ignore[no-any-return]


def domain(vm: JSON) -> JSON:
    return _sub(tspec(vm), "domain")


def devices(vm: JSON) -> JSON:
    return _sub(domain(vm), "devices")


def cpu(vm: JSON) -> JSON:
    return _sub(domain(vm), "cpu")


def memory(vm: JSON) -> JSON:
    return _sub(domain(vm), "memory")


def firmware(vm: JSON) -> JSON:
    return _sub(domain(vm), "firmware")


def features(vm: JSON) -> JSON:
    return _sub(domain(vm), "features")


def resources(vm: JSON, group: str) -> JSON:
    return _sub(_sub(domain(vm), "resources"), group)


def _append(parent: JSON, key: str, *values: Any) -> None:
    if not isinstance(parent.get(key), list):
        parent[key] = []
    parent[key].extend(copy.deepcopy(v) for v in values)


def add_volume(vm: JSON, *volumes: JSON) -> None:
    _append(tspec(vm), "volumes", *volumes)


def add_disk(vm: JSON, name: str, disk: JSON | None = None, volume: JSON | None = None) -> None:
    """A disk ``name`` (``disk`` holds its other members) and, unless ``volume`` is {}, a volume for it."""
    _append(devices(vm), "disks", {"name": name, **(disk or {})})
    if volume != {}:
        add_volume(vm, {"name": name, **(volume or {"emptyDisk": {"capacity": "1Gi"}})})


def add_iface(vm: JSON, iface: JSON, network: JSON | None = None) -> None:
    """An interface and (unless ``network`` is {}) a network of the same name (multus unless given)."""
    _append(devices(vm), "interfaces", iface)
    if network != {}:
        _append(
            tspec(vm),
            "networks",
            {"name": iface.get("name", ""), **(network or {"multus": {"networkName": "n1"}})},
        )


def drop_networks(vm: JSON) -> None:
    tspec(vm).pop("networks", None)
    devices(vm).pop("interfaces", None)
    devices(vm)["autoattachPodInterface"] = False


def setp(vm: JSON, path: str, value: Any) -> None:
    """Set a dotted path under the VM (``spec.template.spec.domain.cpu.cores``), creating objects."""
    keys = path.split(".")
    cur = vm
    for key in keys[:-1]:
        cur = _sub(cur, key)
    cur[keys[-1]] = copy.deepcopy(value)


def delp(vm: JSON, path: str) -> None:
    keys = path.split(".")
    cur: Any = vm
    for key in keys[:-1]:
        cur = cur.get(key) if isinstance(cur, dict) else None
    if isinstance(cur, dict):
        cur.pop(keys[-1], None)


# --- variants ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One change to a base VM: a label (shown in reports and the rules table) and what it does.

    ``gates``: feature gates whose state the change is run with both ways; ``configs``: KubeVirt
    configurations (beyond the gates) it is also run under.
    """

    area: str
    label: str
    apply: Mutation
    gates: tuple[str, ...] = ()
    configs: tuple[JSON, ...] = ()
    # Objects (instancetypes, preferences, a running VMI) added to the base's.
    objects: tuple[JSON, ...] = ()


VARIANTS: list[Variant] = []


def variant(
    area: str,
    label: str,
    fn: Mutation,
    gates: Iterable[str] = (),
    configs: Iterable[JSON] = (),
    objects: Iterable[JSON] = (),
) -> None:
    VARIANTS.append(Variant(area, label, fn, tuple(gates), tuple(configs), tuple(objects)))


def sweep(
    area: str,
    label: str,
    values: Iterable[Any],
    fn: Callable[[JSON, Any], Any],
    gates: Iterable[str] = (),
    configs: Iterable[JSON] = (),
) -> None:
    """One variant per value: ``label`` with ``{}`` replaced by the value's JSON."""
    import json

    def show(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)[:60]

    for value in values:
        shown = (
            label.format(*map(show, value))
            if isinstance(value, tuple) and label.count("{}") == len(value)
            else label.format(show(value))
        )
        variant(
            area,
            shown,
            lambda vm, v=value: fn(vm, v),
            gates,
            configs,
        )


# --- values ------------------------------------------------------------------------------------------

NAMES = [
    "",
    "a",
    "A",
    "a-b",
    "-a",
    "a-",
    "a_b",
    "a.b",
    "a..b",
    ".a",
    "a.",
    "1",
    "1a",
    "a" * 63,
    "a" * 64,
    "a." + "b" * 250,
    "a" * 253,
    "a" * 254,
    "h\u00e9llo",
    "a b",
    "a/b",
    "UPPER",
    "x" * 256,
]
MEMORY = [
    "1Gi",
    "1G",
    "1024Mi",
    "1e9",
    "1E9",
    "1.5Gi",
    "0",
    "0Mi",
    "-1Gi",
    "-1",
    "1",
    "100m",
    "0.5",
    "512Mi",
    "1Ki",
    "999k",
    "1M",
    "1000000",
    "999999",
    "1000001",
    "2Gi",
    "3Gi",
    "1Ti",
    ".5Gi",
    "5.",
    "+1Gi",
    "1e3",
    "1e-3",
    "8Ei",
    "1.1Gi",
    "1536Mi",
    "2049Mi",
    "128Mi",
    "1k",
    "1m",
    1073741824,
    1.5,
    0,
    -5,
    "0x10",
    "",
    "1gi",
    " 1Gi",
]
CPU = [
    "1",
    "2",
    "3",
    "0",
    "-1",
    "500m",
    "1500m",
    "1.5",
    "2000m",
    "0.5",
    "100m",
    "2.0",
    "1e3",
    "1k",
    "1001m",
    "999m",
    2,
    2.5,
    "4",
]
PORTS = [0, 1, 80, 65535, 65536, -1, 100000, 2147483647]
BOOLS = [True, False, None]


def _gate_list(*gates: str) -> JSON:
    return {"developerConfiguration": {"featureGates": list(gates)}}


LIVE_UPDATE_OFF: JSON = {"vmRolloutStrategy": "Stage"}
LIVE_UPDATE_ON: JSON = {"vmRolloutStrategy": "LiveUpdate"}


# ======================================================================================================
# Variants, area by area, in the order of ValidateVirtualMachineInstanceSpec and VMsAdmitter.Admit.
# ======================================================================================================

# --- hostname / subdomain (validateHostNameNotConformingToDNSLabelRules, validateSubdomainDNSSubdomainRules)
sweep("dns", "hostname={}", NAMES, lambda vm, v: tspec(vm).__setitem__("hostname", v))
sweep("dns", "subdomain={}", NAMES, lambda vm, v: tspec(vm).__setitem__("subdomain", v))

# --- memory requests / limits / hugepages / guest -----------------------------------------------------
sweep(
    "memory", "requests.memory={}", MEMORY, lambda vm, v: resources(vm, "requests").__setitem__("memory", v)
)
sweep("memory", "limits.memory={}", MEMORY, lambda vm, v: resources(vm, "limits").__setitem__("memory", v))
sweep(
    "memory",
    "limits.memory={} < requests 1Gi",
    ["512Mi", "1Gi", "1023Mi", "1025Mi", "1G", "2Gi"],
    lambda vm, v: (
        resources(vm, "requests").__setitem__("memory", "1Gi"),
        resources(vm, "limits").__setitem__("memory", v),
    ),
)
sweep(
    "memory", "guest={}", MEMORY, lambda vm, v: memory(vm).__setitem__("guest", v), configs=(LIVE_UPDATE_OFF,)
)
sweep(
    "memory",
    "guest={} with limits 1Gi",
    ["512Mi", "1Gi", "1G", "1025Mi", "2Gi", "1.5Gi"],
    lambda vm, v: (memory(vm).__setitem__("guest", v), resources(vm, "limits").__setitem__("memory", "1Gi")),
    configs=(LIVE_UPDATE_OFF, LIVE_UPDATE_ON),
)
_PAGES = ["2Mi", "1Gi", "4Ki", "3Mi", "bogus", "", "1G", "0", "-2Mi", "1.5Mi", "2M", "100Mi"]
sweep(
    "memory",
    "hugepages pageSize={}",
    _PAGES,
    lambda vm, v: memory(vm).__setitem__("hugepages", {"pageSize": v}),
)
sweep(
    "memory",
    "hugepages 1Gi, requests={}",
    ["1Gi", "2Gi", "1536Mi", "512Mi", "3Gi", "1G", "0"],
    lambda vm, v: (
        memory(vm).__setitem__("hugepages", {"pageSize": "1Gi"}),
        resources(vm, "requests").__setitem__("memory", v),
    ),
)
sweep(
    "memory",
    "hugepages 2Mi, guest={} no requests",
    ["1Gi", "3Mi", "1G", "100Mi", "1Mi", "2Mi"],
    lambda vm, v: (
        domain(vm).pop("resources", None),
        memory(vm).update({"hugepages": {"pageSize": "2Mi"}, "guest": v}),
    ),
)
sweep(
    "memory",
    "hugepages 2Mi, limits={} only",
    ["1Gi", "3Mi", "1G", "1Mi"],
    lambda vm, v: (
        domain(vm).pop("resources", None),
        memory(vm).pop("guest", None),
        memory(vm).__setitem__("hugepages", {"pageSize": "2Mi"}),
        resources(vm, "limits").__setitem__("memory", v),
    ),
)
variant("memory", "hugepages {} (no pageSize)", lambda vm: memory(vm).__setitem__("hugepages", {}))
sweep(
    "memory",
    "reservedOverhead={}",
    [{"addedOverhead": "100Mi"}, {}, {"memLock": "Required"}],
    lambda vm, v: memory(vm).__setitem__("reservedOverhead", v),
    gates=("ReservedOverheadMemlock",),
)

# --- live update (validateLiveUpdateFeatures, ValidateLiveUpdateMemory) ---------------------------------
sweep(
    "memory",
    "live update guest={} maxGuest=4Gi",
    ["1Gi", "4Gi", "5Gi", "1000Mi", "1G", "129Mi", "128Mi", "1Gi+1"],
    lambda vm, v: memory(vm).update({"guest": v if v != "1Gi+1" else "1073741825", "maxGuest": "4Gi"}),
    configs=(LIVE_UPDATE_ON, LIVE_UPDATE_OFF),
)
sweep(
    "memory",
    "live update maxGuest={} guest=1Gi",
    ["1Gi", "4Gi", "4000Mi", "3G", "129Mi", "0"],
    lambda vm, v: memory(vm).update({"guest": "1Gi", "maxGuest": v}),
    configs=(LIVE_UPDATE_ON,),
)
variant(
    "memory",
    "live update maxGuest without guest",
    lambda vm: (memory(vm).pop("guest", None), memory(vm).__setitem__("maxGuest", "4Gi")),
    configs=(LIVE_UPDATE_ON,),
)
sweep(
    "memory",
    "live update maxGuest on architecture={}",
    ["arm64", "s390x", "amd64"],
    lambda vm, v: (
        memory(vm).update({"guest": "2Gi", "maxGuest": "4Gi"}),
        tspec(vm).__setitem__("architecture", v),
    ),
    configs=(LIVE_UPDATE_ON,),
)
variant(
    "memory",
    "live update maxGuest with realtime",
    lambda vm: (memory(vm).update({"guest": "1Gi", "maxGuest": "4Gi"}), cpu(vm).__setitem__("realtime", {})),
    configs=(LIVE_UPDATE_ON,),
)
variant(
    "memory",
    "live update maxGuest with numa passthrough",
    lambda vm: (
        memory(vm).update({"guest": "1Gi", "maxGuest": "4Gi"}),
        cpu(vm).__setitem__("numa", {"guestMappingPassthrough": {}}),
    ),
    configs=(LIVE_UPDATE_ON,),
)
variant(
    "memory",
    "live update maxGuest with SEV",
    lambda vm: (
        memory(vm).update({"guest": "1Gi", "maxGuest": "4Gi"}),
        domain(vm).__setitem__("launchSecurity", {"sev": {}}),
    ),
    configs=(LIVE_UPDATE_ON,),
)
sweep(
    "memory",
    "live update 1Gi hugepages guest={} maxGuest=4Gi",
    ["1Gi", "1536Mi", "3Gi"],
    lambda vm, v: memory(vm).update({"guest": v, "maxGuest": "4Gi", "hugepages": {"pageSize": "1Gi"}}),
    configs=(LIVE_UPDATE_ON,),
)
sweep(
    "cpu",
    "live update sockets={} maxSockets=2",
    [1, 2, 3, 0],
    lambda vm, v: cpu(vm).update({"sockets": v, "maxSockets": 2}),
    configs=(LIVE_UPDATE_ON, LIVE_UPDATE_OFF),
)

# --- emulated machine ---------------------------------------------------------------------------------
_MACHINES = [
    "q35",
    "pc-q35-rhel9.4.0",
    "pc-i440fx-2.12",
    "virt",
    "s390-ccw-virtio",
    "bogus",
    "Q35",
    "q35*",
    "pc-q35",
    "[q35]",
]
sweep("firmware", "machine.type={}", _MACHINES, lambda vm, v: domain(vm).__setitem__("machine", {"type": v}))
sweep(
    "firmware",
    "machine.type={} on arm64",
    ["virt", "virt-rhel9", "q35", ""],
    lambda vm, v: (
        tspec(vm).__setitem__("architecture", "arm64"),
        domain(vm).__setitem__("machine", {"type": v}),
    ),
)
sweep(
    "firmware",
    "machine.type={} with emulatedMachines config",
    ["q35", "pc-i440fx-2.12", "custom-1"],
    lambda vm, v: domain(vm).__setitem__("machine", {"type": v}),
    configs=(
        {"emulatedMachines": ["pc-i440fx*", "custom-?"]},
        {"architectureConfiguration": {"amd64": {"emulatedMachines": ["pc-*"]}}},
    ),
)
variant("firmware", "machine {} (empty type)", lambda vm: domain(vm).__setitem__("machine", {}))

# --- ACPI (validateFirmwareACPI, validateACPIRef) -------------------------------------------------------
sweep(
    "firmware",
    "acpi={}",
    [
        {},
        {"slicNameRef": "slic"},
        {"msdmNameRef": "msdm"},
        {"slicNameRef": "slic", "msdmNameRef": "msdm"},
        {"slicNameRef": "nope"},
        {"slicNameRef": "root"},
    ],
    lambda vm, v: (
        firmware(vm).__setitem__("acpi", v),
        add_volume(
            vm, {"name": "slic", "secret": {"secretName": "s"}}, {"name": "msdm", "configMap": {"name": "c"}}
        ),
    ),
)

# --- CPU requests / limits ----------------------------------------------------------------------------
sweep("cpu", "requests.cpu={}", CPU, lambda vm, v: resources(vm, "requests").__setitem__("cpu", v))
sweep("cpu", "limits.cpu={}", CPU, lambda vm, v: resources(vm, "limits").__setitem__("cpu", v))
sweep(
    "cpu",
    "requests.cpu={} limits 1",
    ["1", "1001m", "2", "999m", "1.5"],
    lambda vm, v: (
        resources(vm, "requests").__setitem__("cpu", v),
        resources(vm, "limits").__setitem__("cpu", "1"),
    ),
)

# --- dedicated CPU placement (validateCpuPinning and its helpers) --------------------------------------
_DEDICATED = {"dedicatedCpuPlacement": True}


def _dedicated(vm: JSON, **cpu_members: Any) -> None:
    cpu(vm).update({**_DEDICATED, **cpu_members})


sweep(
    "cpu",
    "dedicated, requests.cpu={} limits.cpu=2",
    ["2", "1", "1.5", "2000m", "0", "3"],
    lambda vm, v: (
        _dedicated(vm),
        resources(vm, "requests").__setitem__("cpu", v),
        resources(vm, "limits").__setitem__("cpu", "2"),
    ),
)
sweep(
    "cpu",
    "dedicated, limits.cpu={} only",
    ["2", "1.5", "500m", "0"],
    lambda vm, v: (
        _dedicated(vm),
        resources(vm, "limits").__setitem__("cpu", v),
        resources(vm, "requests").pop("cpu", None),
    ),
)
sweep(
    "cpu",
    "dedicated, cores={} requests.cpu=2",
    [0, 1, 2, 4],
    lambda vm, v: (
        _dedicated(vm, cores=v, sockets=1, threads=1),
        resources(vm, "requests").__setitem__("cpu", "2"),
    ),
)
sweep(
    "cpu",
    "dedicated, threads={}",
    [1, 2, 3],
    lambda vm, v: _dedicated(vm, threads=v),
    configs=({"architectureConfiguration": {"defaultArchitecture": "arm64"}},),
)
sweep(
    "cpu",
    "dedicated, arch={} threads 2",
    ["arm64", "amd64", "s390x", ""],
    lambda vm, v: (_dedicated(vm, threads=2), tspec(vm).__setitem__("architecture", v)),
)
variant(
    "cpu",
    "dedicated, no cpu, no memory at all",
    lambda vm: (
        _dedicated(vm),
        domain(vm).pop("resources", None),
        memory(vm).clear(),
        cpu(vm).update({"cores": 0, "sockets": 0, "threads": 0}),
    ),
)
sweep(
    "cpu",
    "dedicated, memory requests={} limits=1Gi",
    ["1Gi", "2Gi", "1024Mi", "1G"],
    lambda vm, v: (
        _dedicated(vm),
        resources(vm, "requests").__setitem__("memory", v),
        resources(vm, "limits").__setitem__("memory", "1Gi"),
    ),
)
sweep(
    "cpu",
    "dedicated, only memory.guest={}",
    ["1Gi", "0"],
    lambda vm, v: (
        _dedicated(vm),
        domain(vm).pop("resources", None),
        memory(vm).clear(),
        memory(vm).__setitem__("guest", v),
    ),
)
variant(
    "cpu",
    "dedicated, only hugepages",
    lambda vm: (
        _dedicated(vm),
        domain(vm).pop("resources", None),
        memory(vm).clear(),
        memory(vm).__setitem__("hugepages", {"pageSize": "2Mi"}),
    ),
)

# --- NUMA, isolateEmulatorThread, features, hotplug, realtime ------------------------------------------
sweep(
    "cpu",
    "numa guestMappingPassthrough, dedicated={} hugepages={}",
    [(True, True), (True, False), (False, True), (False, False)],
    lambda vm, v: (
        cpu(vm).update({"numa": {"guestMappingPassthrough": {}}, "dedicatedCpuPlacement": v[0]})
        or (memory(vm).__setitem__("hugepages", {"pageSize": "2Mi"}) if v[1] else None)
    ),
    gates=("NUMA",),
)
variant("cpu", "numa {} (no passthrough)", lambda vm: cpu(vm).__setitem__("numa", {}))
sweep(
    "cpu",
    "isolateEmulatorThread, dedicated={}",
    [True, False],
    lambda vm, v: cpu(vm).update({"isolateEmulatorThread": True, "dedicatedCpuPlacement": v}),
)
sweep(
    "cpu",
    "cpu feature policy={}",
    ["", "force", "require", "optional", "disable", "forbid", "Force", "bogus", "allow"],
    lambda vm, v: cpu(vm).__setitem__("features", [{"name": "vmx", "policy": v}, {"name": "pcid"}]),
)
sweep(
    "cpu",
    "sockets={} maxSockets=4",
    [1, 4, 5, 0],
    lambda vm, v: cpu(vm).update({"sockets": v, "maxSockets": 4}),
)
sweep(
    "cpu",
    "realtime, dedicated={} numa={}",
    [(True, True), (True, False), (False, True), (False, False)],
    lambda vm, v: cpu(vm).update(
        {
            "realtime": {"mask": "0"},
            "dedicatedCpuPlacement": v[0],
            **({"numa": {"guestMappingPassthrough": {}}} if v[1] else {}),
        }
    ),
)

# --- start strategy -------------------------------------------------------------------------------------
sweep(
    "devices",
    "startStrategy={}",
    ["Paused", "paused", "", "Running", "bogus"],
    lambda vm, v: tspec(vm).__setitem__("startStrategy", v),
)
variant(
    "devices",
    "startStrategy Paused + livenessProbe",
    lambda vm: tspec(vm).update({"startStrategy": "Paused", "livenessProbe": {"guestAgentPing": {}}}),
)

# --- affinity (validateAffinity and the k8s helpers) ----------------------------------------------------
_OPS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "bogus", ""]
_KEYS = [
    "zone",
    "topology.kubernetes.io/zone",
    "",
    "a/b/c",
    "-bad",
    "x" * 64,
    "example.com/" + "x" * 63,
    "UPPER.example/key",
    "/k",
    "k/",
]


def _node_term(expressions: list[JSON] | None = None, fields: list[JSON] | None = None) -> JSON:
    term: JSON = {}
    if expressions is not None:
        term["matchExpressions"] = expressions
    if fields is not None:
        term["matchFields"] = fields
    return term


def _node_affinity(vm: JSON, **na: Any) -> None:
    tspec(vm)["affinity"] = {"nodeAffinity": na}


for _op in _OPS:
    for _vals in ([], ["a"], ["1", "2"]):
        variant(
            "scheduling",
            f"nodeAffinity required {_op} values={_vals}",
            lambda vm, o=_op, v=_vals: _node_affinity(
                vm,
                requiredDuringSchedulingIgnoredDuringExecution={
                    "nodeSelectorTerms": [_node_term([{"key": "zone", "operator": o, "values": v}])]
                },
            ),
        )
sweep(
    "scheduling",
    "nodeAffinity required key={}",
    _KEYS,
    lambda vm, v: _node_affinity(
        vm,
        requiredDuringSchedulingIgnoredDuringExecution={
            "nodeSelectorTerms": [_node_term([{"key": v, "operator": "Exists"}])]
        },
    ),
)
variant(
    "scheduling",
    "nodeAffinity required no terms",
    lambda vm: _node_affinity(vm, requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": []}),
)
variant(
    "scheduling",
    "nodeAffinity required empty term",
    lambda vm: _node_affinity(vm, requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": [{}]}),
)
for _op in ("In", "NotIn", "Exists", "Gt"):
    for _key, _vals in (
        ("metadata.name", ["node-1"]),
        ("metadata.name", ["a", "b"]),
        ("metadata.name", ["Bad_Node"]),
        ("spec.nodeName", ["n"]),
        ("metadata.name", []),
    ):
        variant(
            "scheduling",
            f"nodeAffinity matchFields {_key} {_op} {_vals}",
            lambda vm, o=_op, k=_key, v=_vals: _node_affinity(
                vm,
                requiredDuringSchedulingIgnoredDuringExecution={
                    "nodeSelectorTerms": [_node_term(fields=[{"key": k, "operator": o, "values": v}])]
                },
            ),
        )
sweep(
    "scheduling",
    "nodeAffinity preferred weight={}",
    [0, 1, 100, 101, -1],
    lambda vm, v: _node_affinity(
        vm,
        preferredDuringSchedulingIgnoredDuringExecution=[
            {"weight": v, "preference": _node_term([{"key": "zone", "operator": "In", "values": ["a"]}])}
        ],
    ),
)
variant(
    "scheduling",
    "nodeAffinity preferred bad weight and bad term",
    lambda vm: _node_affinity(
        vm,
        preferredDuringSchedulingIgnoredDuringExecution=[
            {"weight": 0, "preference": _node_term([{"key": "", "operator": "In"}])}
        ],
    ),
)


def _pod_term(**over: Any) -> JSON:
    term: JSON = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    term.update(over)
    return {k: v for k, v in term.items() if v is not None}


_SELECTORS: list[Any] = [
    {"matchLabels": {"app": "x"}},
    {"matchLabels": {"bad key": "x"}},
    {"matchLabels": {"app": "bad value!"}},
    {"matchLabels": {"app": "x" * 64}},
    {"matchLabels": {"": "x"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]},
    {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
    {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
    {"matchExpressions": [{"key": "app", "operator": "", "values": ["1"]}]},
    {"matchExpressions": [{"key": "bad key", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["bad value!"]}]},
    {},
    None,
]
for _kind in ("podAffinity", "podAntiAffinity"):
    sweep(
        "scheduling",
        f"{_kind} required labelSelector={{}}",
        _SELECTORS,
        lambda vm, v, k=_kind: tspec(vm).__setitem__(
            "affinity", {k: {"requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(labelSelector=v)]}}
        ),
    )
    sweep(
        "scheduling",
        f"{_kind} required topologyKey={{}}",
        ["", "zone", "bad key", "a/b/c", "x" * 64],
        lambda vm, v, k=_kind: tspec(vm).__setitem__(
            "affinity", {k: {"requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(topologyKey=v)]}}
        ),
    )
    sweep(
        "scheduling",
        f"{_kind} namespaces={{}}",
        [["default"], ["Bad_NS"], [""], ["a" * 64], ["ok", "-bad"]],
        lambda vm, v, k=_kind: tspec(vm).__setitem__(
            "affinity", {k: {"requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(namespaces=v)]}}
        ),
    )
    sweep(
        "scheduling",
        f"{_kind} namespaceSelector={{}}",
        _SELECTORS[:8],
        lambda vm, v, k=_kind: tspec(vm).__setitem__(
            "affinity",
            {k: {"requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(namespaceSelector=v)]}},
        ),
    )
    sweep(
        "scheduling",
        f"{_kind} preferred weight={{}}",
        [0, 1, 100, 101],
        lambda vm, v, k=_kind: tspec(vm).__setitem__(
            "affinity",
            {
                k: {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": v, "podAffinityTerm": _pod_term()}
                    ]
                }
            },
        ),
    )
    variant(
        "scheduling",
        f"{_kind} preferred weight 0 and empty topologyKey",
        lambda vm, k=_kind: tspec(vm).__setitem__(
            "affinity",
            {
                k: {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "podAffinityTerm": _pod_term(topologyKey="")}
                    ]
                }
            },
        ),
    )

# --- topology spread constraints ------------------------------------------------------------------------


def _tsc(**over: Any) -> JSON:
    c: JSON = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    c.update(over)
    return {k: v for k, v in c.items() if v is not None}


sweep(
    "scheduling",
    "topologySpread maxSkew={}",
    [0, 1, -1, 2],
    lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [_tsc(maxSkew=v)]),
)
sweep(
    "scheduling",
    "topologySpread topologyKey={}",
    ["", "zone", "bad key", "a/b/c"],
    lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [_tsc(topologyKey=v)]),
)
sweep(
    "scheduling",
    "topologySpread whenUnsatisfiable={}",
    ["DoNotSchedule", "ScheduleAnyway", "", "bogus"],
    lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [_tsc(whenUnsatisfiable=v)]),
)
sweep(
    "scheduling",
    "topologySpread labelSelector={}",
    _SELECTORS[:13],
    lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [_tsc(labelSelector=v)]),
)
variant(
    "scheduling",
    "topologySpread duplicate pair",
    lambda vm: tspec(vm).__setitem__(
        "topologySpreadConstraints", [_tsc(), _tsc(maxSkew=2), _tsc(whenUnsatisfiable="ScheduleAnyway")]
    ),
)
variant(
    "scheduling",
    "topologySpread three duplicates and bad members",
    lambda vm: tspec(vm).__setitem__(
        "topologySpreadConstraints",
        [_tsc(maxSkew=0, topologyKey=""), _tsc(topologyKey=""), _tsc(topologyKey="")],
    ),
)

# --- networks and interfaces (pkg/network/admitter) -----------------------------------------------------
variant(
    "networks", "two pod networks", lambda vm: add_iface(vm, {"name": "pod2", "masquerade": {}}, {"pod": {}})
)
variant(
    "networks",
    "two multus default networks",
    lambda vm: (
        add_iface(vm, {"name": "m1", "bridge": {}}, {"multus": {"networkName": "a", "default": True}}),
        add_iface(vm, {"name": "m2", "bridge": {}}, {"multus": {"networkName": "b", "default": True}}),
    ),
)
variant(
    "networks",
    "multus default beside pod",
    lambda vm: add_iface(vm, {"name": "m1", "bridge": {}}, {"multus": {"networkName": "a", "default": True}}),
)
variant(
    "networks",
    "multus default replacing pod",
    lambda vm: (
        drop_networks(vm),
        add_iface(vm, {"name": "m1", "bridge": {}}, {"multus": {"networkName": "a", "default": True}}),
    ),
)
sweep(
    "networks",
    "network source={}",
    [
        {},
        {"pod": {}, "multus": {"networkName": "x"}},
        {"multus": {}},
        {"multus": {"networkName": ""}},
        {"multus": {"networkName": "ns/x"}},
        {"resourceClaim": {"claimName": "c", "requestName": "r"}},
    ],
    lambda vm, v: add_iface(vm, {"name": "extra", "bridge": {}}, v),
    gates=("NetworkDevicesWithDRA",),
)
variant(
    "networks",
    "two multus without networkName",
    lambda vm: (
        add_iface(vm, {"name": "e1", "bridge": {}}, {"multus": {}}),
        add_iface(vm, {"name": "e2", "bridge": {}}, {"multus": {}}),
    ),
)
variant(
    "networks",
    "duplicate network name",
    lambda vm: _append(tspec(vm), "networks", {"name": "default", "multus": {"networkName": "x"}}),
)
variant(
    "networks",
    "network without interface",
    lambda vm: _append(tspec(vm), "networks", {"name": "lonely", "multus": {"networkName": "x"}}),
)
variant(
    "interfaces", "interface without network", lambda vm: add_iface(vm, {"name": "lonely", "bridge": {}}, {})
)
variant(
    "interfaces",
    "duplicate interface name",
    lambda vm: _append(devices(vm), "interfaces", {"name": "default", "masquerade": {}}),
)
variant("interfaces", "drop all networks keep interfaces", lambda vm: tspec(vm).pop("networks", None))
variant("interfaces", "drop all interfaces keep networks", lambda vm: devices(vm).pop("interfaces", None))
sweep(
    "interfaces",
    "state={} on bridge secondary",
    ["", "absent", "down", "up", "Absent", "bogus"],
    lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "state": v}),
)
sweep(
    "interfaces",
    "state={} on masquerade pod",
    ["absent", "down", "up", "bogus"],
    lambda vm, v: (
        drop_networks(vm),
        add_iface(vm, {"name": "default", "masquerade": {}, "state": v}, {"pod": {}}),
    ),
)
sweep(
    "interfaces",
    "state={} on bridge pod (default network)",
    ["absent", "down"],
    lambda vm, v: (
        drop_networks(vm),
        add_iface(vm, {"name": "default", "bridge": {}, "state": v}, {"pod": {}}),
    ),
)
sweep(
    "interfaces",
    "state={} on bridge multus default",
    ["absent", "up"],
    lambda vm, v: (
        drop_networks(vm),
        add_iface(
            vm, {"name": "d", "bridge": {}, "state": v}, {"multus": {"networkName": "n", "default": True}}
        ),
    ),
)
sweep(
    "interfaces",
    "state={} on sriov",
    ["down", "up", "absent", ""],
    lambda vm, v: add_iface(vm, {"name": "vf", "sriov": {}, "state": v}),
)
_BINDINGS: list[JSON] = [
    {},
    {"bridge": {}},
    {"masquerade": {}},
    {"sriov": {}},
    {"passtBinding": {}},
    {"binding": {"name": "plug"}},
    {"bridge": {}, "masquerade": {}},
    {"sriov": {}, "binding": {"name": "p"}},
    {"slirp": {}},
    {"macvtap": {}},
    {"passt": {}},
    {"passt": {}, "macvtap": {}, "slirp": {}},
]
sweep(
    "interfaces",
    "binding={} on secondary multus",
    _BINDINGS,
    lambda vm, v: add_iface(vm, {"name": "sec", **v}),
    gates=("PasstBinding",),
)
sweep(
    "interfaces",
    "binding={} on pod",
    _BINDINGS,
    lambda vm, v: (drop_networks(vm), add_iface(vm, {"name": "default", **v}, {"pod": {}})),
    gates=("PasstBinding",),
    configs=({"network": {"permitBridgeInterfaceOnPodNetwork": False}},),
)
sweep(
    "interfaces",
    "masquerade macAddress={}",
    [
        "02:00:00:00:00:00",
        "02:00:00:00:00:01",
        "02-00-00-00-00-00",
        "02:00:00:00:00:0",
        "0200.0000.0000",
        "02:00:00:00:00:00:00:00",
        "zz:00:00:00:00:00",
        "",
        "02:00:00:00:00:00 ",
        "AA:BB:CC:DD:EE:FF",
        "aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd",
    ],
    lambda vm, v: (
        drop_networks(vm),
        add_iface(vm, {"name": "default", "masquerade": {}, "macAddress": v}, {"pod": {}}),
    ),
)
sweep(
    "interfaces",
    "interface name={}",
    ["ok_name-1", "bad name", "bad.name", "", "x" * 100, "\u00fcber", "a/b"],
    lambda vm, v: add_iface(vm, {"name": v, "bridge": {}}),
)
sweep(
    "interfaces",
    "model={}",
    ["virtio", "e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139", "VIRTIO", "bogus", ""],
    lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "model": v}),
)
sweep(
    "interfaces",
    "pciAddress={}",
    [
        "0000:81:00.1",
        "81:00.1",
        "0000:81:00.10",
        "0000:81:00",
        "zzzz:00:00.0",
        "0000:ff:1f.7",
        "0000:ff:20.0",
        "0000:00:00.8",
        "",
        "0000:81:00.1 ",
    ],
    lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "pciAddress": v}),
)


def _ports(vm: JSON, ports: Any, binding: str = "masquerade") -> None:
    drop_networks(vm)
    add_iface(vm, {"name": "default", binding: {}, "ports": ports}, {"pod": {}})


sweep("interfaces", "port={}", PORTS, lambda vm, v: _ports(vm, [{"port": v}]))
sweep(
    "interfaces",
    "port protocol={}",
    ["TCP", "UDP", "tcp", "SCTP", "", "bogus"],
    lambda vm, v: _ports(vm, [{"port": 80, "protocol": v}]),
)
sweep(
    "interfaces",
    "port name={}",
    ["http", "", "HTTP", "a" * 15, "a" * 16, "1234", "a--b", "-a", "web_1", "h\u00e9"],
    lambda vm, v: _ports(vm, [{"port": 80, "name": v}]),
)
variant(
    "interfaces",
    "ports duplicate names",
    lambda vm: _ports(
        vm, [{"port": 80, "name": "web"}, {"port": 81, "name": "web"}, {"port": 82, "name": "web"}]
    ),
)
variant(
    "interfaces",
    "ports duplicate bad names",
    lambda vm: _ports(vm, [{"port": 80, "name": "Bad Name"}, {"port": 81, "name": "Bad Name"}]),
)
variant(
    "interfaces",
    "ports on bridge pod",
    lambda vm: _ports(vm, [{"port": 0, "protocol": "x"}], binding="bridge"),
    configs=({"network": {"permitBridgeInterfaceOnPodNetwork": True}},),
)
variant(
    "interfaces",
    "ports on multus (ignored)",
    lambda vm: add_iface(vm, {"name": "sec", "bridge": {}, "ports": [{"port": 0}]}),
)
variant("interfaces", "ports empty list", lambda vm: _ports(vm, []))
_NO_BETA = {
    "developerConfiguration": {
        "disabledFeatureGates": [
            "PasstBinding",
            "GPUsWithDRA",
            "HostDevicesWithDRA",
            "DeclarativeHotplugVolumes",
            "DecentralizedLiveMigration",
            "WorkloadEncryptionSEV",
            "RebootPolicy",
        ]
    }
}
variant(
    "interfaces",
    "passtBinding on pod, Beta gates disabled",
    lambda vm: (drop_networks(vm), add_iface(vm, {"name": "default", "passtBinding": {}}, {"pod": {}})),
    configs=(_NO_BETA,),
)
variant(
    "interfaces",
    "passtBinding on multus, Beta gates disabled",
    lambda vm: add_iface(vm, {"name": "p", "passtBinding": {}}),
    configs=(_NO_BETA,),
)


def _ranges(vm: JSON, ranges: Any, binding: str = "masquerade", ports: Any = None) -> None:
    drop_networks(vm)
    iface: JSON = {"name": "default", binding: {}, "portRanges": ranges}
    if ports is not None:
        iface["ports"] = ports
    add_iface(vm, iface, {"pod": {}})


_RANGE_SETS: list[Any] = [
    [{"protocol": "TCP", "start": 1000, "end": 2000}],
    [{"protocol": "UDP", "start": 1, "end": 65535}],
    [{"protocol": "tcp", "start": 1000, "end": 2000}],
    [{"protocol": "", "start": 1000, "end": 2000}],
    [{"protocol": "TCP", "start": 0, "end": 2000}],
    [{"protocol": "TCP", "start": 65536, "end": 2000}],
    [{"protocol": "TCP", "start": 10, "end": 0}],
    [{"protocol": "TCP", "start": 10, "end": 70000}],
    [{"protocol": "TCP", "start": 2000, "end": 1000}],
    [{"protocol": "TCP", "start": 1000, "end": 1000}],
    [{"protocol": "TCP", "start": 1000, "end": 2000}, {"protocol": "TCP", "start": 2000, "end": 3000}],
    [{"protocol": "TCP", "start": 1000, "end": 2000}, {"protocol": "TCP", "start": 2001, "end": 3000}],
    [{"protocol": "TCP", "start": 1000, "end": 2000}, {"protocol": "UDP", "start": 1000, "end": 2000}],
    [
        {"protocol": "TCP", "start": 5, "end": 50},
        {"protocol": "TCP", "start": 1, "end": 10},
        {"protocol": "TCP", "start": 8, "end": 9},
    ],
    [{"protocol": "TCP", "start": i * 10 + 1, "end": i * 10 + 5} for i in range(10)],
    [{"protocol": "TCP", "start": i * 10 + 1, "end": i * 10 + 5} for i in range(11)],
    [
        {"protocol": "UDP", "start": 1, "end": 5},
        {"protocol": "UDP", "start": 3, "end": 9},
        {"protocol": "TCP", "start": 7, "end": 0},
    ],
    [],
]
sweep("interfaces", "portRanges={}", _RANGE_SETS, lambda vm, v: _ranges(vm, v), gates=("PortRangesSpec",))
variant(
    "interfaces",
    "portRanges and ports",
    lambda vm: _ranges(vm, _RANGE_SETS[0], ports=[{"port": 80}]),
    gates=("PortRangesSpec",),
)
variant(
    "interfaces",
    "portRanges on bridge pod",
    lambda vm: _ranges(vm, _RANGE_SETS[0], binding="bridge"),
    gates=("PortRangesSpec",),
)
variant(
    "interfaces",
    "portRanges on multus secondary",
    lambda vm: add_iface(
        vm, {"name": "sec", "bridge": {}, "portRanges": [{"protocol": "x", "start": 0, "end": 0}]}
    ),
    gates=("PortRangesSpec",),
)
sweep(
    "interfaces",
    "dhcp privateOptions={}",
    [
        [{"option": 224, "value": "a"}],
        [{"option": 223, "value": "a"}],
        [{"option": 254, "value": "a"}],
        [{"option": 255, "value": "a"}],
        [{"option": 240, "value": "a"}, {"option": 240, "value": "b"}],
        [{"option": 1, "value": "a"}, {"option": 1, "value": "b"}],
        [],
    ],
    lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "dhcpOptions": {"privateOptions": v}}),
)
sweep(
    "interfaces",
    "dhcp ntpServers={}",
    [["10.0.0.1"], ["::1"], ["bogus"], ["10.0.0.1", "256.0.0.1"], ["::ffff:10.0.0.1"], [""], ["1.2.3"]],
    lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "dhcpOptions": {"ntpServers": v}}),
)
variant(
    "interfaces",
    "dhcp options on two interfaces, both bad",
    lambda vm: (
        add_iface(
            vm,
            {
                "name": "s1",
                "bridge": {},
                "dhcpOptions": {"privateOptions": [{"option": 1}], "ntpServers": ["x"]},
            },
        ),
        add_iface(
            vm,
            {"name": "s2", "bridge": {}, "dhcpOptions": {"privateOptions": [{"option": 2}, {"option": 2}]}},
        ),
    ),
)
sweep(
    "interfaces",
    "bootOrder={} on interface",
    [0, 1, 2, -1],
    lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "bootOrder": v}),
)
variant(
    "interfaces",
    "interface bootOrder equal to a disk's",
    lambda vm: (
        add_disk(vm, "bd", {"bootOrder": 7}),
        add_iface(vm, {"name": "sec", "bridge": {}, "bootOrder": 7}),
    ),
)
variant(
    "interfaces",
    "two interfaces same bootOrder",
    lambda vm: (
        add_iface(vm, {"name": "s1", "bridge": {}, "bootOrder": 5}),
        add_iface(vm, {"name": "s2", "bridge": {}, "bootOrder": 5}),
    ),
)

# DRA networks (validateNetworkDevicesWithDRA)
_RC = [{"name": "claim", "resourceClaimName": "rc"}]
sweep(
    "networks",
    "DRA network {}",
    [
        {"iface": {"sriov": {}}, "rc": {"claimName": "claim", "requestName": "r"}},
        {"iface": {"binding": {"name": "p"}}, "rc": {"claimName": "claim", "requestName": "r"}},
        {"iface": {"bridge": {}}, "rc": {"claimName": "claim", "requestName": "r"}},
        {"iface": {"sriov": {}}, "rc": {"claimName": "", "requestName": ""}},
        {"iface": {"sriov": {}}, "rc": {"claimName": "other", "requestName": "r"}},
        {"iface": {"sriov": {}}, "rc": {"requestName": "r"}},
        {"iface": None, "rc": {"claimName": "claim", "requestName": "r"}},
    ],
    lambda vm, v: (
        tspec(vm).__setitem__("resourceClaims", copy.deepcopy(_RC)),
        add_iface(vm, {"name": "dra", **v["iface"]}, {"resourceClaim": v["rc"]})
        if v["iface"] is not None
        else _append(tspec(vm), "networks", {"name": "dra", "resourceClaim": v["rc"]}),
    ),
    gates=("NetworkDevicesWithDRA",),
)
variant(
    "networks",
    "DRA networks duplicate claim/request, no multus",
    lambda vm: (
        drop_networks(vm),
        tspec(vm).__setitem__("resourceClaims", copy.deepcopy(_RC)),
        add_iface(
            vm, {"name": "d1", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
        ),
        add_iface(
            vm, {"name": "d2", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
        ),
        add_iface(
            vm, {"name": "d3", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
        ),
    ),
    gates=("NetworkDevicesWithDRA",),
)
variant(
    "networks",
    "DRA network only (pod dropped)",
    lambda vm: (
        drop_networks(vm),
        tspec(vm).__setitem__("resourceClaims", copy.deepcopy(_RC)),
        add_iface(
            vm, {"name": "d1", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
        ),
    ),
    gates=("NetworkDevicesWithDRA",),
)

# --- DRA devices (pkg/dra/admitter) -------------------------------------------------------------------
_CLAIMS: list[Any] = [
    [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
    [{"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"}],
    [{"name": "gpu"}],
    [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}],
    [{"name": "", "resourceClaimName": "a"}],
    [{"name": "Bad_Name", "resourceClaimName": "a"}],
    [{"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}],
    [{"name": "gpu", "resourceClaimName": "Bad_Claim"}],
    [{"name": "gpu", "resourceClaimTemplateName": ""}],
    [{"name": "gpu", "resourceClaimName": "a" * 254}],
    [{"name": "x" * 64, "resourceClaimName": "a"}],
]
sweep("gpus", "resourceClaims={}", _CLAIMS, lambda vm, v: tspec(vm).__setitem__("resourceClaims", v))
_GPU_SETS: list[Any] = [
    [{"name": "g1", "deviceName": "nvidia.com/GP100"}],
    [{"name": "g1", "claimName": "gpu", "requestName": "r"}],
    [
        {"name": "g1", "claimName": "gpu", "requestName": "r"},
        {"name": "g2", "deviceName": "nvidia.com/GP100"},
    ],
    [{"name": "g1"}],
    [{"name": "g1", "deviceName": "x", "claimName": "gpu", "requestName": "r"}],
    [{"name": "g1", "claimName": "", "requestName": ""}],
    [{"name": "g1", "claimName": "gpu"}],
    [
        {"name": "g1", "claimName": "gpu", "requestName": "r"},
        {"name": "g2", "claimName": "gpu", "requestName": "r"},
    ],
    [{"name": "g1", "claimName": "other", "requestName": "r"}],
    [
        {"name": "g1", "claimName": "gpu", "requestName": "r"},
        {"name": "g2", "claimName": "gpu", "requestName": "r2"},
        {"name": "g3", "claimName": "gpu", "requestName": "r"},
    ],
]
sweep(
    "gpus",
    "gpus={} with claim gpu",
    _GPU_SETS,
    lambda vm, v: (
        tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
        devices(vm).__setitem__("gpus", v),
    ),
    gates=("GPUsWithDRA",),
)
sweep(
    "gpus",
    "hostDevices={} with claim gpu",
    _GPU_SETS,
    lambda vm, v: (
        tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
        devices(vm).__setitem__("hostDevices", v),
    ),
    gates=("HostDevicesWithDRA", "HostDevices"),
)
variant(
    "gpus",
    "same claim/request in gpus, hostDevices and a network",
    lambda vm: (
        tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
        devices(vm).__setitem__("gpus", [{"name": "g1", "claimName": "gpu", "requestName": "r"}]),
        devices(vm).__setitem__("hostDevices", [{"name": "h1", "claimName": "gpu", "requestName": "r"}]),
        add_iface(
            vm, {"name": "dn", "sriov": {}}, {"resourceClaim": {"claimName": "gpu", "requestName": "r"}}
        ),
    ),
    gates=("NetworkDevicesWithDRA", "HostDevices"),
)
variant(
    "gpus",
    "DRA gpu and host device, Beta gates disabled",
    lambda vm: (
        tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
        devices(vm).__setitem__("gpus", [{"name": "g1", "claimName": "gpu", "requestName": "r"}]),
        devices(vm).__setitem__(
            "hostDevices",
            [{"name": "h1", "claimName": "gpu", "requestName": "r2"}, {"name": "h2", "deviceName": "x"}],
        ),
    ),
    configs=(
        _NO_BETA,
        {
            "developerConfiguration": {
                "featureGates": ["HostDevices"],
                "disabledFeatureGates": ["HostDevicesWithDRA"],
            }
        },
    ),
)
variant(
    "gpus",
    "gpus without resourceClaims",
    lambda vm: devices(vm).__setitem__("gpus", [{"name": "g1", "claimName": "gpu", "requestName": "r"}]),
    gates=("GPUsWithDRA",),
)

# --- boot order and disks↔volumes (validateBootOrder) ---------------------------------------------------
variant("disks", "disk without volume", lambda vm: add_disk(vm, "novol", {"disk": {"bus": "virtio"}}, {}))
variant(
    "disks",
    "cdrom without volume",
    lambda vm: add_disk(vm, "emptycd", {"cdrom": {"bus": "sata"}}, {}),
    gates=("DeclarativeHotplugVolumes",),
    configs=(_NO_BETA,),
)
sweep(
    "disks",
    "lun on volume={}",
    [
        {"persistentVolumeClaim": {"claimName": "p"}},
        {"dataVolume": {"name": "d"}},
        {"containerDisk": {"image": "i"}},
        {"emptyDisk": {"capacity": "1Gi"}},
        {"hostDisk": {"path": "/x", "type": "Disk"}},
    ],
    lambda vm, v: add_disk(vm, "lunny", {"lun": {}}, v),
)
sweep(
    "disks",
    "downwardMetrics volume on disk={}",
    [{"disk": {"bus": "virtio"}}, {"disk": {}}, {"disk": {"bus": "sata"}}, {"lun": {}}, {"cdrom": {}}, {}],
    lambda vm, v: add_disk(vm, "dm", v, {"downwardMetrics": {}}),
    gates=("DownwardMetrics",),
)
sweep(
    "disks",
    "bootOrder={} on a disk",
    [0, 1, 2, -1, 4294967295],
    lambda vm, v: add_disk(vm, "bo", {"bootOrder": v}),
)
variant(
    "disks",
    "three disks same bootOrder",
    lambda vm: (
        add_disk(vm, "b1", {"bootOrder": 3}),
        add_disk(vm, "b2", {"bootOrder": 3}),
        add_disk(vm, "b3", {"bootOrder": 3}),
    ),
)

# --- inputs, IO threads ---------------------------------------------------------------------------------
sweep(
    "devices",
    "input={}",
    [
        {"type": "tablet", "bus": "virtio", "name": "t"},
        {"type": "tablet", "bus": "usb", "name": "t"},
        {"type": "tablet", "name": "t"},
        {"type": "mouse", "bus": "ps2", "name": "t"},
        {"type": "", "bus": "", "name": "t"},
        {"type": "keyboard", "bus": "usb", "name": "k"},
        {"type": "Tablet", "bus": "USB", "name": "t"},
    ],
    lambda vm, v: devices(vm).__setitem__("inputs", [v]),
)
sweep(
    "devices",
    "ioThreadsPolicy={}",
    ["shared", "auto", "supplementalPool", "bogus", "Shared", ""],
    lambda vm, v: domain(vm).__setitem__("ioThreadsPolicy", v),
)
sweep(
    "devices",
    "supplementalPool ioThreads={}",
    [
        None,
        {},
        {"supplementalPoolThreadCount": 0},
        {"supplementalPoolThreadCount": 1},
        {"supplementalPoolThreadCount": -1},
        {"supplementalPoolThreadCount": 4},
    ],
    lambda vm, v: domain(vm).update(
        {"ioThreadsPolicy": "supplementalPool", **({"ioThreads": v} if v is not None else {})}
    ),
)
variant(
    "devices",
    "ioThreads count without policy",
    lambda vm: domain(vm).__setitem__("ioThreads", {"supplementalPoolThreadCount": 0}),
)

# --- probes ---------------------------------------------------------------------------------------------
_PROBES: list[Any] = [
    {},
    {"httpGet": {"port": 80}},
    {"tcpSocket": {"port": 22}},
    {"exec": {"command": ["true"]}},
    {"guestAgentPing": {}},
    {"httpGet": {"port": 80}, "tcpSocket": {"port": 22}},
    {"exec": {"command": ["x"]}, "guestAgentPing": {}, "httpGet": {"port": 1}},
    {"initialDelaySeconds": 5},
]
for _probe in ("readinessProbe", "livenessProbe"):
    sweep("probes", f"{_probe}={{}}", _PROBES, lambda vm, v, p=_probe: tspec(vm).__setitem__(p, v))
    sweep(
        "probes",
        f"{_probe}={{}} without pod network",
        _PROBES[:6],
        lambda vm, v, p=_probe: (drop_networks(vm), tspec(vm).__setitem__(p, v)),
    )
variant(
    "probes",
    "both probes http without pod network, multus only",
    lambda vm: (
        drop_networks(vm),
        add_iface(vm, {"name": "m", "bridge": {}}),
        tspec(vm).update(
            {
                "readinessProbe": {"httpGet": {"port": 1}, "tcpSocket": {"port": 2}},
                "livenessProbe": {"tcpSocket": {"port": 2}},
            }
        ),
    ),
)

# --- disks (storageadmitters.ValidateDisks) -------------------------------------------------------------
variant(
    "disks",
    "duplicate disk name",
    lambda vm: _append(devices(vm), "disks", devices(vm).get("disks", [{"name": "root"}])[0]),
)
variant(
    "disks",
    "three disks same name",
    lambda vm: (add_disk(vm, "tri"), add_disk(vm, "tri", volume={}), add_disk(vm, "tri", volume={})),
)
sweep(
    "disks",
    "disk targets={}",
    [
        {"disk": {}, "lun": {}},
        {"disk": {}, "cdrom": {}},
        {"lun": {}, "cdrom": {}},
        {"disk": {}, "lun": {}, "cdrom": {}},
        {},
    ],
    lambda vm, v: add_disk(vm, "tgt", v, {"persistentVolumeClaim": {"claimName": "c"}}),
)
sweep(
    "disks",
    "disk pciAddress={} bus={}",
    [
        ("0000:81:00.1", "virtio"),
        ("0000:81:00.1", "scsi"),
        ("bogus", "virtio"),
        ("bogus", "sata"),
        ("0000:81:00.1", ""),
        ("0000:00:1f.8", "virtio"),
    ],
    lambda vm, v: add_disk(vm, "pci", {"disk": {"bus": v[1], "pciAddress": v[0]}}),
)
_BUSES = ["virtio", "sata", "scsi", "usb", "ide", "bogus", "VIRTIO", ""]
for _target in ("disk", "lun", "cdrom"):
    sweep(
        "disks",
        f"{_target} bus={{}}",
        _BUSES,
        lambda vm, v, t=_target: add_disk(
            vm, "bus", {t: {"bus": v}}, {"persistentVolumeClaim": {"claimName": "c"}}
        ),
    )
    sweep(
        "disks",
        f"{_target} dedicatedIOThread bus={{}}",
        ["virtio", "sata", "scsi", ""],
        lambda vm, v, t=_target: add_disk(
            vm,
            "iot",
            {t: {"bus": v}, "dedicatedIOThread": True},
            {"persistentVolumeClaim": {"claimName": "c"}},
        ),
    )
sweep(
    "disks",
    "readonly disk bus={}",
    ["sata", "virtio", "scsi"],
    lambda vm, v: add_disk(vm, "ro", {"disk": {"bus": v, "readonly": True}}),
)
variant(
    "disks",
    "readonly sata cdrom",
    lambda vm: add_disk(vm, "roc", {"cdrom": {"bus": "sata", "readonly": True}}),
)
variant(
    "disks",
    "dedicatedIOThread false on sata",
    lambda vm: add_disk(vm, "iof", {"disk": {"bus": "sata"}, "dedicatedIOThread": False}),
)
sweep(
    "disks",
    "serial={}",
    ["abc", "ABC_123.x+y-z", "bad serial!", "", "x" * 256, "x" * 257, "\u00e9" * 10, "a/b"],
    lambda vm, v: add_disk(vm, "ser", {"serial": v}),
)
sweep(
    "disks",
    "cache={}",
    ["none", "writethrough", "writeback", "unsafe", "None", "directsync", ""],
    lambda vm, v: add_disk(vm, "cch", {"cache": v}),
)
sweep(
    "disks",
    "io={}",
    ["native", "threads", "default", "Native", ""],
    lambda vm, v: add_disk(vm, "iom", {"io": v}),
)
sweep(
    "disks",
    "errorPolicy={}",
    ["stop", "ignore", "report", "enospace", "Stop", "bogus", ""],
    lambda vm, v: add_disk(vm, "erp", {"errorPolicy": v}),
)
sweep(
    "disks",
    "disk name={}",
    ["ok", "Bad", "a_b", "a.b", "x" * 63, "x" * 64, "-a", "1"],
    lambda vm, v: add_disk(vm, v),
)
_BLOCK: list[Any] = [
    {"custom": {"logical": 512, "physical": 512}},
    {"custom": {"logical": 4096, "physical": 512}},
    {"custom": {"logical": 256, "physical": 512}},
    {"custom": {"logical": 512, "physical": 4194304}},
    {"custom": {"logical": 1000, "physical": 1000}},
    {"custom": {"logical": 512, "physical": 1000}},
    {"custom": {"logical": 512, "physical": 4096, "discardGranularity": 1024}},
    {"custom": {"logical": 512, "physical": 4096, "discardGranularity": 1000}},
    {"custom": {"logical": 0, "physical": 0, "discardGranularity": 1000}},
    {"custom": {"logical": 4096, "physical": 4096}, "matchVolume": {"enabled": True}},
    {"custom": {"logical": 4096, "physical": 4096}, "matchVolume": {}},
    {"custom": {"logical": 4096, "physical": 4096}, "matchVolume": {"enabled": False}},
    {"matchVolume": {}},
    {"custom": {}},
    {"custom": {"logical": 2097152, "physical": 2097152}},
    {"custom": {"logical": 4194304, "physical": 4194304}},
]
sweep("disks", "blockSize={}", _BLOCK, lambda vm, v: add_disk(vm, "blk", {"blockSize": v}))
sweep(
    "disks",
    "sata blockSize={}",
    _BLOCK[:8],
    lambda vm, v: add_disk(vm, "blk", {"disk": {"bus": "sata"}, "blockSize": v}),
)

# --- firmware: bootloader, kernel boot, secure boot ------------------------------------------------------
sweep(
    "firmware",
    "bootloader={}",
    [
        {"efi": {}, "bios": {}},
        {"bios": {}},
        {"efi": {"secureBoot": False}},
        {"efi": {}},
        {"efi": {"secureBoot": True}},
        {},
    ],
    lambda vm, v: firmware(vm).__setitem__("bootloader", v),
)
sweep(
    "firmware",
    "secure boot efi={} smm={}",
    [
        ({}, None),
        ({}, {}),
        ({}, {"enabled": False}),
        ({"secureBoot": True}, {"enabled": True}),
        ({"secureBoot": False}, None),
        ({"secureBoot": True}, {"enabled": False}),
    ],
    lambda vm, v: (
        firmware(vm).__setitem__("bootloader", {"efi": v[0]}),
        features(vm).__setitem__("smm", v[1]) if v[1] is not None else None,
    ),
)
variant(
    "firmware",
    "secure boot without SMM under TDX",
    lambda vm: (
        firmware(vm).__setitem__("bootloader", {"efi": {}}),
        domain(vm).__setitem__("launchSecurity", {"tdx": {}}),
    ),
    gates=("WorkloadEncryptionTDX",),
)
_KERNEL: list[Any] = [
    {"kernelArgs": "console=ttyS0"},
    {},
    {"container": {}},
    {"container": {"image": "img"}},
    {"container": {"image": "img", "kernelPath": "/boot/vmlinuz"}},
    {"container": {"image": "", "initrdPath": "/boot/initrd"}},
    {"container": {"image": "img", "kernelPath": "boot/vmlinuz"}},
    {"container": {"image": "img", "kernelPath": "/"}},
    {"container": {"image": "img", "kernelPath": "/boot/../vmlinuz", "initrdPath": "/a//b"}},
    {"container": {"image": "img", "kernelPath": "/boot/vmlinuz/", "initrdPath": "/./x"}},
    {"container": {"image": "img", "initrdPath": "//"}},
    {"container": {"image": "img", "kernelPath": "/k"}, "kernelArgs": "x"},
]
sweep("firmware", "kernelBoot={}", _KERNEL, lambda vm, v: firmware(vm).__setitem__("kernelBoot", v))

# --- volumes (validateVolumes) --------------------------------------------------------------------------
variant(
    "volumes",
    "duplicate volume name",
    lambda vm: add_volume(vm, {"name": tspec(vm)["volumes"][0]["name"], "emptyDisk": {"capacity": "1Gi"}}),
)
variant(
    "volumes",
    "three volumes same name",
    lambda vm: add_volume(vm, *[{"name": "same", "emptyDisk": {"capacity": "1Gi"}}] * 3),
)
_SOURCES: list[Any] = [
    {},
    {"persistentVolumeClaim": {"claimName": "p"}},
    {"sysprep": {"secret": {"name": "s"}}},
    {"containerDisk": {"image": "i"}},
    {"ephemeral": {"persistentVolumeClaim": {"claimName": "p"}}},
    {"emptyDisk": {"capacity": "1Gi"}},
    {"dataVolume": {"name": "d"}},
    {"dataVolume": {"name": ""}},
    {"dataVolume": {}},
    {"configMap": {"name": "c"}},
    {"configMap": {}},
    {"secret": {"secretName": "s"}},
    {"secret": {}},
    {"downwardAPI": {"fields": []}},
    {"serviceAccount": {"serviceAccountName": "sa"}},
    {"serviceAccount": {}},
    {"memoryDump": {"claimName": "m"}},
    {"containerPath": {"path": "/data"}},
    {"persistentVolumeClaim": {"claimName": "p"}, "containerDisk": {"image": "i"}},
    {"dataVolume": {"name": ""}, "secret": {}},
]
sweep(
    "volumes",
    "volume source={}",
    _SOURCES,
    lambda vm, v: add_disk(vm, "src", {}, v),
    gates=("ContainerPathVolumes",),
)
sweep(
    "volumes",
    "volume source={} without disk",
    _SOURCES[:18],
    lambda vm, v: add_volume(vm, {"name": "src", **v}),
)
_B64_OK = "I2Nsb3VkLWNvbmZpZwo="
_CI_SETS: list[Any] = [
    {"userData": "x"},
    {"userDataBase64": _B64_OK},
    {"userDataBase64": "not base64!"},
    {"userDataBase64": "I2Nsb3VkLWNvbmZpZwo"},
    {"userDataBase64": "I2Nsb3VkLWNvbmZpZwo==="},
    {"userData": "x", "userDataBase64": _B64_OK},
    {"userDataSecretRef": {"name": "s"}, "userData": "x"},
    {"userDataSecretRef": {"name": ""}},
    {"userDataSecretRef": {}},
    {"userData": "x" * 2048},
    {"userData": "x" * 2049},
    {"userData": "\u00e9" * 1025},
    {"userDataBase64": "eA==" * 683},
    {"networkData": "n"},
    {"networkDataBase64": "bad!"},
    {"networkData": "n", "networkDataSecretRef": {"name": "s"}},
    {"networkData": "n" * 2049},
    {"networkDataBase64": "bg==", "networkData": "n", "userData": "x"},
    {},
    {"userData": ""},
    {"userDataBase64": "bad!", "networkDataBase64": "bad!", "userData": "x", "networkData": "y" * 3000},
    {"userDataBase64": "YQ"},
    {"userDataBase64": "YWJj\nZGVm"},
    {"userDataBase64": "YWJjZA=="},
    {"userDataBase64": "YWJjZA="},
    {"userDataBase64": "YWJj ZA=="},
]
for _ci in ("cloudInitNoCloud", "cloudInitConfigDrive"):
    sweep("volumes", f"{_ci}={{}}", _CI_SETS, lambda vm, v, c=_ci: add_disk(vm, "ci", {}, {c: v}))
variant(
    "volumes",
    "noCloud and configDrive on one volume",
    lambda vm: add_disk(vm, "ci", {}, {"cloudInitNoCloud": {"userData": "a"}, "cloudInitConfigDrive": {}}),
)
sweep(
    "volumes",
    "hostDisk={}",
    [
        {"path": "/d.img", "type": "Disk"},
        {"path": "/d.img", "type": "DiskOrCreate", "capacity": "1Gi"},
        {"path": "", "type": "Disk"},
        {"path": "/d.img", "type": "bogus"},
        {"path": "/d.img", "type": ""},
        {"path": "/d.img", "type": "Disk", "capacity": "1Gi"},
        {"path": "/d.img", "type": "Disk", "capacity": "0"},
        {},
        {"type": "Disk", "capacity": "-1"},
    ],
    lambda vm, v: add_disk(vm, "hd", {}, {"hostDisk": v}),
    gates=("HostDisk",),
)
variant(
    "volumes",
    "two serviceAccount volumes",
    lambda vm: (
        add_disk(vm, "sa1", {}, {"serviceAccount": {"serviceAccountName": "a"}}),
        add_disk(vm, "sa2", {}, {"serviceAccount": {"serviceAccountName": "a"}}),
    ),
)
variant(
    "volumes",
    "two downwardMetrics volumes",
    lambda vm: (
        add_disk(vm, "dm1", {}, {"downwardMetrics": {}}),
        add_disk(vm, "dm2", {}, {"downwardMetrics": {}}),
    ),
    gates=("DownwardMetrics",),
)
variant(
    "volumes",
    "two memoryDump volumes",
    lambda vm: add_volume(
        vm,
        {"name": "md1", "memoryDump": {"claimName": "a"}},
        {"name": "md2", "memoryDump": {"claimName": "b"}},
    ),
)
sweep(
    "volumes",
    "containerDisk path={}",
    ["/disk", "/", "disk", "/a/../b", "/a/", "//a", "/a/./b", ""],
    lambda vm, v: add_disk(vm, "cdp", {}, {"containerDisk": {"image": "i", "path": v}}),
)
sweep(
    "volumes",
    "utilityVolumes={}",
    [[], [{"name": "u", "persistentVolumeClaim": {"claimName": "x"}}]],
    lambda vm, v: tspec(vm).__setitem__("utilityVolumes", v),
    gates=("UtilityVolumes",),
)
sweep(
    "volumes",
    "serviceAccountName={} with sa volume sa",
    ["sa", "other", "Bad_SA", "", "a" * 254],
    lambda vm, v: (
        tspec(vm).__setitem__("serviceAccountName", v),
        add_disk(vm, "sav", {}, {"serviceAccount": {"serviceAccountName": "sa"}}),
    ),
)
sweep(
    "volumes",
    "serviceAccountName={}",
    ["ok", "Bad_SA", "a.b", "-a"],
    lambda vm, v: tspec(vm).__setitem__("serviceAccountName", v),
)
_FS_SOURCES: list[Any] = [
    {"persistentVolumeClaim": {"claimName": "p"}},
    {"dataVolume": {"name": "d"}},
    {"configMap": {"name": "c"}},
    {"containerPath": {"path": "/x"}},
]
sweep(
    "volumes",
    "virtiofs filesystem on={}",
    _FS_SOURCES,
    lambda vm, v: (
        _append(devices(vm), "filesystems", {"name": "fs", "virtiofs": {}}),
        add_volume(vm, {"name": "fs", **v}),
    ),
    gates=("EnableVirtioFsStorageVolumes",),
)
variant(
    "volumes",
    "filesystem without volume",
    lambda vm: _append(devices(vm), "filesystems", {"name": "nofs", "virtiofs": {}}),
)

# --- access credentials ---------------------------------------------------------------------------------
_SSH = {"source": {"secret": {"secretName": "keys"}}}
_AC: list[Any] = [
    {"sshPublicKey": {**_SSH, "propagationMethod": {"noCloud": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"configDrive": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"qemuGuestAgent": {"users": ["root"]}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"qemuGuestAgent": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"qemuGuestAgent": {"users": []}}}},
    {"sshPublicKey": {"source": {}, "propagationMethod": {"qemuGuestAgent": {"users": []}, "noCloud": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {}}},
    {"sshPublicKey": {"source": {}, "propagationMethod": {"noCloud": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"noCloud": {}, "configDrive": {}}}},
    {
        "sshPublicKey": {
            "source": {},
            "propagationMethod": {"noCloud": {}, "configDrive": {}, "qemuGuestAgent": {}},
        }
    },
    {
        "userPassword": {
            "source": {"secret": {"secretName": "pw"}},
            "propagationMethod": {"qemuGuestAgent": {}},
        }
    },
    {"userPassword": {"source": {}, "propagationMethod": {}}},
    {},
    {
        "sshPublicKey": {**_SSH, "propagationMethod": {"noCloud": {}}},
        "userPassword": {
            "source": {"secret": {"secretName": "p"}},
            "propagationMethod": {"qemuGuestAgent": {}},
        },
    },
]
sweep(
    "accesscredentials",
    "accessCredentials=[{}]",
    _AC,
    lambda vm, v: tspec(vm).__setitem__("accessCredentials", [v]),
)
sweep(
    "accesscredentials",
    "accessCredentials=[{}] with configDrive volume",
    _AC[:3],
    lambda vm, v: (
        tspec(vm).__setitem__("accessCredentials", [v]),
        add_disk(vm, "cd", {}, {"cloudInitConfigDrive": {"userData": "x"}}),
    ),
)
variant(
    "accesscredentials",
    "two credentials, both broken",
    lambda vm: tspec(vm).__setitem__("accessCredentials", [_AC[5], _AC[9]]),
)

# --- DNS policy / config ----------------------------------------------------------------------------------
sweep(
    "dns",
    "dnsPolicy={}",
    ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None", "", "bogus", "clusterfirst"],
    lambda vm, v: tspec(vm).__setitem__("dnsPolicy", v),
)
_DNS_CONFIGS: list[Any] = [
    None,
    {},
    {"nameservers": ["1.1.1.1"]},
    {"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9", "1.0.0.1"]},
    {"nameservers": ["bogus", "::1", "1.2.3.4.5", "fe80::1%eth0"]},
    {"nameservers": ["1.1.1.1"], "searches": ["a", "b", "c", "d", "e", "f", "g"]},
    {"nameservers": ["1.1.1.1"], "searches": ["x" * 60 + str(i) for i in range(5)]},
    {"nameservers": ["1.1.1.1"], "searches": ["Bad_Domain", "ok.example", "-x", "a..b"]},
    {"nameservers": ["1.1.1.1"], "options": [{"name": ""}, {"name": "ndots", "value": "2"}, {}]},
    {"searches": ["a.b"]},
    {"nameservers": []},
    {"nameservers": ["::ffff:1.2.3.4", "01.2.3.4", "1.2.3.04"]},
]
for _policy in ("None", "ClusterFirst"):
    sweep(
        "dns",
        f"dnsPolicy {_policy} dnsConfig={{}}",
        _DNS_CONFIGS,
        lambda vm, v, p=_policy: tspec(vm).update(
            {"dnsPolicy": p, **({"dnsConfig": v} if v is not None else {})}
        ),
    )

# --- eviction strategy, GPUs' ramfb, host devices, sound, VSOCK, PR, downward metrics, video, panic, reboot
sweep(
    "devices",
    "evictionStrategy={}",
    ["LiveMigrate", "LiveMigrateIfPossible", "None", "External", "bogus", "", "livemigrate"],
    lambda vm, v: tspec(vm).__setitem__("evictionStrategy", v),
)
sweep(
    "devices",
    "cluster evictionStrategy={}",
    ["LiveMigrate", "bogus"],
    lambda vm, v: None,
    configs=({"evictionStrategy": "bogus"}, {"evictionStrategy": "External"}),
)
_DISPLAY: list[Any] = [
    None,
    {},
    {"enabled": False},
    {"enabled": True, "ramFB": {"enabled": False}},
    {"ramFB": {}},
    {"enabled": True, "ramFB": {"enabled": True}},
]
for _d1 in _DISPLAY:
    for _d2 in _DISPLAY[:3]:
        variant(
            "gpus",
            f"two gpus displays {_d1} / {_d2}",
            lambda vm, a=_d1, b=_d2: devices(vm).__setitem__(
                "gpus",
                [
                    {
                        "name": "g1",
                        "deviceName": "nvidia.com/A",
                        **({"virtualGPUOptions": {"display": a}} if a is not None else {}),
                    },
                    {
                        "name": "g2",
                        "deviceName": "nvidia.com/B",
                        **({"virtualGPUOptions": {"display": b}} if b is not None else {}),
                    },
                ],
            ),
        )
sweep(
    "gpus",
    "hostDevices={}",
    [[], [{"name": "h", "deviceName": "vendor.com/x"}], None],
    lambda vm, v: devices(vm).__setitem__("hostDevices", v),
    gates=("HostDevices",),
)
_GRACE_CONFIG = {
    "permittedHostDevices": {
        "pciHostDevices": [
            {"pciVendorSelector": "10DE:2342", "resourceName": "nvidia.com/GH100"},
            {"pciVendorSelector": "10de:*", "resourceName": "nvidia.com/ANY"},
            {"pciVendorSelector": "8086:1234", "resourceName": "intel.com/X"},
            {"pciVendorSelector": "10DE:2941", "resourceName": "nvidia.com/GB200"},
        ]
    }
}
for _gates in ((), ("GraceIOVirtualization",), ("GraceIOVirtualization", "PCINUMAAwareTopology", "IOMMUFD")):
    sweep(
        "gpus",
        f"grace gpu={{}} gates={'+'.join(_gates) or 'none'}",
        ["nvidia.com/GH100", "nvidia.com/ANY", "intel.com/X", "nvidia.com/GB200", "unlisted/x"],
        lambda vm, v: (devices(vm).__setitem__("gpus", [{"name": "g", "deviceName": v}]),),
        configs=({**_GRACE_CONFIG, **_gate_list(*_gates, "HostDevices")},),
    )
    sweep(
        "gpus",
        f"grace hostDevice={{}} arm64 virt dedicated gates={'+'.join(_gates) or 'none'}",
        ["nvidia.com/GH100", "nvidia.com/ANY"],
        lambda vm, v: (
            devices(vm).__setitem__("hostDevices", [{"name": "h", "deviceName": v}]),
            tspec(vm).__setitem__("architecture", "arm64"),
            domain(vm).__setitem__("machine", {"type": "virt"}),
            cpu(vm).__setitem__("dedicatedCpuPlacement", True),
        ),
        configs=({**_GRACE_CONFIG, **_gate_list(*_gates, "HostDevices")},),
    )
sweep(
    "gpus",
    "grace gpu with annotations={}",
    [
        {"kubevirt.io/placePCIDevicesOnRootComplex": "true"},
        {"kubevirt.io/disablePCIHole64": "true"},
        {"kubevirt.io/placePCIDevicesOnRootComplex": "false"},
        {"kubevirt.io/placePCIDevicesOnRootComplex": "true", "kubevirt.io/disablePCIHole64": "true"},
    ],
    lambda vm, v: (
        devices(vm).__setitem__("gpus", [{"name": "g", "deviceName": "nvidia.com/GH100"}]),
        tmeta(vm).__setitem__("annotations", v),
    ),
    configs=({**_GRACE_CONFIG, **_gate_list("GraceIOVirtualization")}, _GRACE_CONFIG),
)
sweep(
    "devices",
    "sound={}",
    [
        {"name": "s", "model": "ich9"},
        {"name": "s", "model": "ac97"},
        {"name": "s"},
        {"model": "ich9"},
        {"name": "s", "model": "ICH9"},
        {},
        {"name": "", "model": "bogus"},
    ],
    lambda vm, v: devices(vm).__setitem__("sound", v),
)
sweep(
    "devices",
    "autoattachVSOCK={}",
    [True, False],
    lambda vm, v: devices(vm).__setitem__("autoattachVSOCK", v),
    gates=("VSOCK",),
)
sweep(
    "devices",
    "lun reservation={}",
    [True, False],
    lambda vm, v: add_disk(
        vm, "pr", {"lun": {"reservation": v}}, {"persistentVolumeClaim": {"claimName": "c"}}
    ),
    configs=(
        {"persistentReservationConfiguration": {"enabled": False}},
        {"persistentReservationConfiguration": {"enabled": True}},
        _gate_list("PersistentReservation"),
        {},
    ),
)
sweep(
    "devices",
    "downwardMetrics device={}",
    [{}, None],
    lambda vm, v: devices(vm).__setitem__("downwardMetrics", v),
    gates=("DownwardMetrics",),
)
sweep(
    "devices",
    "video={} autoattachGraphicsDevice={}",
    [
        ({"type": "vga"}, False),
        ({"type": "virtio"}, True),
        ({"type": "bogus"}, None),
        ({}, False),
        (None, False),
    ],
    lambda vm, v: (
        devices(vm).__setitem__("video", v[0]) if v[0] is not None else None,
        devices(vm).__setitem__("autoattachGraphicsDevice", v[1]) if v[1] is not None else None,
    ),
)
sweep(
    "devices",
    "panicDevices={}",
    [
        [{"model": "hyperv"}],
        [{"model": "isa"}],
        [{"model": "pvpanic"}],
        [{"model": "bogus"}],
        [{}],
        [{"model": ""}],
        [{"model": "isa"}, {"model": "x"}, {"model": "y"}],
        [],
    ],
    lambda vm, v: devices(vm).__setitem__("panicDevices", v),
)
sweep(
    "devices",
    "panicDevices on arch={}",
    ["s390x", "arm64", ""],
    lambda vm, v: (
        tspec(vm).__setitem__("architecture", v),
        devices(vm).__setitem__("panicDevices", [{"model": "bogus"}]),
    ),
    configs=({"architectureConfiguration": {"defaultArchitecture": "s390x"}},),
)
sweep(
    "devices",
    "rebootPolicy={}",
    ["Reboot", "Terminate", "bogus", ""],
    lambda vm, v: domain(vm).__setitem__("rebootPolicy", v),
    gates=("RebootPolicy",),
    configs=({"developerConfiguration": {"disabledFeatureGates": ["RebootPolicy"]}},),
)

# --- launch security -------------------------------------------------------------------------------------
_LS: list[Any] = [
    {},
    {"sev": {}},
    {"snp": {}},
    {"tdx": {}},
    {"sev": {}, "snp": {}},
    {"sev": {}, "tdx": {}},
    {"sev": {"attestation": {}}},
    {"sev": {"policy": {"encryptedState": True}}},
]
_LS_FW: list[Any] = [
    None,
    {"efi": {"secureBoot": False}},
    {"efi": {}},
    {"efi": {"secureBoot": False, "persistent": True}},
    {"bios": {}},
]
for _ls in _LS:
    for _fw in _LS_FW:
        variant(
            "launchsecurity",
            f"launchSecurity={_ls} bootloader={_fw}",
            lambda vm, ls=_ls, fw=_fw: (
                domain(vm).__setitem__("launchSecurity", ls),
                firmware(vm).__setitem__("bootloader", fw)
                if fw is not None
                else firmware(vm).pop("bootloader", None),
            ),
            gates=("WorkloadEncryptionSEV", "WorkloadEncryptionTDX"),
        )
variant(
    "launchsecurity",
    "TDX with SMM",
    lambda vm: (
        domain(vm).__setitem__("launchSecurity", {"tdx": {}}),
        features(vm).__setitem__("smm", {}),
        firmware(vm).__setitem__("bootloader", {"efi": {"secureBoot": False}}),
    ),
    gates=("WorkloadEncryptionTDX",),
)
sweep(
    "launchsecurity",
    "SEV attestation startStrategy={}",
    ["Paused", None],
    lambda vm, v: (
        domain(vm).__setitem__("launchSecurity", {"sev": {"attestation": {}}}),
        firmware(vm).__setitem__("bootloader", {"efi": {"secureBoot": False}}),
        tspec(vm).__setitem__("startStrategy", v) if v else None,
    ),
)
variant(
    "launchsecurity",
    "SEV with bootable NICs",
    lambda vm: (
        domain(vm).__setitem__("launchSecurity", {"sev": {}}),
        firmware(vm).__setitem__("bootloader", {"efi": {"secureBoot": False}}),
        add_iface(vm, {"name": "n1", "bridge": {}, "bootOrder": 3}),
        add_iface(vm, {"name": "n2", "bridge": {}, "bootOrder": 4}),
    ),
)
sweep(
    "launchsecurity",
    "launchSecurity sev on arch={}",
    ["s390x", "arm64", "bogus", ""],
    lambda vm, v: (
        domain(vm).__setitem__("launchSecurity", {"sev": {}}),
        tspec(vm).__setitem__("architecture", v),
    ),
)

# --- metadata (ValidateVirtualMachineInstanceMetadata) ---------------------------------------------------
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

# --- VM level: dataVolumeTemplates, runStrategy, live update ---------------------------------------------


def _dvt(vm: JSON, dvt: Any, ref: bool = True) -> None:
    _append(vm["spec"], "dataVolumeTemplates", dvt)
    if ref and isinstance(dvt, dict):
        name = (dvt.get("metadata") or {}).get("name", "")
        add_disk(vm, "dvtref", {}, {"dataVolume": {"name": name}})


_STORAGE = {"resources": {"requests": {"storage": "1Gi"}}}
_DVTS: list[Any] = [
    {"metadata": {"name": "t1"}, "spec": {"storage": _STORAGE, "source": {"blank": {}}}},
    {"metadata": {"name": ""}, "spec": {"storage": _STORAGE, "source": {"blank": {}}}},
    {"metadata": {}, "spec": {"storage": _STORAGE, "source": {"blank": {}}}},
    {"metadata": {"name": "t1"}, "spec": {"source": {"blank": {}}}},
    {
        "metadata": {"name": "t1"},
        "spec": {"pvc": {"accessModes": ["ReadWriteOnce"]}, "storage": _STORAGE, "source": {"blank": {}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "pvc": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            "source": {"blank": {}},
        },
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "storage": {**_STORAGE, "dataSource": {"kind": "PersistentVolumeClaim", "name": "x"}},
            "source": {"blank": {}},
        },
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": {**_STORAGE, "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "x"}}},
    },
    {"metadata": {"name": "t1"}, "spec": {"storage": _STORAGE}},
    {"metadata": {"name": "t1"}, "spec": {"storage": _STORAGE, "source": {}}},
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": _STORAGE, "source": {"blank": {}, "http": {"url": "http://x"}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": _STORAGE, "sourceRef": {"kind": "DataSource", "name": "ds"}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "storage": _STORAGE,
            "sourceRef": {"kind": "DataSource", "name": "ds"},
            "source": {"blank": {}},
        },
    },
    {
        "metadata": {"name": "t1", "namespace": "other"},
        "spec": {"storage": _STORAGE, "source": {"blank": {}}},
    },
    {
        "metadata": {"name": "t1", "namespace": "default"},
        "spec": {"storage": _STORAGE, "source": {"blank": {}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": _STORAGE, "source": {"pvc": {"name": "p", "namespace": "n"}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "storage": _STORAGE,
            "source": {"upload": {}, "imageio": {"url": "u", "secretRef": "s", "certConfigMap": "c"}},
        },
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": _STORAGE, "source": {"snapshot": {"name": "s", "namespace": "n"}}},
    },
]
sweep("datavolumetemplates", "dataVolumeTemplate={}", _DVTS, lambda vm, v: _dvt(vm, v))
sweep(
    "datavolumetemplates",
    "dataVolumeTemplate={} unreferenced",
    _DVTS[:3],
    lambda vm, v: _dvt(vm, v, ref=False),
)
variant(
    "datavolumetemplates",
    "dataVolumeTemplate referenced by a PVC volume",
    lambda vm: (
        _dvt(vm, _DVTS[0], ref=False),
        add_disk(vm, "pvcref", {}, {"persistentVolumeClaim": {"claimName": "t1"}}),
    ),
)
variant(
    "datavolumetemplates",
    "two templates in another namespace, one unreferenced",
    lambda vm: (
        _dvt(vm, _DVTS[13]),
        _dvt(vm, {**_DVTS[13], "metadata": {"name": "t2", "namespace": "x"}}, ref=False),
    ),
)
variant(
    "datavolumetemplates",
    "template namespace other, VM without namespace",
    lambda vm: (vm["metadata"].pop("namespace", None), _dvt(vm, _DVTS[13])),
)
variant(
    "datavolumetemplates",
    "template namespace default, VM namespace prod",
    lambda vm: (vm["metadata"].__setitem__("namespace", "prod"), _dvt(vm, _DVTS[14])),
)


def _run(vm: JSON, running: Any, strategy: Any) -> None:
    vm["spec"].pop("running", None)
    vm["spec"].pop("runStrategy", None)
    if running != "-":
        vm["spec"]["running"] = running
    if strategy != "-":
        vm["spec"]["runStrategy"] = strategy


for _running in ("-", True, False, None):
    for _strategy in (
        "-",
        "Always",
        "Halted",
        "Manual",
        "RerunOnFailure",
        "Once",
        "WaitAsReceiver",
        "always",
        "",
        None,
        "Bogus",
    ):
        variant(
            "runstrategy",
            f"running={_running} runStrategy={_strategy}",
            lambda vm, r=_running, s=_strategy: _run(vm, r, s),
            gates=("DecentralizedLiveMigration",) if _strategy == "WaitAsReceiver" else (),
        )
variant(
    "runstrategy",
    "WaitAsReceiver with gate disabled explicitly",
    lambda vm: _run(vm, "-", "WaitAsReceiver"),
    configs=({"developerConfiguration": {"disabledFeatureGates": ["DecentralizedLiveMigration"]}},),
)

# --- discontinued feature gates (ValidateFeatureGates) and deprecated ones ------------------------------
sweep(
    "gates",
    "interface binding={} with discontinued gates on",
    [{"passt": {}}, {"macvtap": {}}, {"masquerade": {}}],
    lambda vm, v: add_iface(vm, {"name": "old", **v}),
    configs=(
        _gate_list("Passt"),
        _gate_list("Macvtap"),
        _gate_list("Macvtap", "Passt"),
        _gate_list("ExperimentalVirtiofsSupport", "PasstIPStackMigration"),
        _gate_list(
            "DockerSELinuxMCSWorkaround", "MultiArchitecture", "DisableMDEVConfiguration", "HotplugVolumes"
        ),
        {"developerConfiguration": {"featureGates": ["Macvtap"], "disabledFeatureGates": ["Macvtap"]}},
    ),
)

# --- instancetype / preference stage ---------------------------------------------------------------------
sweep(
    "instancetype",
    "instancetype=VirtualMachineClusterInstancetype c1.medium with template {}",
    [
        ("cpu.cores", 2),
        ("cpu.sockets", 1),
        ("cpu.threads", 1),
        ("memory.guest", "1Gi"),
        ("resources.requests.memory", "1Gi"),
        ("resources.limits.cpu", "1"),
        ("cpu.dedicatedCpuPlacement", True),
        ("cpu.model", "host-passthrough"),
        ("ioThreadsPolicy", "auto"),
    ],
    lambda vm, v: (
        vm["spec"].__setitem__(
            "instancetype", {"kind": "VirtualMachineClusterInstancetype", "name": "c1.medium"}
        ),
        setp(vm, "spec.template.spec.domain." + v[0], v[1]),
    ),
)
sweep(
    "instancetype",
    "instancetype ref={}",
    [
        {"name": "missing"},
        {"kind": "VirtualMachineInstancetype", "name": "c1.medium"},
        {"kind": "bogus", "name": "c1.medium"},
        {"name": ""},
        {"kind": "VirtualMachineClusterInstancetype", "name": "c1.medium", "revisionName": "nope"},
    ],
    lambda vm, v: vm["spec"].__setitem__("instancetype", v),
)
sweep(
    "instancetype",
    "preference ref={}",
    [
        {"name": "missing"},
        {"kind": "VirtualMachineClusterPreference", "name": "linux"},
        {"kind": "VirtualMachinePreference", "name": "linux"},
    ],
    lambda vm, v: vm["spec"].__setitem__("preference", v),
)
sweep(
    "instancetype",
    "preference requirements with template {}",
    [
        ("cpu.cores", 1),
        ("cpu.sockets", 2),
        ("cpu.threads", 1),
        ("memory.guest", "512Mi"),
        ("memory.guest", "2Gi"),
        ("resources.requests.memory", "512Mi"),
    ],
    lambda vm, v: (
        vm["spec"].pop("instancetype", None),
        vm["spec"].__setitem__("preference", {"kind": "VirtualMachinePreference", "name": "linux"}),
        domain(vm).pop("resources", None),
        domain(vm).pop("memory", None),
        domain(vm).pop("cpu", None),
        setp(vm, "spec.template.spec.domain." + v[0], v[1]),
    ),
)

# instancetypes and preferences of their own (objects given with the variant)


def _it(name: str, spec: JSON, cluster: bool = True) -> JSON:
    kind = "VirtualMachineClusterInstancetype" if cluster else "VirtualMachineInstancetype"
    meta: JSON = {"name": name} if cluster else {"name": name, "namespace": "default"}
    return {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def _pref(name: str, spec: JSON, cluster: bool = True) -> JSON:
    kind = "VirtualMachineClusterPreference" if cluster else "VirtualMachinePreference"
    meta: JSON = {"name": name} if cluster else {"name": name, "namespace": "default"}
    return {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def _use(vm: JSON, it: str | None, pref: str | None) -> None:
    vm["spec"].pop("instancetype", None)
    vm["spec"].pop("preference", None)
    if it:
        vm["spec"]["instancetype"] = {"kind": "VirtualMachineClusterInstancetype", "name": it}
        domain(vm).pop("resources", None)
        domain(vm).pop("memory", None)
        domain(vm).pop("cpu", None)
    if pref:
        vm["spec"]["preference"] = {"kind": "VirtualMachineClusterPreference", "name": pref}


for _guest in (1, 2, 3, 4, 6, 8):
    for _topology in ("spread", "preferSpread"):
        for _opts in (
            None,
            {"across": "SocketsCores"},
            {"across": "SocketsCores", "ratio": 3},
            {"across": "CoresThreads"},
            {"across": "CoresThreads", "ratio": 4},
            {"across": "SocketsCoresThreads", "ratio": 2},
            {"across": "SocketsCoresThreads"},
        ):
            _cpu: JSON = {"preferredCPUTopology": _topology}
            if _opts is not None:
                _cpu["spreadOptions"] = _opts
            variant(
                "instancetype",
                f"spread guest={_guest} {_topology} {_opts}",
                lambda vm: _use(vm, "it-x", "pref-x"),
                objects=(
                    _it("it-x", {"cpu": {"guest": _guest}, "memory": {"guest": "1Gi"}}),
                    _pref("pref-x", {"cpu": _cpu}),
                ),
            )
_TOPOLOGIES = (
    "sockets",
    "cores",
    "threads",
    "spread",
    "any",
    "preferSockets",
    "preferCores",
    "preferThreads",
    "preferAny",
    None,
)
for _topology in _TOPOLOGIES:
    for _cpu_members in (
        {"cores": 1},
        {"cores": 4, "sockets": 1, "threads": 1},
        {"sockets": 4},
        {"threads": 4, "cores": 1, "sockets": 1},
        {"sockets": 2, "cores": 2, "threads": 1},
        None,
    ):
        _pcpu: JSON = {"preferredCPUTopology": _topology} if _topology else {}
        variant(
            "instancetype",
            f"requirements cpu.guest=4 topology={_topology} vm cpu={_cpu_members}",
            lambda vm, c=_cpu_members: (
                _use(vm, None, "req-cpu"),
                domain(vm).pop("cpu", None),
                cpu(vm).update(c) if c is not None else None,
            ),
            objects=(_pref("req-cpu", {"cpu": _pcpu, "requirements": {"cpu": {"guest": 4}}}),),
        )
for _across in ("SocketsCores", "CoresThreads", "SocketsCoresThreads"):
    variant(
        "instancetype",
        f"requirements cpu.guest=8 spread across {_across}, vm 2x2x1",
        lambda vm: (
            _use(vm, None, "req-spread"),
            domain(vm).pop("cpu", None),
            cpu(vm).update({"sockets": 2, "cores": 2, "threads": 1}),
        ),
        objects=(
            _pref(
                "req-spread",
                {
                    "cpu": {"preferredCPUTopology": "spread", "spreadOptions": {"across": _across}},
                    "requirements": {"cpu": {"guest": 8}},
                },
            ),
        ),
    )
for _it_guest in (1, 4):
    variant(
        "instancetype",
        f"requirements cpu.guest=2 with instancetype guest={_it_guest}",
        lambda vm: _use(vm, "it-req", "pref-req"),
        objects=(
            _it("it-req", {"cpu": {"guest": _it_guest}, "memory": {"guest": "1Gi"}}),
            _pref("pref-req", {"requirements": {"cpu": {"guest": 2}}}),
        ),
    )
for _mem in ("512Mi", "2Gi", "2048Mi", "1G", "2G"):
    variant(
        "instancetype",
        f"requirements memory.guest=2Gi with instancetype memory={_mem}",
        lambda vm: _use(vm, "it-mem", "pref-mem"),
        objects=(
            _it("it-mem", {"cpu": {"guest": 1}, "memory": {"guest": _mem}}),
            _pref("pref-mem", {"requirements": {"memory": {"guest": "2Gi"}}}),
        ),
    )
    variant(
        "instancetype",
        f"requirements memory.guest=2Gi with vm memory.guest={_mem}",
        lambda vm, m=_mem: (
            _use(vm, None, "pref-mem"),
            domain(vm).pop("memory", None),
            memory(vm).__setitem__("guest", m),
        ),
        objects=(_pref("pref-mem", {"requirements": {"memory": {"guest": "2Gi"}}}),),
    )
    variant(
        "instancetype",
        f"requirements memory.guest=2Gi with vm requests.memory={_mem} only",
        lambda vm, m=_mem: (
            _use(vm, None, "pref-mem"),
            domain(vm).pop("memory", None),
            domain(vm).pop("resources", None),
            resources(vm, "requests").__setitem__("memory", m),
        ),
        objects=(_pref("pref-mem", {"requirements": {"memory": {"guest": "2Gi"}}}),),
    )
for _arch in ("amd64", "arm64", "s390x", ""):
    for _vm_arch in (None, "arm64", "amd64"):
        variant(
            "instancetype",
            f"requirements architecture={_arch} vm architecture={_vm_arch}",
            lambda vm, a=_vm_arch: (
                _use(vm, None, "pref-arch"),
                tspec(vm).__setitem__("architecture", a) if a else tspec(vm).pop("architecture", None),
            ),
            objects=(_pref("pref-arch", {"requirements": {"architecture": _arch}}),),
        )
variant(
    "instancetype",
    "requirements cpu, memory and architecture all failing",
    lambda vm: (
        _use(vm, None, "pref-all"),
        domain(vm).pop("cpu", None),
        memory(vm).__setitem__("guest", "128Mi"),
    ),
    objects=(
        _pref(
            "pref-all",
            {"requirements": {"cpu": {"guest": 16}, "memory": {"guest": "64Gi"}, "architecture": "s390x"}},
        ),
    ),
)
_IT_FULL: JSON = {
    "cpu": {
        "guest": 2,
        "dedicatedCPUPlacement": True,
        "isolateEmulatorThread": True,
        "model": "host-passthrough",
        "numa": {"guestMappingPassthrough": {}},
        "realtime": {},
    },
    "memory": {"guest": "2Gi", "hugepages": {"pageSize": "2Mi"}},
    "gpus": [{"name": "g", "deviceName": "nvidia.com/A"}],
    "hostDevices": [{"name": "h", "deviceName": "vendor.com/x"}],
    "ioThreadsPolicy": "auto",
    "launchSecurity": {"sev": {}},
    "annotations": {"a": "b"},
    "nodeSelector": {"k": "v"},
    "schedulerName": "s",
}
for _member, _value in (
    ("domain.cpu.cores", 2),
    ("domain.cpu.sockets", 2),
    ("domain.cpu.threads", 2),
    ("domain.cpu.model", "x"),
    ("domain.cpu.dedicatedCpuPlacement", True),
    ("domain.cpu.isolateEmulatorThread", True),
    ("domain.cpu.numa", {"guestMappingPassthrough": {}}),
    ("domain.cpu.realtime", {}),
    ("domain.memory.guest", "1Gi"),
    ("domain.memory.hugepages", {"pageSize": "1Gi"}),
    ("domain.resources.requests.memory", "1Gi"),
    ("domain.resources.limits.cpu", "1"),
    ("domain.devices.gpus", [{"name": "g2", "deviceName": "x"}]),
    ("domain.devices.hostDevices", [{"name": "h2", "deviceName": "x"}]),
    ("domain.ioThreadsPolicy", "shared"),
    ("domain.launchSecurity", {"sev": {}}),
    ("nodeSelector", {"a": "b"}),
    ("schedulerName", "x"),
    ("domain.cpu", {}),
    ("domain.memory", {}),
):
    variant(
        "instancetype",
        f"full instancetype, vm also sets {_member}={_value}",
        lambda vm, m=_member, v=_value: (_use(vm, "it-full", None), setp(vm, "spec.template.spec." + m, v)),
        objects=(_it("it-full", _IT_FULL),),
        gates=("WorkloadEncryptionSEV",),
    )
variant(
    "instancetype",
    "full instancetype, vm sets cpu cores, memory guest and gpus",
    lambda vm: (
        _use(vm, "it-full", None),
        cpu(vm).update({"cores": 2, "sockets": 1}),
        memory(vm).__setitem__("guest", "1Gi"),
        devices(vm).__setitem__("gpus", []),
    ),
    objects=(_it("it-full", _IT_FULL),),
)
variant(
    "instancetype",
    "full instancetype, template annotation conflicts",
    lambda vm: (_use(vm, "it-full", None), tmeta(vm).__setitem__("annotations", {"a": "other"})),
    objects=(_it("it-full", _IT_FULL),),
)
_PREFERENCES: list[JSON] = [
    {"devices": {"preferredDiskBus": "ide"}},
    {"devices": {"preferredDiskBus": "sata", "preferredCdromBus": "virtio", "preferredLunBus": "ide"}},
    {"devices": {"preferredInterfaceModel": "bogus"}},
    {"devices": {"preferredDiskDedicatedIoThread": True, "preferredDiskBus": "sata"}},
    {"devices": {"preferredInputBus": "ps2", "preferredInputType": "mouse"}},
    {"devices": {"preferredAutoattachInputDevice": True}},
    {"devices": {"preferredSoundModel": "bogus"}},
    {"devices": {"preferredDiskIO": "bogus", "preferredDiskCache": "bogus"}},
    {"devices": {"preferredBlockMultiQueue": True, "preferredNetworkInterfaceMultiQueue": True}},
    {"devices": {"preferredDiskBlockSize": {"custom": {"logical": 1000, "physical": 1000}}}},
    {"firmware": {"preferredUseSecureBoot": True}},
    {"firmware": {"preferredUseEfi": True, "preferredUseBios": True}},
    {
        "firmware": {"preferredUseSecureBoot": True, "preferredUseEfi": True},
        "features": {"preferredSmm": {"enabled": False}},
    },
    {"machine": {"preferredMachineType": "bogus"}},
    {"preferredTerminationGracePeriodSeconds": 5},
    {"preferredSubdomain": "Bad_Sub"},
    {"cpu": {"preferredCPUFeatures": [{"name": "x", "policy": "bogus"}]}},
    {"preferredArchitecture": "arm64"},
    {"clock": {"preferredClockOffset": {"utc": {}}}},
    {"volumes": {"preferredStorageClassName": "fast"}},
]
for _p in _PREFERENCES:
    variant(
        "instancetype",
        f"preference {_p}",
        lambda vm: (
            _use(vm, None, "pref-dev"),
            add_disk(vm, "pd", {}, {"persistentVolumeClaim": {"claimName": "c"}}),
        ),
        objects=(_pref("pref-dev", _p),),
    )

# An instancetype's spec lands in the VMI spec the later stages validate: each of these sets something a
# rule of ValidateVirtualMachineInstanceSpec (or live update) reads, alone and beside a preference.
_IT_APPLIED: list[tuple[str, JSON, tuple[JSON, ...]]] = [
    ("hugepages 3Mi", {"memory": {"guest": "1Gi", "hugepages": {"pageSize": "3Mi"}}}, ()),
    ("hugepages larger than guest", {"memory": {"guest": "1Gi", "hugepages": {"pageSize": "2Gi"}}}, ()),
    ("hugepages not a multiple", {"memory": {"guest": "1001Mi", "hugepages": {"pageSize": "2Mi"}}}, ()),
    ("guest 1Mi", {"memory": {"guest": "1Mi"}}, ()),
    ("guest 0", {"memory": {"guest": "0"}}, ()),
    ("maxGuest below guest", {"memory": {"guest": "2Gi", "maxGuest": "1Gi"}}, (LIVE_UPDATE_ON,)),
    ("maxGuest not aligned", {"memory": {"guest": "1Gi", "maxGuest": "3000Mi"}}, (LIVE_UPDATE_ON,)),
    ("maxGuest with guest 512Mi", {"memory": {"guest": "512Mi", "maxGuest": "4Gi"}}, (LIVE_UPDATE_ON,)),
    (
        "maxGuest with realtime",
        {"memory": {"guest": "2Gi", "maxGuest": "4Gi"}, "cpu": {"guest": 2, "realtime": {}}},
        (LIVE_UPDATE_ON,),
    ),
    ("maxSockets below sockets", {"cpu": {"guest": 8, "maxSockets": 2}}, (LIVE_UPDATE_ON,)),
    ("maxSockets 0", {"cpu": {"guest": 4, "maxSockets": 0}}, (LIVE_UPDATE_ON,)),
    ("cpu guest 0", {"cpu": {"guest": 0}}, ()),
    ("cpu guest 1000", {"cpu": {"guest": 1000}}, (LIVE_UPDATE_ON, LIVE_UPDATE_OFF)),
    ("dedicated without memory", {"cpu": {"guest": 2, "dedicatedCPUPlacement": True}}, ()),
    ("isolateEmulatorThread alone", {"cpu": {"guest": 2, "isolateEmulatorThread": True}}, ()),
    ("numa without dedicated", {"cpu": {"guest": 2, "numa": {"guestMappingPassthrough": {}}}}, ()),
    (
        "numa without hugepages",
        {"cpu": {"guest": 2, "dedicatedCPUPlacement": True, "numa": {"guestMappingPassthrough": {}}}},
        (),
    ),
    ("realtime without dedicated", {"cpu": {"guest": 2, "realtime": {"mask": "0"}}}, ()),
    (
        "realtime bad mask",
        {"cpu": {"guest": 2, "dedicatedCPUPlacement": True, "realtime": {"mask": "x-y"}}},
        (),
    ),
    (
        "model host-model with dedicated",
        {"cpu": {"guest": 2, "model": "host-model", "dedicatedCPUPlacement": True}},
        (),
    ),
    ("ioThreadsPolicy supplementalPool no count", {"ioThreadsPolicy": "supplementalPool"}, ()),
    (
        "ioThreadsPolicy supplementalPool count 0",
        {"ioThreadsPolicy": "supplementalPool", "ioThreads": {"supplementalPoolThreadCount": 0}},
        (),
    ),
    ("ioThreadsPolicy bogus", {"ioThreadsPolicy": "bogus"}, ()),
    ("launchSecurity sev without efi", {"launchSecurity": {"sev": {}}}, ()),
    ("launchSecurity empty", {"launchSecurity": {}}, ()),
    (
        "gpus duplicate names",
        {"gpus": [{"name": "g", "deviceName": "a"}, {"name": "g", "deviceName": "b"}]},
        (),
    ),
    ("gpus with a claim", {"gpus": [{"name": "g", "claimName": "c", "requestName": "r"}]}, ()),
    ("hostDevices without the gate", {"hostDevices": [{"name": "h", "deviceName": "vendor.com/x"}]}, ()),
    ("annotations with ignition data", {"annotations": {"kubevirt.io/ignitiondata": "{}"}}, ()),
    ("annotations with a sidecar hook", {"annotations": {"hooks.kubevirt.io/hookSidecars": "[]"}}, ()),
    ("nodeSelector bad key", {"nodeSelector": {"Bad Key!": "v"}}, ()),
    ("schedulerName", {"schedulerName": "my-scheduler"}, ()),
]
for _label, _extra, _configs in _IT_APPLIED:
    _spec: JSON = {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}}
    for _key, _value in _extra.items():
        _spec[_key] = {**_spec[_key], **_value} if _key in ("cpu", "memory") else _value
    variant(
        "instancetype",
        f"instancetype applied: {_label}",
        lambda vm: _use(vm, "it-applied", None),
        objects=(_it("it-applied", _spec),),
        configs=_configs,
        gates=("HostDevices", "ExperimentalIgnitionSupport", "Sidecar", "WorkloadEncryptionSEV"),
    )
    variant(
        "instancetype",
        f"namespaced instancetype applied with a preference: {_label}",
        lambda vm: (
            _use(vm, "it-applied", "pref-applied"),
            vm["spec"]["instancetype"].update(kind="VirtualMachineInstancetype"),
            vm["spec"]["preference"].update(kind="VirtualMachinePreference"),
        ),
        objects=(
            _it("it-applied", _spec, cluster=False),
            _pref(
                "pref-applied",
                {"cpu": {"preferredCPUTopology": "cores"}, "devices": {"preferredDiskBus": "sata"}},
                cluster=False,
            ),
        ),
        configs=_configs,
    )
# A preference fills what the VM leaves unset; the rules then judge the VM with it.
_PREF_APPLIED: list[JSON] = [
    {"devices": {"preferredCdromBus": "virtio"}},
    {"devices": {"preferredDiskBus": "virtio", "preferredDiskDedicatedIoThread": True}},
    {"devices": {"preferredDiskBus": "sata", "preferredDiskDedicatedIoThread": True}},
    {"devices": {"preferredInterfaceModel": "e1000", "preferredInterfaceMasquerade": {}}},
    {"devices": {"preferredNetworkInterfaceMultiQueue": True}},
    {"devices": {"preferredUseVirtioTransitional": True, "preferredDiskBus": "scsi"}},
    {"devices": {"preferredVirtualGPUOptions": {"display": {"enabled": True, "ramFB": {"enabled": True}}}}},
    {"devices": {"preferredSoundModel": "ich9"}},
    {"devices": {"preferredAutoattachGraphicsDevice": False}},
    {"devices": {"preferredAutoattachGraphicsDevice": False, "preferredAutoattachSerialConsole": False}},
    {"devices": {"preferredAutoattachPodInterface": False}},
    {"devices": {"preferredTPM": {"persistent": True}}},
    {"features": {"preferredSmm": {"enabled": False}}, "firmware": {"preferredUseSecureBoot": True}},
    {"features": {"preferredHyperv": {"evmcs": {}}}},
    {"features": {"preferredHyperv": {"evmcs": {"enabled": True}, "vapic": {"enabled": False}}}},
    {"firmware": {"preferredEfi": {"secureBoot": True}, "preferredUseBios": True}},
    {"firmware": {"preferredUseBiosSerial": True}},
    {"cpu": {"preferredCPUTopology": "threads"}},
    {"cpu": {"preferredCPUTopology": "sockets"}, "requirements": {"cpu": {"guest": 3}}},
    {"preferredArchitecture": "s390x"},
    {"preferredArchitecture": "arm64", "firmware": {"preferredUseBios": True}},
    {"machine": {"preferredMachineType": "pc-i440fx-2.0"}},
    {
        "clock": {
            "preferredClockOffset": {"utc": {"offsetSeconds": 5}},
            "preferredTimer": {"hpet": {"present": False}},
        }
    },
    {"preferredTerminationGracePeriodSeconds": -1},
    {"preferredSubdomain": "a" * 70},
    {"annotations": {"kubevirt.io/ignitiondata": "{}"}},
    {"preferSpreadSocketToCoreRatio": 0, "cpu": {"preferredCPUTopology": "spread"}},
]
for _p in _PREF_APPLIED:
    for _it_guest in (None, 3):
        variant(
            "instancetype",
            f"preference applied: {_p} instancetype guest={_it_guest}",
            lambda vm, g=_it_guest: (
                _use(vm, "it-pa" if g else None, "pref-applied"),
                add_disk(vm, "pc", {"cdrom": {}}, {"persistentVolumeClaim": {"claimName": "c"}}),
                add_disk(vm, "pd", {}, {"persistentVolumeClaim": {"claimName": "d"}}),
            ),
            objects=(
                _pref("pref-applied", _p),
                _it("it-pa", {"cpu": {"guest": _it_guest or 1}, "memory": {"guest": "1Gi"}}),
            ),
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


for _label, _gate, _change in (
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
    ("downwardMetrics volume", "DownwardMetrics", lambda vm: add_disk(vm, "dm", {}, {"downwardMetrics": {}})),
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
    variant("gates", f"{_label} ({_gate}) in each configuration shape", _change, configs=_gate_shapes(_gate))


# --- status.volumeRequests (validateVolumeRequests) -----------------------------------------------------
_ADD = {
    "name": "hp",
    "disk": {"disk": {"bus": "scsi"}},
    "volumeSource": {"persistentVolumeClaim": {"claimName": "hp"}},
}
_VOLUME_REQUESTS: list[Any] = [
    [{"addVolumeOptions": _ADD}],
    [{"addVolumeOptions": {**_ADD, "disk": {"disk": {"bus": "sata"}}}}],
    [{"addVolumeOptions": {**_ADD, "disk": {"lun": {"bus": "virtio"}}}}],
    [{"addVolumeOptions": {**_ADD, "disk": {"lun": {"bus": "scsi"}}}}],
    [{"addVolumeOptions": {**_ADD, "disk": {"cdrom": {"bus": "sata"}}}}],
    [{"addVolumeOptions": {**_ADD, "disk": None}}],
    [{"addVolumeOptions": {k: v for k, v in _ADD.items() if k != "disk"}}],
    [{"addVolumeOptions": {**_ADD, "disk": {"disk": {"bus": "scsi"}, "dedicatedIOThread": True}}}],
    [{"addVolumeOptions": {**_ADD, "disk": {"disk": {"bus": "virtio"}, "bootOrder": 0}}}],
    [{"addVolumeOptions": {**_ADD, "disk": {"disk": {"bus": "virtio"}, "bootOrder": 1}}}],
    [{"addVolumeOptions": _ADD}, {"addVolumeOptions": _ADD}],
    [{"removeVolumeOptions": {"name": "hp"}}, {"removeVolumeOptions": {"name": "hp"}}],
    [{"removeVolumeOptions": {"name": "root"}}],
    [{"addVolumeOptions": _ADD, "removeVolumeOptions": {"name": "hp"}}],
    [{}],
    [{"addVolumeOptions": {**_ADD, "name": "root"}}],
    [{"addVolumeOptions": {**_ADD, "volumeSource": {"dataVolume": {"name": "x"}}}}],
    [{"addVolumeOptions": {**_ADD, "name": "Bad_Name"}}],
    [{"addVolumeOptions": {**_ADD, "disk": {"disk": {"bus": "virtio"}, "serial": "bad serial"}}}],
    [{"addVolumeOptions": _ADD}, {"removeVolumeOptions": {"name": "hp"}}],
]
sweep(
    "volumerequests",
    "status.volumeRequests={}",
    _VOLUME_REQUESTS,
    lambda vm, v: vm.__setitem__("status", {"volumeRequests": v}),
)
sweep(
    "volumerequests",
    "ready VM without VMI, volumeRequests={}",
    _VOLUME_REQUESTS[:3],
    lambda vm, v: vm.__setitem__("status", {"ready": True, "volumeRequests": v}),
)


def _vmis(volumes: list[JSON], migration: JSON | None = None, deleting: bool = False) -> tuple[JSON, ...]:
    """A running VMI for each base VM's name (the webhook reads the VM's VMI when the VM is ready)."""
    out = []
    for name in ("cd", "dv", "it", "min"):
        meta: JSON = {"name": name, "namespace": "default"}
        if deleting:
            meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        vmi: JSON = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": meta,
            "spec": {
                "domain": {"devices": {"disks": [{"name": v["name"]} for v in volumes]}},
                "volumes": volumes,
            },
        }
        if migration is not None:
            vmi["status"] = {"migrationState": migration}
        out.append(vmi)
    return tuple(out)


_HP_PVC = {"name": "hp", "persistentVolumeClaim": {"claimName": "hp"}}
_HP_OTHER = {"name": "hp", "persistentVolumeClaim": {"claimName": "other"}}
for _label, _objects in (
    ("running VMI without the volume", _vmis([{"name": "root", "containerDisk": {"image": "i"}}])),
    ("running VMI with the same volume", _vmis([_HP_PVC])),
    ("running VMI with another volume of that name", _vmis([_HP_OTHER])),
    ("running VMI being deleted, other volume", _vmis([_HP_OTHER], deleting=True)),
    ("running VMI migrating", _vmis([], {"startTimestamp": "2024-01-01T00:00:00Z"})),
    (
        "running VMI migrated",
        _vmis([], {"startTimestamp": "2024-01-01T00:00:00Z", "endTimestamp": "2024-01-01T00:01:00Z"}),
    ),
    ("running VMI migration not started", _vmis([], {"targetNode": "n"})),
    ("running VMI with an invalid spec", _vmis([{"name": "x"}])),
):
    for _ready in (True, False):
        variant(
            "volumerequests",
            f"{_label}, ready={_ready}, add hp",
            lambda vm, r=_ready: vm.__setitem__(
                "status", {"ready": r, "volumeRequests": [{"addVolumeOptions": _ADD}]}
            ),
            objects=_objects,
        )
    variant(
        "volumerequests",
        f"{_label}, ready, remove root",
        lambda vm: vm.__setitem__(
            "status", {"ready": True, "volumeRequests": [{"removeVolumeOptions": {"name": "root"}}]}
        ),
        objects=_objects,
    )

# --- message formatting: values KubeVirt prints with %q, %s, %v, field.Error (JSON for named types) -----
SPECIAL = [
    "<b>&",
    "\u00e9",
    "\x01",
    'a"b',
    "\u2028",
    "\x7f",
    "tab\t",
    "new\nline",
    "\\",
    "\u65e5\u672c",
    "a'b",
    " ",
    "%s",
    "\ufffd",
    "a\u200bb",
    "x" * 300,
]
sweep(
    "format",
    "whenUnsatisfiable={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [_tsc(whenUnsatisfiable=v)]),
)
sweep(
    "format",
    "topologyKey={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [_tsc(topologyKey=v)]),
)
sweep(
    "format",
    "labelSelector operator={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__(
        "topologySpreadConstraints",
        [_tsc(labelSelector={"matchExpressions": [{"key": "k", "operator": v, "values": ["a"]}]})],
    ),
)
sweep(
    "format",
    "labelSelector matchLabels value={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__(
        "topologySpreadConstraints", [_tsc(labelSelector={"matchLabels": {"k": v}})]
    ),
)
sweep(
    "format",
    "labelSelector matchLabels key={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__(
        "topologySpreadConstraints", [_tsc(labelSelector={"matchLabels": {v: "a"}})]
    ),
)
sweep(
    "format",
    "labelSelector expression value={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__(
        "topologySpreadConstraints",
        [_tsc(labelSelector={"matchExpressions": [{"key": "k", "operator": "In", "values": [v]}]})],
    ),
)
sweep(
    "format",
    "podAffinity namespace={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__(
        "affinity",
        {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(namespaces=[v])]}},
    ),
)
sweep(
    "format",
    "matchFields value={}",
    SPECIAL,
    lambda vm, v: _node_affinity(
        vm,
        requiredDuringSchedulingIgnoredDuringExecution={
            "nodeSelectorTerms": [
                _node_term(fields=[{"key": "metadata.name", "operator": "In", "values": [v]}])
            ]
        },
    ),
)
sweep(
    "format",
    "matchFields key={}",
    SPECIAL,
    lambda vm, v: _node_affinity(
        vm,
        requiredDuringSchedulingIgnoredDuringExecution={
            "nodeSelectorTerms": [_node_term(fields=[{"key": v, "operator": "In", "values": ["n"]}])]
        },
    ),
)
sweep(
    "format",
    "interface name={} state absent",
    SPECIAL,
    lambda vm, v: add_iface(vm, {"name": v, "masquerade": {}, "state": "absent"}),
)
sweep(
    "format",
    "interface state={}",
    SPECIAL,
    lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "state": v}),
)
sweep(
    "format",
    "interface model={}",
    SPECIAL,
    lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "model": v}),
)
sweep(
    "format",
    "interface mac={}",
    SPECIAL,
    lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "macAddress": v}),
)
sweep(
    "format",
    "port name={}",
    SPECIAL,
    lambda vm, v: _ports(vm, [{"port": 80, "name": v}, {"port": 81, "name": v}]),
)
sweep(
    "format",
    "cpu feature name={} bad policy",
    SPECIAL,
    lambda vm, v: cpu(vm).__setitem__("features", [{"name": v, "policy": v}]),
)
sweep("format", "disk bus={}", SPECIAL, lambda vm, v: add_disk(vm, "fb", {"disk": {"bus": v}}))
sweep("format", "disk cache={}", SPECIAL, lambda vm, v: add_disk(vm, "fc", {"cache": v}))
sweep("format", "disk errorPolicy={}", SPECIAL, lambda vm, v: add_disk(vm, "fe", {"errorPolicy": v}))
sweep("format", "disk name={}", SPECIAL, lambda vm, v: add_disk(vm, v))
sweep("format", "disk serial={}", SPECIAL, lambda vm, v: add_disk(vm, "fs", {"serial": v}))
sweep(
    "format",
    "hostDisk type={}",
    SPECIAL,
    lambda vm, v: add_disk(vm, "fh", {}, {"hostDisk": {"path": "/x", "type": v}}),
    gates=("HostDisk",),
)
sweep("format", "machine type={}", SPECIAL, lambda vm, v: domain(vm).__setitem__("machine", {"type": v}))
sweep(
    "format",
    "nameservers=[{}]x4",
    SPECIAL,
    lambda vm, v: tspec(vm).update({"dnsPolicy": "None", "dnsConfig": {"nameservers": [v] * 4}}),
)
sweep("format", "search={}", SPECIAL, lambda vm, v: tspec(vm).update({"dnsConfig": {"searches": [v]}}))
sweep("format", "hostname={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("hostname", v))
sweep("format", "subdomain={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("subdomain", v))
sweep(
    "format", "serviceAccountName={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("serviceAccountName", v)
)
sweep("format", "startStrategy={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("startStrategy", v))
sweep("format", "evictionStrategy={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("evictionStrategy", v))
sweep("format", "ioThreadsPolicy={}", SPECIAL, lambda vm, v: domain(vm).__setitem__("ioThreadsPolicy", v))
sweep("format", "runStrategy={}", SPECIAL, lambda vm, v: _run(vm, "-", v))
sweep(
    "format", "panic model={}", SPECIAL, lambda vm, v: devices(vm).__setitem__("panicDevices", [{"model": v}])
)
sweep(
    "format",
    "resourceClaim name={}",
    SPECIAL,
    lambda vm, v: tspec(vm).__setitem__("resourceClaims", [{"name": v, "resourceClaimName": v}]),
)
sweep(
    "format",
    "pciAddress={}",
    SPECIAL,
    lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "pciAddress": v}),
)
sweep(
    "format",
    "dvt namespace={}",
    SPECIAL,
    lambda vm, v: _dvt(
        vm,
        {"metadata": {"name": "t1", "namespace": v}, "spec": {"storage": _STORAGE, "source": {"blank": {}}}},
    ),
)
sweep(
    "format",
    "volume request name={}",
    SPECIAL,
    lambda vm, v: vm.__setitem__(
        "status", {"volumeRequests": [{"addVolumeOptions": {**_ADD, "name": v, "disk": {"cdrom": {}}}}]}
    ),
)
sweep(
    "format",
    "input bus={} type",
    SPECIAL,
    lambda vm, v: devices(vm).__setitem__("inputs", [{"name": "i", "bus": v, "type": v}]),
)
sweep(
    "format",
    "sound model={}",
    SPECIAL,
    lambda vm, v: devices(vm).__setitem__("sound", {"name": "s", "model": v}),
)
sweep(
    "format",
    "ntp server={}",
    SPECIAL,
    lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "dhcpOptions": {"ntpServers": [v]}}),
)
sweep("format", "video type={}", SPECIAL, lambda vm, v: devices(vm).__setitem__("video", {"type": v}))

# --- names as Go's decoder matches them (case-insensitively where the schema does not look) ------------
sweep(
    "decode",
    "template metadata {}",
    [
        {"Labels": {"kubevirt.io/created-by": "x"}},
        {"LABELS": {"kubevirt.io/nodeName": "x"}},
        {"labels": {"a": "b"}, "Labels": {"kubevirt.io/created-by": "x"}},
        {"Labels": {"kubevirt.io/created-by": "x"}, "labels": {"a": "b"}},
        {"Annotations": {"kubevirt.io/ignitiondata": "x"}},
        {"annotations": {"hooks.kubevirt.io/hookSidecars": "x"}, "ANNOTATIONS": {}},
        {"labels": None},
        {"labels": {"kubevirt.io/created-by": ""}},
    ],
    lambda vm, v: vm["spec"]["template"].__setitem__("metadata", v),
)
sweep(
    "decode",
    "vm metadata {}",
    [
        {"Name": "cd", "Namespace": "other"},
        {"name": "cd", "namespace": "default", "DeletionTimestamp": "2024-01-01T00:00:00Z"},
        {"name": "cd", "namespace": "default", "deletionTimestamp": None},
        {"name": "cd"},
        {"name": "cd", "NAMESPACE": "x"},
    ],
    lambda vm, v: (
        vm.__setitem__("metadata", v),
        tspec(vm).__setitem__("hostname", "Bad_Host"),
        _dvt(
            vm,
            {
                "metadata": {"name": "t1", "namespace": "other"},
                "spec": {"storage": _STORAGE, "source": {"blank": {}}},
            },
        ),
    ),
)
sweep(
    "decode",
    "status {}",
    [
        {"Ready": True, "VolumeRequests": [{"addVolumeOptions": {"name": "x"}}]},
        {"volumerequests": [{}]},
        {"volumeRequests": [{"AddVolumeOptions": {"name": "hp"}, "removeVolumeOptions": {"name": "hp"}}]},
        {"volumeRequests": None},
        {"volumeRequests": []},
        {"ready": "yes"},
        {"printableStatus": 5},
    ],
    lambda vm, v: vm.__setitem__("status", v),
)
sweep(
    "decode",
    "integer field cores={}",
    [1.0, 2.5, -1, 4294967296, 4294967295, 2147483648, 1e3, "2", True, 0.99999999999],
    lambda vm, v: cpu(vm).__setitem__("cores", v),
)
sweep(
    "decode",
    "bootOrder={}",
    [1.0, -1, 4294967296, 0, 18446744073709551615, 18446744073709551616],
    lambda vm, v: add_disk(vm, "bo", {"bootOrder": v}),
)
sweep(
    "decode",
    "port={}",
    [1.0, 2147483648, -2147483649, 65535.0, 80.5],
    lambda vm, v: _ports(vm, [{"port": v}]),
)
sweep(
    "decode",
    "memory.guest={}",
    [1073741824, 1073741824.0, 1.5e9, 1e20, -1e9, 10**30, "1e1000", "0.000000001"],
    lambda vm, v: memory(vm).__setitem__("guest", v),
    configs=(LIVE_UPDATE_OFF,),
)

# --- misc VM shapes ------------------------------------------------------------------------------------------
variant(
    "status",
    "deletionTimestamp set on a broken VM",
    lambda vm: (
        vm["metadata"].__setitem__("deletionTimestamp", "2024-01-01T00:00:00Z"),
        tspec(vm).__setitem__("hostname", "Bad_Host"),
    ),
)
sweep(
    "status",
    "architecture={}",
    ["amd64", "arm64", "s390x", "bogus", "", "AMD64"],
    lambda vm, v: tspec(vm).__setitem__("architecture", v),
)
sweep(
    "status",
    "cluster default architecture={}",
    ["arm64", "s390x"],
    lambda vm, v: None,
    configs=(
        {"architectureConfiguration": {"defaultArchitecture": "arm64"}},
        {"architectureConfiguration": {"defaultArchitecture": "s390x"}},
    ),
)
variant("status", "autoattachPodInterface false, no networks", lambda vm: drop_networks(vm))
sweep(
    "status",
    "networkInterfaceMultiqueue={} / blockMultiQueue",
    [True, False],
    lambda vm, v: devices(vm).update({"networkInterfaceMultiqueue": v, "blockMultiQueue": v}),
)
variant(
    "status",
    "cluster default network interface slirp",
    lambda vm: drop_networks(vm) or devices(vm).pop("autoattachPodInterface", None),
    configs=(
        {"network": {"defaultNetworkInterface": "slirp"}},
        {"network": {"defaultNetworkInterface": "bridge", "permitBridgeInterfaceOnPodNetwork": False}},
        {"network": {"defaultNetworkInterface": "bogus"}},
    ),
)


# ======================================================================================================
# The checks: every StatusCause the webhook can return for a VM CREATE, in the webhook's order.
# ======================================================================================================


@dataclass(frozen=True)
class Check:
    """One cause of KubeVirt's webhook: ``go`` is its file and function, ``gate`` the feature gate (or
    configuration) it depends on, ``reason`` its cause type, ``fragment`` a text only its message holds
    (``field``: a text its field holds, where the message is shared)."""

    id: str
    go: str
    reason: str
    fragment: str
    field: str = ""
    gate: str = ""
    area: str = ""

    def matches(self, cause: JSON) -> bool:
        message = cause.get("message", "")
        if self.fragment.startswith("re:"):
            found = re.search(self.fragment[3:], message) is not None
        else:
            found = self.fragment in message
        field = cause.get("field", "")
        if self.field.startswith("re:"):
            field_ok = re.search(self.field[3:], field) is not None
        else:
            field_ok = self.field in field
        return found and field_ok and (not self.reason or cause.get("reason") == self.reason)


CHECKS: list[Check] = []
_GO_FILE = ""
_AREA = ""


def _file(go_file: str, area: str) -> None:
    global _GO_FILE, _AREA
    _GO_FILE, _AREA = go_file, area


def check(id: str, func: str, reason: str, fragment: str, field: str = "", gate: str = "") -> None:
    CHECKS.append(Check(id, f"{_GO_FILE}: {func}", reason, fragment, field, gate, _AREA))


INV, REQ, NS, DUP, NF, FORB = (
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueNotSupported",
    "FieldValueDuplicate",
    "FieldValueNotFound",
    "FieldValueForbidden",
)

# -- stage 1: schema (util/webhooks ValidateSchema, util/openapi Validator.Validate, go-openapi) --------
_file("pkg/util/openapi/openapi.go", "schema")
check("schema.top-level", "Validator.Validate", "", r"re:^\.[^.]* in body is a forbidden property$")
check("schema.spec-required", "Validator.Validate", "", "re:^spec in body is required$")
check(
    "schema.unknown-member",
    "ValidateSpec (go-openapi objectValidator)",
    "",
    r"re:^(spec|status)\..* in body is a forbidden property$",
)
check(
    "schema.required",
    "ValidateSpec (go-openapi objectValidator)",
    "",
    r"re:^(spec|status)\..* in body is required$",
)
check("schema.type", "ValidateSpec (go-openapi typeValidator)", "", "in body must be of type")
check("schema.enum", "ValidateSpec (go-openapi enum)", "", "in body should be one of")

# -- stage 3: instancetype and preference (instancetype/webhooks/vm ApplyToVM) -------------------------
_file("pkg/instancetype", "instancetype")
check(
    "instancetype.spread",
    "preference/validation CheckSpreadCPUTopology",
    INV,
    "vCPUs provided by the instance type are not divisible by",
)
check(
    "instancetype.conflict",
    "apply VMIApplier.ApplyToVMI (conflict.Conflicts)",
    INV,
    "conflicts with selected instance type",
)
# -- stage 5: preference requirements (instancetype/preference/requirements Check) ----------------------
check(
    "requirements.cpu",
    "preference/requirements checkCPU",
    NF,
    "re:failure checking preference requirements: (insufficient CPU|no CPU)",
)
check(
    "requirements.memory",
    "preference/requirements checkMemory",
    NF,
    "failure checking preference requirements: insufficient Memory",
)
check(
    "requirements.arch",
    "preference/requirements checkArch",
    NF,
    "failure checking preference requirements: preference requires architecture",
)

# -- stage 6: discontinued gates and bindings -------------------------------------------------------------
_file("pkg/virt-config/featuregate/validator.go", "gates")
check("gates.discontinued", "ValidateFeatureGates", NS, "is discontinued since", gate="Passt, Macvtap")
_file("pkg/network/admitter/discontinued.go", "interfaces")
check("bindings.slirp", "validateDiscontinuedBindings", INV, "Slirp interface support has been discontinued")
check("bindings.passt", "validateDiscontinuedBindings", INV, "Passt network binding has been discontinued")
check(
    "bindings.macvtap", "validateDiscontinuedBindings", INV, "Macvtap network binding has been discontinued"
)

# -- stage 7: ValidateVirtualMachineSpec -----------------------------------------------------------------
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vms-admitter.go", "spec")
check("vm.template", "ValidateVirtualMachineSpec", REQ, "missing virtual machine template.")
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go", "metadata")
check(
    "metadata.reserved-labels", "ValidateVirtualMachineInstanceMetadata", NS, "reserved kubevirt.io/ labels"
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
_file("pkg/virt-api/webhooks/validating-webhook/admitters/grace_io_virtualization.go", "gpus")
check(
    "grace.root-complex",
    "validateGraceIOVirtualizationAnnotations",
    INV,
    "not compatible with placing PCI devices on the root complex",
    gate="permittedHostDevices",
)
check(
    "grace.pci-hole",
    "validateGraceIOVirtualizationAnnotations",
    INV,
    "requires the 64-bit PCI hole",
    gate="permittedHostDevices",
)
# ValidateVirtualMachineInstanceSpec, in its order
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go", "dns")
check(
    "dns.hostname",
    "validateHostNameNotConformingToDNSLabelRules",
    INV,
    "does not conform to the kubernetes DNS_LABEL rules",
    field="hostname",
)
check(
    "dns.subdomain",
    "validateSubdomainDNSSubdomainRules",
    INV,
    "does not conform to the kubernetes DNS_SUBDOMAIN rules",
)
_AREA = "memory"
check(
    "memory.requests-negative",
    "validateMemoryRequestsNegativeOrNull",
    INV,
    "must be greater than or equal to 0.",
    field="requests.memory",
)
check(
    "memory.requests-below-1M",
    "validateMemoryRequestsNegativeOrNull",
    INV,
    "must be greater than or equal to 1M.",
)
check(
    "memory.limits-negative",
    "validateMemoryLimitsNegativeOrNull",
    INV,
    "must be greater than or equal to 0.",
    field="limits.memory",
)
check(
    "memory.requests-over-limits",
    "validateMemoryLimitsNegativeOrNull",
    INV,
    "is greater than",
    field="requests.memory",
)
check(
    "memory.hugepages-pagesize",
    "validateHugepagesMemoryRequests",
    INV,
    "quantities must match the regular expression",
    field="hugepages.pageSize",
)
check(
    "memory.hugepages-too-small",
    "validateHugepagesMemoryRequests",
    INV,
    "must be equal to or larger than page size",
)
check(
    "memory.hugepages-multiple", "validateHugepagesMemoryRequests", INV, "is not a multiple of the page size"
)
check(
    "memory.guest-over-limit",
    "validateGuestMemoryLimit",
    INV,
    "must be equal to or less than the memory limit",
    gate="vmRolloutStrategy",
)
_AREA = "firmware"
check("firmware.machine-type", "validateEmulatedMachine", INV, "is not supported: ", field="machine.type")
check(
    "firmware.acpi-empty",
    "validateFirmwareACPI",
    INV,
    "ACPI was set but no SLIC nor MSDM volume reference was set",
)
check("firmware.acpi-volume-type", "validateACPIRef", INV, "refers to Volume of unsupported type.")
check("firmware.acpi-no-volume", "validateACPIRef", INV, "does not have a matching Volume.")
_AREA = "cpu"
check(
    "cpu.requests-negative",
    "validateCPURequestNotNegative",
    INV,
    "must be greater than or equal to 0.",
    field="requests.cpu",
)
check(
    "cpu.limits-negative",
    "validateCPULimitNotNegative",
    INV,
    "must be greater than or equal to 0.",
    field="limits.cpu",
)
check(
    "cpu.requests-over-limits",
    "validateCpuRequestDoesNotExceedLimit",
    INV,
    "is greater than",
    field="requests.cpu",
)
check("cpu.dedicated-memory", "validateMemoryIsProvided", INV, "should be provided", field="limits.memory")
check(
    "cpu.dedicated-request-integer",
    "validateCPURequestIsInteger",
    INV,
    "provided resources CPU requests must be an interger",
)
check(
    "cpu.dedicated-limit-integer",
    "validateCPULimitIsInteger",
    INV,
    "provided resources CPU limits must be an interger",
)
check(
    "cpu.dedicated-memory-equal",
    "validateMemoryRequestsAndLimits",
    INV,
    "must be equal to spec.template.spec.domain.resources.limits.memory",
)
check(
    "cpu.dedicated-something",
    "validateRequestLimitOrCoresProvidedOnDedicatedCPUPlacement",
    INV,
    "must be provided when DedicatedCPUPlacement is true",
)
check(
    "cpu.dedicated-equal",
    "validateRequestEqualsLimitOnDedicatedCPUPlacement",
    INV,
    "must be equal when DedicatedCPUPlacement is true",
)
check(
    "cpu.dedicated-cores",
    "validateRequestOrLimitWithCoresProvidedOnDedicatedCPUPlacement",
    INV,
    "must not be provided at the same time with",
)
check(
    "cpu.dedicated-arm64-threads",
    "validateThreadCountOnArchitecture",
    INV,
    "threads must not be greater than 1",
)
check(
    "cpu.dedicated-threads",
    "validateThreadCountOnDedicatedCPUPlacement",
    INV,
    "Not more than two threads must be provided",
)
check("cpu.numa-gate", "validateNUMA", INV, "NUMA feature gate is not enabled", gate="NUMA (GA)")
check("cpu.numa-dedicated", "validateNUMA", INV, "must be set to true when NUMA topology strategy is set")
check("cpu.numa-hugepages", "validateNUMA", INV, "must be requested when NUMA topology strategy is set")
check(
    "cpu.isolate-emulator-thread",
    "validateCPUIsolatorThread",
    INV,
    "IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement",
)
check("cpu.feature-policy", "validateCPUFeaturePolicies", NS, "that is not supported.", field="features")
check(
    "cpu.max-sockets",
    "validateCPUHotplug",
    INV,
    "Number of sockets in CPU topology is greater than the maximum sockets allowed",
)
_AREA = "devices"
check(
    "devices.start-strategy",
    "validateStartStrategy",
    INV,
    "is set with an unrecognized option",
    field="startStrategy",
)
check(
    "devices.paused-liveness", "validateStartStrategy", INV, "Pausing VMI with LivenessProbe is not supported"
)
_AREA = "cpu"
check(
    "cpu.realtime-dedicated",
    "validateCPURealtime",
    REQ,
    "must be set to true when spec.template.spec.domain.cpu.realtime is used",
)
check(
    "cpu.realtime-numa",
    "validateMemoryRealtime",
    REQ,
    "must be defined when spec.template.spec.domain.cpu.realtime is used",
)
_file("pkg/virt-api/webhooks/validating-webhook/admitters/validate-k8s-utils.go", "scheduling")
check("affinity.node-terms", "ValidateNodeSelector", INV, "must have at least one node selector term")
check(
    "affinity.node-op-values",
    "ValidateNodeSelectorRequirement",
    INV,
    "must be specified when `operator` is 'In' or 'NotIn'",
    field="nodeAffinity",
)
check(
    "affinity.node-exists-values",
    "ValidateNodeSelectorRequirement",
    INV,
    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
    field="nodeAffinity",
)
check(
    "affinity.node-gt-values",
    "ValidateNodeSelectorRequirement",
    INV,
    "must be specified single value when `operator` is 'Lt' or 'Gt'",
    field="nodeAffinity",
)
check(
    "affinity.node-operator",
    "ValidateNodeSelectorRequirement / ValidateNodeFieldSelectorRequirement",
    INV,
    "not a valid selector operator",
    field="nodeAffinity",
)
check(
    "affinity.label-key",
    "unversionedvalidation.ValidateLabelName",
    INV,
    "Invalid value",
    field=r"re:nodeAffinity.*matchExpressions\[\d+\]\.key$",
)
check(
    "affinity.field-values",
    "ValidateNodeFieldSelectorRequirement",
    INV,
    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
)
check("affinity.field-key", "ValidateNodeFieldSelectorRequirement", INV, "not a valid field selector key")
check(
    "affinity.field-value",
    "ValidateNodeFieldSelectorRequirement (NameIsDNSSubdomain)",
    INV,
    "RFC 1123 subdomain",
    field="matchFields",
)
check(
    "affinity.weight",
    "ValidatePreferredSchedulingTerms / validateWeightedPodAffinityTerms",
    INV,
    "must be in the range 1-100",
)
check(
    "affinity.label-selector",
    "unversionedvalidation.ValidateLabelSelector",
    INV,
    "",
    field=r"re:ffinity\..*\.labelSelector\.",
)
check(
    "affinity.namespace-selector",
    "unversionedvalidation.ValidateLabelSelector",
    INV,
    "",
    field="namespaceSelector.",
)
check(
    "affinity.namespaces",
    "validatePodAffinityTerm (ValidateNamespaceName)",
    INV,
    "Invalid value",
    field=r"re:\.namespace$",
)
check("affinity.topology-key-empty", "validatePodAffinityTerm", INV, "can not be empty", field="ffinity.")
check(
    "affinity.topology-key",
    "validatePodAffinityTerm (ValidateLabelName)",
    INV,
    "Invalid value",
    field=r"re:ffinity\..*topologyKey$",
)
check("spread.max-skew", "ValidateMaxSkew", INV, "must be greater than zero")
check(
    "spread.topology-key",
    "ValidateTopologyKey",
    INV,
    "",
    field=r"re:topologySpreadConstraints\[\d+\]\.topologyKey$",
)
check(
    "spread.label-selector",
    "unversionedvalidation.ValidateLabelSelector",
    INV,
    "",
    field="topologySpreadConstraints.labelSelector",
)
check(
    "spread.when-unsatisfiable",
    "ValidateWhenUnsatisfiable",
    INV,
    'supported values: "DoNotSchedule", "ScheduleAnyway"',
)
check("spread.duplicate", "ValidateSpreadConstraintNotRepeat", INV, "Duplicate value")
# network/admitter Validate
_file("pkg/network/admitter/netsource.go", "networks")
check("net.two-pod", "validateSinglePodNetwork", DUP, "more than one interface is connected to a pod network")
check(
    "net.two-multus-default",
    "validateSinglePodNetwork",
    INV,
    "Multus CNI should only have one default network",
)
check(
    "net.pod-and-multus-default",
    "validateSinglePodNetwork",
    INV,
    "Pod network cannot be defined when Multus default network is defined",
)
check("net.no-source", "validateSingleNetworkSource", REQ, "should have a network type")
check("net.two-sources", "validateSingleNetworkSource", REQ, "should have only one network type")
check("net.multus-name", "validateMultusNetworkSource", REQ, "CNI delegating plugin must have a networkName")
_file("pkg/network/admitter/admit.go", "interfaces")
check("iface.state", "validateInterfaceStateValue", INV, "interface state value is unsupported")
check("iface.state-sriov", "validateInterfaceStateValue", INV, "is not supported for SR-IOV NICs")
check("iface.state-absent-bridge", "validateInterfaceStateValue", INV, "is supported only for bridge binding")
check(
    "iface.state-absent-default", "validateInterfaceStateValue", INV, "is not supported on default networks"
)
_file("pkg/network/admitter/binding.go", "interfaces")
check(
    "iface.one-binding",
    "validateInterfaceBindingExists",
    INV,
    "must have exactly one binding method or binding plugin",
)
check(
    "iface.masquerade-pod",
    "validateMasqueradeBinding",
    INV,
    "Masquerade interface only implemented with pod network",
)
check(
    "iface.masquerade-mac",
    "validateMasqueradeBinding",
    INV,
    "The requested MAC address is reserved for the in-pod bridge",
)
check(
    "iface.bridge-pod",
    "validateBridgeBinding",
    INV,
    "Bridge on pod network configuration is not enabled",
    gate="network.permitBridgeInterfaceOnPodNetwork",
)
_file("pkg/network/admitter/passt.go", "interfaces")
check(
    "iface.passt-gate",
    "validatePasstBinding",
    INV,
    "PasstBinding feature gate is not enabled",
    gate="PasstBinding",
)
check(
    "iface.passt-pod", "validatePasstBinding", INV, "PasstBinding interface only implemented with pod network"
)
_file("pkg/network/admitter/netiface.go", "networks")
check("net.name-unique", "validateNetworkNameUnique", DUP, "every network must have a unique name")
_file("pkg/network/admitter/dra.go", "networks")
check(
    "net.dra-gate",
    "validateNetworkDevicesWithDRA",
    INV,
    "contains DRA networks but NetworkDevicesWithDRA feature gate is not enabled",
    gate="NetworkDevicesWithDRA",
)
check("net.dra-multus", "validateNetworkDevicesWithDRA", INV, "mixing Multus and DRA resourceClaim networks")
check(
    "net.dra-binding",
    "validateDRANetworkInterfaceBinding",
    INV,
    "requires an SR-IOV or binding plugin interface",
)
check("net.dra-claim-name", "validateDRAClaimAndRequestNames", REQ, "claimName is required for DRA network")
check(
    "net.dra-request-name", "validateDRAClaimAndRequestNames", REQ, "requestName is required for DRA network"
)
check(
    "net.dra-claim-ref", "validateDRANetworkClaimReference", NF, "which is not defined in spec.resourceClaims"
)
check(
    "net.dra-duplicate",
    "validateDRAClaimRequestUniqueness",
    DUP,
    "duplicate claimName/requestName combination",
)
_file("pkg/network/admitter/netiface.go", "interfaces")
check("net.no-interface", "validateNetworksAssignedToInterfaces", REQ, "not found.", field="networks[")
check(
    "iface.name-unique",
    "validateInterfaceNameUnique",
    DUP,
    "Only one interface can be connected to one specific network",
)
check("iface.no-network", "validateInterfacesAssignedToNetworks", INV, "not found.", field="interfaces[")
check("iface.name-format", "validateInterfaceNameFormat", INV, "Network interface name can only contain")
check("iface.model", "validateInterfaceModel", NS, "that is not supported.", field="model")
check(
    "iface.mac",
    "validateMacAddress",
    INV,
    "interface spec.template.spec.domain.devices.interfaces",
    field="macAddress",
)
check("iface.pci", "validatePciAddress", INV, "has malformed PCI address", field="interfaces")
check("iface.port-name-duplicate", "validateForwardPortsName", DUP, "Duplicate name of the port")
check("iface.port-name", "validateForwardPortsName", INV, "Invalid name of the port")
check("iface.port-required", "validateForwardPortNonZero", REQ, "Port field is mandatory.")
check("iface.port-range", "validateForwardPortInRange", INV, "Port field must be in range 0 < x < 65536.")
check(
    "iface.port-protocol",
    "validateForwardPortProtocol",
    INV,
    "Unknown protocol, only TCP or UDP allowed",
    field="ports[",
)
check(
    "iface.port-ranges-gate",
    "validatePortRangesConfiguration",
    INV,
    "the PortRangesSpec feature gate is not enabled",
    gate="PortRangesSpec",
)
check(
    "iface.port-ranges-and-ports",
    "validatePortRangeMutualExclusivity",
    INV,
    "Cannot define both ports and portRanges",
)
check(
    "iface.port-ranges-masquerade",
    "validatePortRangeMasqueradeOnly",
    INV,
    "portRanges are only supported on masquerade interfaces",
)
check("iface.port-ranges-count", "validateForwardPortRanges", INV, "No more than 10 portRanges are allowed")
check(
    "iface.port-ranges-protocol",
    "validateForwardPortRanges",
    INV,
    "Unknown protocol, only TCP or UDP allowed",
    field="portRanges[",
)
check("iface.port-ranges-start", "validateForwardPortRanges", INV, "Start must be a valid port number")
check("iface.port-ranges-end", "validateForwardPortRanges", INV, "End must be a valid port number")
check("iface.port-ranges-order", "validateForwardPortRanges", INV, "Start must be less than or equal to end")
check("iface.port-ranges-overlap", "validateForwardPortRangesOverlaps", INV, "overlap")
check(
    "iface.dhcp-duplicates", "validateDHCPExtraOptions", INV, "you have provided duplicate DHCPPrivateOptions"
)
check("iface.dhcp-range", "validateDHCPPrivateOptionsWithinRange", INV, "must be in range 224 to 254")
check(
    "iface.dhcp-ntp",
    "validateDHCPNTPServersAreValidIPv4Addresses",
    INV,
    "NTP servers must be a list of valid IPv4 addresses.",
)
# dra/admitter
_file("pkg/dra/admitter/dra_admitter.go", "gpus")
check("dra.claim-name-required", "validateResourceClaims", REQ, "is a required field", field="resourceClaims")
check("dra.claim-name-duplicate", "validateResourceClaims", DUP, "duplicate resourceClaims name")
check(
    "dra.claim-name-label",
    "validateResourceClaims",
    INV,
    "does not conform to the kubernetes DNS_LABEL rules:",
    field="resourceClaims",
)
check(
    "dra.claim-source-both",
    "validateResourceClaims",
    INV,
    "at most one of resourceClaimName or resourceClaimTemplateName",
)
check(
    "dra.claim-source-none",
    "validateResourceClaims",
    INV,
    "must specify one of: resourceClaimName, resourceClaimTemplateName",
)
check(
    "dra.claim-source-name", "validateResourceClaims (NameIsDNSSubdomain)", INV, "", field="resourceClaimName"
)
check(
    "dra.claim-template-name",
    "validateResourceClaims (NameIsDNSSubdomain)",
    INV,
    "",
    field="resourceClaimTemplateName",
)
check("dra.mixed", "validateDRADevices", INV, "contains both DRA and non-DRA")
check("dra.no-device", "validateNonDRADevices", REQ, "without deviceName or claimRequest")
check("dra.both", "validateNonDRADevices", INV, "with both deviceName and claimRequest")
check(
    "dra.gate",
    "validateDRADevices",
    INV,
    "but feature gate is not enabled",
    field="devices.",
    gate="GPUsWithDRA, HostDevicesWithDRA",
)
check("dra.claim-required", "validateDRADevices", REQ, "claimName is required for DRA ", field="devices.")
check("dra.request-required", "validateDRADevices", REQ, "requestName is required for DRA ", field="devices.")
check("dra.pair-duplicate", "validateDRADevices", DUP, 're:duplicate claimName/requestName pair "[^"]*"$')
check("dra.pair-across", "pairDuplicateChecker.mergeTupleSource", DUP, '" between ')
check("dra.claims-declared", "validateCreationDRA", INV, "must specify all claims used in")
# boot order and devices
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go", "disks")
check("boot.disk-no-volume", "validateBootOrder", INV, "not found.", field="disks[")
check(
    "boot.empty-cdrom",
    "validateBootOrder",
    INV,
    "feature gate not enabled, cannot define an empty CD-ROM disk",
    gate="DeclarativeHotplugVolumes",
)
check(
    "boot.lun-volume",
    "validateBootOrder",
    INV,
    "can only be mapped to a DataVolume or PersistentVolumeClaim volume.",
)
check(
    "boot.downward-metrics-disk", "validateBootOrder", REQ, "DownwardMetrics volume must be mapped to a disk"
)
check(
    "boot.downward-metrics-bus",
    "validateBootOrder",
    INV,
    "DownwardMetrics volume must be mapped to virtio bus",
)
check("boot.duplicate-disk", "validateBootOrder", INV, "already set for a different device.", field="disks[")
check(
    "boot.iface-order",
    "validateInterfaceBootOrder",
    INV,
    "must have a boot order > 0, if supplied",
    field="spec.template.spec[",
)
check(
    "boot.duplicate-iface",
    "validateInterfaceBootOrder",
    INV,
    "already set for a different device.",
    field="interfaces[",
)
_AREA = "devices"
check("devices.input-bus", "validateInputDevices", INV, "Input device can have only virtio or usb bus.")
check("devices.input-type", "validateInputDevices", INV, "Input device can have only tablet type.")
check("devices.iothreads-policy", "validateIOThreadsPolicy", INV, "Invalid IOThreadsPolicy")
check(
    "devices.iothreads-count",
    "validateIOThreadsPolicy",
    INV,
    "the number of iothreads needs to be set and positive",
)
_AREA = "probes"
check("probes.one-handler", "validateProbe", INV, "must have exactly one probe type set")
check("probes.no-handler", "validateProbe", REQ, "must be set if a ")
check(
    "probes.pod-network",
    "podNetworkRequiredStatusCause",
    INV,
    "is only allowed if the Pod Network is attached",
)
# validateDomainSpec: storage ValidateDisks, firmware, secure boot
_file("pkg/storage/admitters/disks.go", "disks")
check("disks.name-duplicate", "validateDiskName", INV, "must not have the same Name.", field="disks[")
check("disks.target", "validateDeviceTarget", INV, "can only have a single target type defined")
check(
    "disks.pci-bus", "validatePciAddress", INV, "setting a PCI address is only possible with bus type virtio."
)
check("disks.pci", "validatePciAddress", INV, "has malformed PCI address", field="disks")
check(
    "disks.boot-order",
    "validateBootOrderValue",
    INV,
    "must have a boot order > 0, if supplied",
    field="disks",
)
check("disks.ide", "validateBusSupport", INV, "IDE bus is not supported")
check("disks.cdrom-virtio", "validateBusSupport", INV, "is invalid for CD-ROM device")
check("disks.sata-readonly", "validateBusSupport", INV, "hard-disks do not support read-only.")
check("disks.bus", "validateBusSupport", INV, "is set with an unrecognized bus")
check("disks.iothread-bus", "validateBusSupport", NS, "IOThreads are not supported for disks on a")
check("disks.serial-chars", "validateSerialNumValue", INV, "must be made up of the following characters")
check("disks.serial-length", "validateSerialNumLength", INV, "must be less than or equal to 256 in length")
check("disks.cache", "validateCacheMode", INV, "has invalid value", field="cache")
check("disks.io", "validateIOMode", NS, "Disk IO mode for")
check("disks.error-policy", "validateErrorPolicy", INV, "has invalid value", field="errorPolicy")
check(
    "disks.name-label",
    "validateDiskNameAsContainerName",
    INV,
    "re:^(a lowercase RFC 1123 label|must be no more than 63|must not contain dots)",
    field="disks[",
)
check(
    "disks.block-match",
    "validateBlockSize",
    INV,
    "Block size matching can't be enabled together with a custom value",
)
check(
    "disks.block-logical-physical",
    "validateBlockSize",
    INV,
    "must be the same or less than the physical size",
)
check("disks.block-sata", "validateBlockSize", INV, "must be 512 for SATA devices")
check("disks.block-discard", "validateBlockSize", INV, "Discard granularity")
check("disks.block-min", "validateCustomBlockSize", INV, "is less than the supported minimum size")
check("disks.block-max", "validateCustomBlockSize", INV, "is greater than the supported maximum size")
check("disks.block-power", "validateCustomBlockSize", INV, "is not a power of 2")
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go", "firmware")
check("firmware.efi-and-bios", "validateBootloader", INV, "has both EFI and BIOS configured")
check(
    "firmware.kernel-args",
    "validateKernelBoot",
    INV,
    "kernel arguments cannot be provided without an external kernel",
)
check("firmware.kernel-image", "validateKernelBoot", REQ, "must be defined with an image")
check(
    "firmware.kernel-paths",
    "validateKernelBoot",
    REQ,
    "must be defined with at least one of the following: kernelPath, initrdPath",
)
check("paths.root", "storage/admitters ValidatePath", INV, "must not point to root", field="kernelBoot")
check(
    "paths.relative",
    "storage/admitters ValidatePath",
    INV,
    "must be an absolute path to a file without relative components",
    field="kernelBoot",
)
check(
    "firmware.secure-boot-smm",
    "validateDomainSpec",
    INV,
    "SecureBoot requires SMM, which is currently disabled.",
)
# validateVolumes
_AREA = "volumes"
check("volumes.name-duplicate", "validateVolumes", INV, "must not have the same Name.", field="volumes[")
check("volumes.dv-name", "validateVolumes", REQ, "DataVolume 'name' must be set")
check("volumes.one-source", "validateVolumes", INV, "must have exactly one source type set")
check("volumes.base64-user", "validateVolumes", INV, "userDataBase64 is not a valid base64 value.")
check("volumes.user-sources", "validateVolumes", INV, "must have only one userdatasource set.")
check("volumes.user-size", "validateVolumes", INV, "userdata exceeds 2048 byte limit.")
check("volumes.base64-network", "validateVolumes", INV, "networkDataBase64 is not a valid base64 value.")
check("volumes.network-sources", "validateVolumes", INV, "must have only one networkdata source set.")
check("volumes.network-size", "validateVolumes", INV, "networkdata exceeds 2048 byte limit.")
check(
    "volumes.cloud-init-empty",
    "validateVolumes",
    INV,
    "must have at least one userdatasource or one networkdatasource set.",
)
check(
    "volumes.downward-metrics-gate",
    "validateVolumes",
    INV,
    "downwardMetrics disks are not allowed",
    gate="DownwardMetrics",
)
check(
    "volumes.hostdisk-gate", "validateVolumes", INV, "HostDisk feature gate is not enabled", gate="HostDisk"
)
check("volumes.hostdisk-path", "validateVolumes", NF, "is required for hostDisk volume")
check("volumes.hostdisk-type", "validateVolumes", INV, "allowed are 'Disk' or 'DiskOrCreate'")
check("volumes.hostdisk-capacity", "validateVolumes", INV, "is allowed to pass only with")
check("volumes.configmap-name", "validateVolumes", INV, "is a required field", field="configMap.name")
check("volumes.secret-name", "validateVolumes", INV, "is a required field", field="secret.secretName")
check("volumes.sa-name", "validateVolumes", INV, "is a required field", field="serviceAccountName")
check("volumes.sa-count", "validateVolumes", INV, "must have max one serviceAccount volume set")
check("volumes.downward-metrics-count", "validateVolumes", INV, "must have max one downwardMetric volume set")
check("volumes.memory-dump-count", "validateVolumes", INV, "must have max one memory dump volume set")
check(
    "volumes.container-disk-root",
    "storage/admitters ValidateContainerDisks (ValidatePath)",
    INV,
    "must not point to root",
    field="containerDisk",
)
check(
    "volumes.container-disk-relative",
    "storage/admitters ValidateContainerDisks (ValidatePath)",
    INV,
    "must be an absolute path",
    field="containerDisk",
)
check(
    "volumes.utility",
    "storage/admitters ValidateUtilityVolumesNotPresentOnCreation",
    INV,
    "utility volumes can only be added via hotplug",
)
_AREA = "accesscredentials"
check("ac.nocloud", "validateAccessCredentials", INV, "requires a noCloud volume to exist")
check("ac.configdrive", "validateAccessCredentials", INV, "requires a configDrive volume to exist")
check(
    "ac.qga-users",
    "validateAccessCredentials",
    INV,
    "requires at least one user to be present in the users list",
)
check(
    "ac.ssh-source",
    "validateAccessCredentials",
    INV,
    "must have exactly one source set",
    field="sshPublicKey",
)
check(
    "ac.ssh-method",
    "validateAccessCredentials",
    INV,
    "must have exactly one propagationMethod set",
    field="sshPublicKey",
)
check(
    "ac.password-source",
    "validateAccessCredentials",
    INV,
    "must have exactly one source set",
    field="userPassword",
)
check(
    "ac.password-method",
    "validateAccessCredentials",
    INV,
    "must have exactly one propagationMethod set",
    field="userPassword",
)
check("ac.one-type", "validateAccessCredentials", INV, "must have exactly one access credential type set")
_AREA = "dns"
check("dns.policy", "validateDNSPolicy", NS, "DNSPolicy: ")
check("dns.none-config", "validatePodDNSConfig", REQ, "must provide `dnsConfig` when `dnsPolicy` is None")
check("dns.none-nameserver", "validatePodDNSConfig", REQ, "must provide at least one DNS nameserver")
check("dns.nameserver-count", "validatePodDNSConfig", INV, "must not have more than 3 nameservers")
check("dns.nameserver-ip", "validatePodDNSConfig", INV, "must be valid IP address")
check("dns.search-count", "validatePodDNSConfig", INV, "must not have more than 6 search paths")
check("dns.search-chars", "validatePodDNSConfig", INV, "must not have more than 256 characters")
check(
    "dns.search-domain",
    "validatePodDNSConfig (IsDNS1123Subdomain)",
    INV,
    "re:^(a lowercase RFC 1123 subdomain|must be no more than 253)",
    field="searchDomains",
)
check("dns.option-name", "validatePodDNSConfig", INV, "Option.Name must not be empty")
_AREA = "devices"
check(
    "devices.eviction",
    "validateLiveMigration",
    INV,
    "is set with an unrecognized option",
    field="evictionStrategy",
    gate="evictionStrategy (cluster)",
)
check("gpus.ramfb", "validateMDEVRamFB", INV, "configuring multiple displays with ramfb is not valid")
check(
    "gpus.host-devices-gate",
    "validateHostDevicesWithPassthroughEnabled",
    INV,
    "Host Devices feature gate is not enabled",
    gate="HostDevices",
)
_file("pkg/virt-api/webhooks/validating-webhook/admitters/grace_io_virtualization.go", "gpus")
check(
    "grace.ambiguous",
    "validateGraceIOVirtualization",
    INV,
    "requires an exact pciVendorSelector",
    gate="GraceIOVirtualization",
)
check(
    "grace.gate",
    "validateGraceIOVirtualization",
    INV,
    "feature gate must be enabled for NVIDIA Grace GPU passthrough",
    gate="GraceIOVirtualization",
)
check("grace.arch", "validateGraceIOVirtualization", INV, "GraceIOVirtualization requires arm64 architecture")
check("grace.machine", "validateGraceIOVirtualization", INV, "machine type")
check(
    "grace.dedicated",
    "validateGraceIOVirtualization",
    REQ,
    "GraceIOVirtualization requires dedicated CPU placement",
)
check(
    "grace.pci-numa",
    "validateGraceIOVirtualization",
    INV,
    "PCINUMAAwareTopology feature gate must be enabled",
    gate="PCINUMAAwareTopology",
)
check(
    "grace.iommufd",
    "validateGraceIOVirtualization",
    INV,
    "IOMMUFD feature gate must be enabled",
    gate="IOMMUFD",
)
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go", "devices")
check("devices.sound-model", "validateSoundDevices", INV, "Sound device type is not supported.")
check("devices.sound-name", "validateSoundDevices", INV, "Sound device requires a name field.")
_file("pkg/virt-api/webhooks/amd64.go", "launchsecurity")
check(
    "ls.arch", "vmi-create-admitter validateLaunchSecurity", INV, "No launchSecurity support for architecture"
)
check("ls.one-type", "ValidateLaunchSecurityAmd64", FORB, "One and only one launchSecurity type can be set")
check(
    "ls.gate",
    "ValidateLaunchSecurityAmd64",
    INV,
    "feature gate is not enabled in kubevirt-config",
    field="launchSecurity",
    gate="WorkloadEncryptionSEV, WorkloadEncryptionTDX",
)
check("ls.tdx-smm", "ValidateLaunchSecurityAmd64", INV, "TDX does not work along with SMM")
check("ls.efi", "ValidateLaunchSecurityAmd64", INV, "requires OVMF (UEFI)")
check("ls.secure-boot", "ValidateLaunchSecurityAmd64", INV, "does not work along with SecureBoot")
check(
    "ls.persistent", "ValidateLaunchSecurityAmd64", INV, "does not work along with Persistent EFI variables"
)
check(
    "ls.attestation",
    "ValidateLaunchSecurityAmd64",
    INV,
    "SEV attestation requires VMI StartStrategy 'Paused'",
)
check("ls.bootable-nics", "ValidateLaunchSecurityAmd64", INV, "does not work with bootable NICs")
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go", "devices")
check("devices.vsock", "validateVSOCK", INV, "VSOCK feature gate is not enabled", gate="VSOCK")
check(
    "devices.persistent-reservation",
    "validatePersistentReservation",
    INV,
    "persistent reservation is not enabled",
    gate="persistentReservationConfiguration / PersistentReservation",
)
check(
    "devices.downward-metrics-gate",
    "validateDownwardMetrics",
    INV,
    "downwardMetrics virtio serial is not allowed",
    gate="DownwardMetrics",
)
check(
    "volumes.virtiofs-pvc",
    "validateFilesystemsWithVirtIOFSEnabled",
    INV,
    "virtiofs feature gate is not enabled for PVC",
    gate="EnableVirtioFsStorageVolumes",
)
check(
    "devices.video-no-graphics",
    "validateVideoConfig",
    INV,
    "Video configuration is not allowed when autoattachGraphicsDevice is set to false",
)
check("devices.panic-s390x", "validatePanicDevices", INV, "custom panic devices are not supported on s390x")
check("devices.panic-model", "validatePanicDeviceModel", INV, "invalid PanicDeviceModel")
check(
    "devices.reboot-policy",
    "validateRebootPolicy",
    INV,
    "RebootPolicy is specified but the RebootPolicy feature gate is not enabled",
    gate="RebootPolicy",
)
check(
    "memory.reserved-overhead",
    "validateReservedOverheadMemlock",
    INV,
    "Reserved overhead memlock feature gate is not enabled",
    gate="ReservedOverheadMemlock",
)
check("volumes.sa-name-format", "validateServiceAccountName", INV, "is not a valid service account name")
check("volumes.sa-name-match", "validateServiceAccountName", INV, "must reference the same service account")
# back in ValidateVirtualMachineSpec
_file("pkg/storage/admitters/data-volume-template.go", "datavolumetemplates")
check("dvt.name", "validateDataVolume", REQ, "'name' field must not be empty for DataVolumeTemplate entry")
check("dvt.no-storage", "validateDataVolume", INV, "Missing Data volume PVC or Storage")
check("dvt.both-storage", "validateDataVolume", INV, "Duplicate storage definition")
check(
    "dvt.external-and-source",
    "validateDataVolume",
    INV,
    "External population is incompatible with Source and SourceRef",
)
check(
    "dvt.no-source",
    "validateDataVolume",
    INV,
    "Data volume should have either Source, SourceRef, or be externally populated",
)
check("dvt.source-none", "validateNumberOfSources", INV, "Missing dataVolume valid source")
check("dvt.source-many", "validateNumberOfSources", INV, "Multiple dataVolume sources")
check(
    "dvt.unreferenced",
    "ValidateDataVolumeTemplate",
    REQ,
    "must be referenced in the VMI template's 'volumes' list",
)
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vms-admitter.go", "runstrategy")
check("run.both", "validateRunStrategy", INV, "Running and RunStrategy are mutually exclusive")
check("run.none", "validateRunStrategy", INV, "RunStrategy must be specified")
check(
    "run.wait-as-receiver",
    "validateRunStrategy",
    INV,
    "DecentralizedLiveMigration feature gate is not enabled",
    gate="DecentralizedLiveMigration",
)
check("run.invalid", "validateRunStrategy", INV, "Invalid RunStrategy (")
check(
    "live.sockets",
    "validateLiveUpdateCPU",
    INV,
    "Number of sockets in CPU topology is greater than the maximum sockets allowed",
    gate="vmRolloutStrategy",
)
_file("pkg/liveupdate/memory/memory.go", "memory")
check(
    "live.memory-realtime",
    "ValidateLiveUpdateMemory",
    INV,
    "Memory hotplug is not compatible with realtime VMs",
    gate="vmRolloutStrategy",
)
check(
    "live.memory-numa",
    "ValidateLiveUpdateMemory",
    INV,
    "Memory hotplug is not compatible with guest mapping passthrough",
)
check(
    "live.memory-encrypted",
    "ValidateLiveUpdateMemory",
    INV,
    "Memory hotplug is not compatible with encrypted VMs",
)
check(
    "live.memory-guest",
    "ValidateLiveUpdateMemory",
    INV,
    "Guest memory must be configured when memory hotplug is enabled",
)
check(
    "live.memory-over-max",
    "ValidateLiveUpdateMemory",
    INV,
    "Guest memory is greater than the configured maxGuest memory",
)
check("live.memory-guest-aligned", "ValidateLiveUpdateMemory", INV, "Guest memory must be ")
check("live.memory-max-aligned", "ValidateLiveUpdateMemory", INV, "MaxGuest must be ")
check("live.memory-arch", "ValidateLiveUpdateMemory", INV, "Memory hotplug is only available for x86_64 VMs")
check(
    "live.memory-min",
    "ValidateLiveUpdateMemory",
    INV,
    "Memory hotplug is only available for VMs with at least 1Gi of guest memory",
)
# stage 8: storage Admit
_file("pkg/storage/admitters/data-volume-template.go", "datavolumetemplates")
check(
    "dvt.namespace",
    "Admitter.validateVirtualMachineDataVolumeTemplateNamespace",
    INV,
    "Embedded DataVolume namespace",
)
# stage 9: status.volumeRequests
_file("pkg/virt-api/webhooks/validating-webhook/admitters/vms-admitter.go", "volumerequests")
check(
    "vr.both",
    "validateVolumeRequests",
    INV,
    "require either addVolumeOptions or removeVolumeOptions to be set, not both",
)
check("vr.add-twice", "validateVolumeRequests", INV, "re:^AddVolume request for \\[.*\\] aleady exists$")
check(
    "vr.conflict-template",
    "validateVolumeRequests",
    INV,
    "conflicts with an existing volume of the same name on the vmi template.",
)
check(
    "vr.conflict-vmi",
    "validateVolumeRequests",
    INV,
    "conflicts with an existing volume of the same name on currently running vmi",
)
check("vr.remove-twice", "validateVolumeRequests", INV, "RemoveVolume request for [")
check(
    "vr.neither",
    "validateVolumeRequests",
    INV,
    "require one of either addVolumeOptions or removeVolumeOptions",
)
check(
    "vr.migrating",
    "validateVolumeRequests",
    NS,
    "Cannot handle volume requests while VMI migration is in progress",
)
_file("pkg/storage/admitters/storagehotplug.go", "volumerequests")
check("hotplug.no-disk", "ValidateHotplugDiskConfiguration", INV, "requires the disk field to be set.")
check("hotplug.disk-bus", "ValidateHotplugDiskConfiguration", INV, "requires bus to be 'scsi' or 'virtio'.")
check("hotplug.lun-bus", "ValidateHotplugDiskConfiguration", INV, "requires bus to be 'scsi'.")
check(
    "hotplug.device",
    "ValidateHotplugDiskConfiguration",
    INV,
    "requires diskDevice of type 'disk' or 'lun' to be used.",
)
check("hotplug.iothreads", "ValidateHotplugDiskConfiguration", INV, "requires virtio bus for IOThreads.")
check(
    "hotplug.boot-order",
    "ValidateHotplugDiskConfiguration",
    INV,
    "spec.domain.devices.disks[1] must have a boot order > 0",
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description="KubeVirt's VM webhook checks and the input variants hack/oracle/fuzz_admission.py runs "
        "(a module it imports; run alone it counts them per area).",
    )
    parser.parse_args()
    variants = collections.Counter(v.area for v in VARIANTS)
    found = collections.Counter(c.area for c in CHECKS)
    for area in sorted(set(variants) | set(found)):
        print(f"{area:24} {found[area]:4d} checks {variants[area]:6d} variants")
    print(f"{'total':24} {len(CHECKS):4d} checks {len(VARIANTS):6d} variants, {len(BASES)} base VMs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
