"""A seeded fleet of VMs as users write them, for the comparison with a running KubeVirt: common-instancetypes'
cluster instancetypes and preferences (../shared/catalogs), namespaced ones a team keeps, plain VMs with their
own CPU, memory, requests and limits, container disks, cloud-init, PVCs (some missing), empty disks, pod and
Multus networks, running and halted, and some VMs KubeVirt refuses. The same seed gives the same fleet; the
generator knows nothing of what KubeVirt will answer.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.support.shared import SHARED

CATALOG = SHARED / "catalogs" / "common-instancetypes" / "v1.7.0"
SEED = 36
SIZE = int(os.environ.get("KUBEVIRT_EXPAND_FLEET_SIZE") or 240)  # smaller while working on it
NAMESPACES = 4
IT = "instancetype.kubevirt.io/v1beta1"


def catalog() -> list[dict[str, Any]]:
    """The cluster instancetypes and preferences of common-instancetypes v1.7.0, as a cluster holds them."""
    docs: list[dict[str, Any]] = []
    for name in ("clusterinstancetypes.yaml", "clusterpreferences.yaml"):
        docs += [d for d in yaml.safe_load_all((CATALOG / name).read_text()) if d]
    return docs


def _stateful(preference: dict[str, Any]) -> bool:
    """Whether the preference asks for a persistent TPM or EFI: KubeVirt then wants backend storage (a PVC of
    the default StorageClass, which this plane has none of) before it creates the pod."""
    spec = preference.get("spec") or {}
    devices = spec.get("devices") or {}
    firmware = spec.get("firmware") or {}
    tpm = devices.get("preferredTPM") or {}
    efi = firmware.get("preferredEfi") or {}
    return bool(tpm.get("persistent") or efi.get("persistent"))


@dataclass
class Fleet:
    namespaces: list[str]
    team_objects: list[dict[str, Any]] = field(default_factory=list)  # per namespace
    vms: list[dict[str, Any]] = field(default_factory=list)


def team_objects(ns: str) -> list[dict[str, Any]]:
    """What a team keeps in its namespace: two instancetypes, a preference, PVCs (one in block mode)."""
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": IT,
            "kind": "VirtualMachineInstancetype",
            "metadata": {"name": "team-small", "namespace": ns},
            "spec": {"cpu": {"guest": 1, "maxSockets": 4}, "memory": {"guest": "1Gi"}},
        },
        {
            "apiVersion": IT,
            "kind": "VirtualMachineInstancetype",
            "metadata": {"name": "team-large", "namespace": ns},
            "spec": {"cpu": {"guest": 4}, "memory": {"guest": "8Gi", "overcommitPercent": 25}},
        },
        {
            "apiVersion": IT,
            "kind": "VirtualMachinePreference",
            "metadata": {"name": "team-pref", "namespace": ns},
            "spec": {
                "devices": {"preferredDiskBus": "virtio", "preferredInterfaceModel": "virtio"},
                "cpu": {"preferredCPUTopology": "cores"},
            },
        },
    ]
    for i, mode in enumerate(("Filesystem", "Filesystem", "Block")):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"pvc{i}", "namespace": ns},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "volumeMode": mode,
                    "resources": {"requests": {"storage": "10Gi"}},
                },
            }
        )
    return objs


def make(namespaces: list[str], size: int = SIZE, seed: int = SEED) -> Fleet:
    rng = random.Random(seed)
    objects = catalog()
    instancetypes = sorted(o["metadata"]["name"] for o in objects if o["kind"].endswith("Instancetype"))
    preferences = {o["metadata"]["name"]: o for o in objects if o["kind"].endswith("Preference")}
    fleet = Fleet(namespaces)
    for ns in namespaces:
        fleet.team_objects += team_objects(ns)
    for i in range(size):
        ns = namespaces[i % len(namespaces)]
        fleet.vms.append(_vm(rng, f"vm-{i:03d}", ns, instancetypes, preferences))
    return fleet


def _vm(
    rng: random.Random, name: str, ns: str, instancetypes: list[str], preferences: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    domain: dict[str, Any] = {"devices": {}}
    template: dict[str, Any] = {"metadata": {"labels": {"app": name}}, "spec": {"domain": domain}}
    running = rng.random() < 0.75
    shape = rng.choices(["catalog", "team", "plain", "wrong"], [55, 15, 20, 10])[0]
    preference_name = None
    if shape == "catalog":
        spec["instancetype"] = {"name": rng.choice(instancetypes)}
        if rng.random() < 0.8:
            preference_name = rng.choice(sorted(preferences))
            spec["preference"] = {"name": preference_name}
    elif shape == "team":
        spec["instancetype"] = {
            "kind": "VirtualMachineInstancetype",
            "name": rng.choice(["team-small", "team-large"]),
        }
        if rng.random() < 0.6:
            spec["preference"] = {"kind": "VirtualMachinePreference", "name": "team-pref"}
    elif shape == "plain":
        domain["cpu"] = {k: rng.choice([1, 2]) for k in ("cores", "sockets", "threads") if rng.random() < 0.6}
        memory = rng.choice(["512Mi", "1Gi", "2Gi", "4Gi"])
        domain["memory"] = {"guest": memory}
        if rng.random() < 0.4:
            domain["resources"] = {"requests": {"memory": memory}}
            if rng.random() < 0.5:
                domain["resources"]["limits"] = {"cpu": "2", "memory": "8Gi"}
                domain["resources"]["requests"]["cpu"] = "500m"
        if rng.random() < 0.3:
            preference_name = rng.choice(sorted(preferences))
            spec["preference"] = {"name": preference_name}
    else:  # what KubeVirt's webhook refuses, and one it admits that ours must explain
        wrong = rng.choice(
            ["sockets-beside-instancetype", "no-instancetype", "memory-beside-instancetype", "bad-bus"]
        )
        if wrong == "sockets-beside-instancetype":
            spec["instancetype"] = {"name": rng.choice(instancetypes)}
            domain["cpu"] = {"sockets": 2}
        elif wrong == "no-instancetype":
            spec["instancetype"] = {"name": "u1.does-not-exist"}
        elif wrong == "memory-beside-instancetype":
            spec["instancetype"] = {"name": rng.choice(instancetypes)}
            domain["memory"] = {"guest": "3Gi"}
        else:
            domain["memory"] = {"guest": "1Gi"}
            domain["devices"]["disks"] = [{"name": "containerdisk", "disk": {"bus": "floppy"}}]
    if preference_name is not None and _stateful(preferences[preference_name]):
        running = False  # see _stateful
    spec["runStrategy"] = "Always" if running else "Halted"
    volumes: list[dict[str, Any]] = [
        {
            "name": "containerdisk",
            "containerDisk": {
                "image": rng.choice(
                    ["quay.io/containerdisks/fedora:41", "quay.io/containerdisks/centos-stream:9"]
                )
            },
        }
    ]
    if rng.random() < 0.6:
        volumes.append(
            {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config\npassword: x\n"}}
        )
    if rng.random() < 0.2:
        # pvc3 is missing from every namespace
        volumes.append(
            {
                "name": "data",
                "persistentVolumeClaim": {"claimName": rng.choice(["pvc0", "pvc1", "pvc2", "pvc3"])},
            }
        )
    if rng.random() < 0.1:
        volumes.append({"name": "scratch", "emptyDisk": {"capacity": "2Gi"}})
    template["spec"]["volumes"] = volumes
    network = rng.choices(["default", "masquerade", "bridge", "multus", "none"], [30, 35, 10, 15, 10])[0]
    if network == "masquerade":
        domain["devices"]["interfaces"] = [{"name": "default", "masquerade": {}}]
        template["spec"]["networks"] = [{"name": "default", "pod": {}}]
    elif network == "bridge":
        domain["devices"]["interfaces"] = [{"name": "default", "bridge": {}}]
        template["spec"]["networks"] = [{"name": "default", "pod": {}}]
    elif network == "multus":
        domain["devices"]["interfaces"] = [
            {"name": "default", "masquerade": {}},
            {"name": "net1", "bridge": {}},
        ]
        template["spec"]["networks"] = [
            {"name": "default", "pod": {}},
            {"name": "net1", "multus": {"networkName": "nad0"}},
        ]
    elif network == "none":
        domain["devices"]["autoattachPodInterface"] = False
    spec["template"] = template
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }
