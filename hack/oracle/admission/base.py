"""What every area of the admission checks shares: the base VMs, the helpers that reach into a VM, the
:class:`Variant` and :class:`Check` records with the functions that register them, and the value lists
several areas sweep. The areas (one module each, named after ``apiserver/render/admission``'s) register
through :func:`variant`, :func:`sweep` and :func:`check`; the package's ``__init__`` calls them in the
webhook's order, which is the order of :data:`VARIANTS` and :data:`CHECKS`.
"""

from __future__ import annotations

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


def append(parent: JSON, key: str, *values: Any) -> None:
    """Extend the list ``parent[key]`` (made one if it is not) with copies of ``values``."""
    if not isinstance(parent.get(key), list):
        parent[key] = []
    parent[key].extend(copy.deepcopy(v) for v in values)


def add_volume(vm: JSON, *volumes: JSON) -> None:
    append(tspec(vm), "volumes", *volumes)


def add_disk(vm: JSON, name: str, disk: JSON | None = None, volume: JSON | None = None) -> None:
    """A disk ``name`` (``disk`` holds its other members) and, unless ``volume`` is {}, a volume for it."""
    append(devices(vm), "disks", {"name": name, **(disk or {})})
    if volume != {}:
        add_volume(vm, {"name": name, **(volume or {"emptyDisk": {"capacity": "1Gi"}})})


def add_iface(vm: JSON, iface: JSON, network: JSON | None = None) -> None:
    """An interface and (unless ``network`` is {}) a network of the same name (multus unless given)."""
    append(devices(vm), "interfaces", iface)
    if network != {}:
        append(
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


def gate_list(*gates: str) -> JSON:
    return {"developerConfiguration": {"featureGates": list(gates)}}


LIVE_UPDATE_OFF: JSON = {"vmRolloutStrategy": "Stage"}
LIVE_UPDATE_ON: JSON = {"vmRolloutStrategy": "LiveUpdate"}

# The Beta gates (on by default) turned off: what a cluster that disables them gives.
NO_BETA = {
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

# --- checks -------------------------------------------------------------------------------------------


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

ADMITTERS = "pkg/virt-api/webhooks/validating-webhook/admitters"
VMI_CREATE = f"{ADMITTERS}/vmi-create-admitter.go"
VMS_ADMITTER = f"{ADMITTERS}/vms-admitter.go"


def go_file(path: str, area: str) -> None:
    """Where the checks registered next are in KubeVirt, and the area they belong to."""
    global _GO_FILE, _AREA
    _GO_FILE, _AREA = path, area


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
