#!/usr/bin/env python3
"""Generate the change-preview corpus with KubeVirt's own VM controller (the ``expand-restart`` oracle).

Builds running VMs and proposed changes by family (instancetype switches up and down, preference switches,
revision upgrades, CPU and memory within and beyond ``maxSockets``/``maxGuest``, ARM, volumes and interfaces
hot-plugged and not, rollout strategy ``Stage``/``LiveUpdate``/unset, firmware UUID, a stale RestartRequired
condition, scheduling), makes each running VMI with KubeVirt's own ``startVMI`` and VMI webhook (the
``expand-launcher`` oracle, then the status fields virt-handler sets), asks ``expand-restart`` what the VM
controller decides, and writes inputs and answers as gzipped JSON lines under
tests/render/vmcontroller/corpus/ (one file per family). tests/render/vmcontroller/test_corpus.py replays
every case against the engine without the oracle. Both oracles come from ../shared/oracle/build.sh:

    .venv/bin/python -m hack.oracle.restart_corpus [--restart PATH] [--launcher PATH] [--seed N] [--check]

``--check`` compares the engine with the oracle on freshly generated cases and writes nothing.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "render" / "vmcontroller" / "corpus"
JSON = dict[str, Any]
NS = "default"
LU, ST = "LiveUpdate", "Stage"
STRATEGIES: tuple[str | None, ...] = (LU, ST, None)


def find_binary(env: str, name: str) -> Path | None:
    """An oracle binary: ``$env``, else where build.sh is usually pointed on a developer machine."""
    given = os.environ.get(env)
    if given:
        return Path(given) if Path(given).is_file() else None
    places = (
        REPO.parent / "oracle-bin" / name,
        REPO.parent / "oracle" / "bin" / name,
        Path.home() / ".cache" / "kubevirt-oracle" / "bin" / name,
    )
    return next((p for p in places if p.is_file()), None)


RESTART_ENV, LAUNCHER_ENV = "KUBEVIRT_EXPAND_RESTART_ORACLE", "KUBEVIRT_EXPAND_LAUNCHER_ORACLE"


def run_oracle(binary: Path, inputs: list[JSON]) -> list[JSON]:
    data = "".join(json.dumps(i, separators=(",", ":")) + "\n" for i in inputs)
    proc = subprocess.run([str(binary)], input=data, capture_output=True, text=True, check=True)
    outs = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if len(outs) != len(inputs):
        raise RuntimeError(f"{binary}: {len(outs)} answers for {len(inputs)} inputs: {proc.stderr[-2000:]}")
    return outs


# --- objects -------------------------------------------------------------------------------------------

SERIES = {  # name: (vCPUs, guest memory)
    "u1.small": (1, "2Gi"),
    "u1.medium": (1, "4Gi"),
    "u1.large": (2, "8Gi"),
    "u1.xlarge": (4, "16Gi"),
    "u1.2xlarge": (8, "32Gi"),
    "u1.8xlarge": (32, "128Gi"),
    "cx1.large": (2, "4Gi"),
    "m1.large": (2, "16Gi"),
}


def instancetype(name: str, *, cluster: bool = True, generation: int = 1, **spec: Any) -> JSON:
    cpus, memory = SERIES.get(name, (2, "4Gi"))
    body: JSON = {"cpu": {"guest": cpus}, "memory": {"guest": memory}}
    if name.startswith("cx1"):
        body["cpu"]["dedicatedCPUPlacement"] = True
    for key, value in spec.items():
        body[key] = value
    kind = "VirtualMachineClusterInstancetype" if cluster else "VirtualMachineInstancetype"
    meta: JSON = {"name": name, "uid": f"it-{name}", "generation": generation}
    if not cluster:
        meta["namespace"] = NS
    return {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": kind, "metadata": meta, "spec": body}


PREFERENCES: dict[str, JSON] = {
    "p-sockets": {"cpu": {"preferredCPUTopology": "sockets"}},
    "p-cores": {"cpu": {"preferredCPUTopology": "cores"}},
    "p-spread": {"cpu": {"preferredCPUTopology": "spread"}},
    "p-virtio": {"devices": {"preferredDiskBus": "virtio", "preferredInterfaceModel": "virtio"}},
    "p-sata": {"devices": {"preferredDiskBus": "sata"}},
    "p-efi": {"firmware": {"preferredUseEfi": True}},
    "p-clock": {"clock": {"preferredClockOffset": {"utc": {}}}},
    "p-empty": {},
}


def preference(name: str, *, cluster: bool = True, generation: int = 1, spec: JSON | None = None) -> JSON:
    kind = "VirtualMachineClusterPreference" if cluster else "VirtualMachinePreference"
    meta: JSON = {"name": name, "uid": f"pref-{name}", "generation": generation}
    if not cluster:
        meta["namespace"] = NS
    body = copy.deepcopy(PREFERENCES.get(name, {}) if spec is None else spec)
    return {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": kind, "metadata": meta, "spec": body}


def revision_of(vm_name: str, obj: JSON) -> JSON:
    """The ControllerRevision the instancetype controller stores for ``obj`` (whole v1beta1 object)."""
    md = obj["metadata"]
    name = f"{vm_name}-{md['name']}-v1beta1-{md['uid']}-{md['generation']}"
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {
                "instancetype.kubevirt.io/object-generation": str(md["generation"]),
                "instancetype.kubevirt.io/object-kind": obj["kind"],
                "instancetype.kubevirt.io/object-name": md["name"],
                "instancetype.kubevirt.io/object-uid": md["uid"],
                "instancetype.kubevirt.io/object-version": "v1beta1",
            },
        },
        "data": copy.deepcopy(obj),
        "revision": 0,
    }


def new_vm(name: str, tspec: JSON, *, labels: JSON | None = None) -> JSON:
    template: JSON = {"spec": tspec}
    if labels:
        template["metadata"] = {"labels": labels}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1},
        "spec": {"runStrategy": "Always", "template": template},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def with_refs(vm: JSON, it: JSON | None, pref: JSON | None, objects: list[JSON]) -> None:
    """Point ``vm`` at ``it``/``pref`` as the instancetype controller leaves it: matcher, status ref, and
    the ControllerRevision (added to ``objects``)."""
    for member, ref, obj in (("instancetype", "instancetypeRef", it), ("preference", "preferenceRef", pref)):
        if obj is None:
            continue
        cr = revision_of(vm["metadata"]["name"], obj)
        objects.append(cr)
        vm["spec"][member] = {"name": obj["metadata"]["name"], "kind": obj["kind"]}
        vm["status"][ref] = {
            "name": obj["metadata"]["name"],
            "kind": obj["kind"],
            "controllerRevisionRef": {"name": cr["metadata"]["name"]},
        }


def base_tspec(*, memory: str | None = None, sockets: int | None = None, arch: str = "amd64") -> JSON:
    """A template as stored: the VM mutating webhook has set the architecture."""
    tspec: JSON = {
        "domain": {
            "devices": {
                "disks": [{"name": "root", "disk": {"bus": "virtio"}}],
                "interfaces": [{"name": "default", "masquerade": {}}],
            },
        },
        "networks": [{"name": "default", "pod": {}}],
        "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:41"}}],
    }
    if memory is not None:
        tspec["domain"]["memory"] = {"guest": memory}
    if sockets is not None:
        tspec["domain"]["cpu"] = {"sockets": sockets}
    tspec["architecture"] = arch
    return tspec


def kubevirt(strategy: str | None, **live: Any) -> JSON:
    conf: JSON = {}
    if strategy is not None:
        conf["vmRolloutStrategy"] = strategy
    if live:
        conf["liveUpdateConfiguration"] = live
    return conf


class Case:
    """One case before the oracles run: the VM as started, the proposed VM, objects, configuration, and
    how to finish the VMI KubeVirt creates (the fields virt-handler sets)."""

    def __init__(
        self,
        family: str,
        name: str,
        start: JSON,
        proposed: JSON,
        objects: list[JSON],
        kv: JSON | None,
        *,
        migratable: bool = True,
        vmi_conditions: list[JSON] | None = None,
        vmi_status: JSON | None = None,
        vmi_edit: Callable[[JSON], None] | None = None,
    ) -> None:
        self.family, self.name = family, name
        self.start, self.proposed, self.objects, self.kv = start, proposed, objects, kv
        self.migratable = migratable
        self.vmi_conditions = vmi_conditions or []
        self.vmi_status = vmi_status or {}
        self.vmi_edit = vmi_edit

    def launcher_input(self) -> JSON:
        return {"vm": self.start, "objects": self.objects, "kubevirt": self.kv}

    def finish_vmi(self, vmi: JSON) -> JSON:
        vmi = copy.deepcopy(vmi)
        meta = vmi.get("metadata") or {}
        for key in ("finalizers", "annotations"):
            meta.pop(key, None)
        status = vmi.setdefault("status", {})
        for key in ("phaseTransitionTimestamps", "guestOSInfo", "runtimeUser", "virtualMachineRevisionName"):
            status.pop(key, None)
        status["phase"] = "Running"
        conds = [{"type": "Ready", "status": "True"}]
        if self.migratable:
            conds.append({"type": "LiveMigratable", "status": "True"})
        status["conditions"] = conds + self.vmi_conditions
        status.update(copy.deepcopy(self.vmi_status))
        if self.vmi_edit is not None:
            self.vmi_edit(vmi)
        return vmi


def _d(vm: JSON) -> JSON:
    return vm["spec"]["template"]["spec"]["domain"]  # type: ignore[no-any-return]


def _t(vm: JSON) -> JSON:
    return vm["spec"]["template"]["spec"]  # type: ignore[no-any-return]


# --- families ----------------------------------------------------------------------------------------


def fam_instancetype_switch(rng: random.Random) -> Iterator[Case]:
    names = list(SERIES)
    lives = [{}, {"maxHotplugRatio": 2}, {"maxCpuSockets": 6}, {"maxGuest": "24Gi"}]
    for a in names:
        for b in names:
            if a == b:
                continue
            for strategy in STRATEGIES:
                cluster_b = rng.random() < 0.8
                start = new_vm("vm-switch", base_tspec())
                objects: list[JSON] = []
                it_a, it_b = instancetype(a), instancetype(b, cluster=cluster_b)
                with_refs(start, it_a, None, objects)
                objects += [it_a, it_b]
                proposed = copy.deepcopy(start)
                proposed["spec"]["instancetype"] = {"name": b, "kind": it_b["kind"]}
                proposed["metadata"]["generation"] = 2
                yield Case(
                    "instancetype-switch",
                    f"{a} -> {b} ({strategy or 'unset'})",
                    start,
                    proposed,
                    objects,
                    kubevirt(strategy, **rng.choice(lives)),
                    migratable=rng.random() < 0.8,
                )


def fam_preference_switch(rng: random.Random) -> Iterator[Case]:
    names = list(PREFERENCES)
    for a in names:
        for b in names:
            if a == b:
                continue
            for strategy in STRATEGIES:
                start = new_vm("vm-pref", base_tspec())
                objects: list[JSON] = []
                it = instancetype(rng.choice(["u1.medium", "u1.large", "u1.xlarge"]))
                pa, pb = preference(a), preference(b, cluster=rng.random() < 0.7)
                with_refs(start, it, pa, objects)
                objects += [it, pa, pb]
                proposed = copy.deepcopy(start)
                proposed["spec"]["preference"] = {"name": b, "kind": pb["kind"]}
                yield Case(
                    "preference-switch",
                    f"{a} -> {b} ({strategy or 'unset'})",
                    start,
                    proposed,
                    objects,
                    kubevirt(strategy),
                )


def fam_revision_upgrade(rng: random.Random) -> Iterator[Case]:
    edits: list[tuple[str, JSON]] = [
        ("cpu up", {"cpu": {"guest": 4}}),
        ("cpu down", {"cpu": {"guest": 1}}),
        ("memory up", {"memory": {"guest": "6Gi"}}),
        ("memory down", {"memory": {"guest": "2Gi"}}),
        ("memory way up", {"memory": {"guest": "64Gi"}}),
        ("node selector", {"nodeSelector": {"node-type": "big"}}),
        ("dedicated cpus", {"cpu": {"guest": 2, "dedicatedCPUPlacement": True}}),
        ("annotations", {"annotations": {"example.com/tier": "gold"}}),
        ("cpu and memory up", {"cpu": {"guest": 3}, "memory": {"guest": "8Gi"}}),
        ("unchanged", {}),
    ]
    for what, edit in edits:
        for upgrade in (True, False):
            for strategy in STRATEGIES:
                for pref_edit in (False, True):
                    start = new_vm("vm-upgrade", base_tspec())
                    objects: list[JSON] = []
                    old = instancetype("u1.large", cluster=rng.random() < 0.7)
                    pref_old = preference("p-sockets")
                    with_refs(start, old, pref_old, objects)
                    new = copy.deepcopy(old)
                    new["metadata"]["generation"] = 2
                    for key, value in edit.items():
                        if (
                            isinstance(value, dict)
                            and isinstance(new["spec"].get(key), dict)
                            and key != "nodeSelector"
                        ):
                            new["spec"][key].update(value)
                        else:
                            new["spec"][key] = value
                    new_pref = preference(
                        "p-sockets", generation=2, spec=PREFERENCES["p-cores"] if pref_edit else None
                    )
                    objects += [new, new_pref]
                    proposed = copy.deepcopy(start)
                    if upgrade:
                        proposed["status"].pop("instancetypeRef", None)
                        if pref_edit:
                            proposed["status"].pop("preferenceRef", None)
                    label = (
                        f"{what}{' + preference' if pref_edit else ''}, {'upgraded' if upgrade else 'kept'}"
                    )
                    yield Case(
                        "revision-upgrade",
                        f"{label} ({strategy or 'unset'})",
                        start,
                        proposed,
                        objects,
                        kubevirt(strategy),
                        migratable=rng.random() < 0.8,
                    )


def fam_cpu_memory(rng: random.Random, arch: str = "amd64", count: int = 220) -> Iterator[Case]:
    family = "arm" if arch == "arm64" else "cpu-memory"
    for i in range(count):
        sockets = rng.choice([1, 2, 4])
        memory = rng.choice(["1Gi", "2Gi", "4Gi", "512Mi"])
        tspec = base_tspec(memory=memory, sockets=sockets, arch=arch)
        resources: JSON = {}
        if rng.random() < 0.4:
            resources.setdefault("requests", {})["memory"] = memory
        if rng.random() < 0.2:
            resources.setdefault("limits", {})["memory"] = rng.choice(["8Gi", memory])
        if rng.random() < 0.3:
            resources.setdefault("requests", {})["cpu"] = rng.choice(["500m", "1", "2"])
        if rng.random() < 0.15:
            resources.setdefault("limits", {})["cpu"] = rng.choice(["2", "4"])
        if resources:
            tspec["domain"]["resources"] = resources
        start = new_vm("vm-cpumem", tspec)
        proposed = copy.deepcopy(start)
        cpu_change = rng.choice(["same", "up", "up", "beyond", "down"])
        mem_change = rng.choice(["same", "up", "up", "beyond", "down", "unaligned"])
        new_sockets = {
            "same": sockets,
            "up": sockets + 1,
            "beyond": sockets * 4 + 1,
            "down": max(sockets - 1, 0),
        }[cpu_change]
        if new_sockets:
            _d(proposed)["cpu"]["sockets"] = new_sockets
        else:
            _d(proposed)["cpu"].pop("sockets")
        base = {"512Mi": 512, "1Gi": 1024, "2Gi": 2048, "4Gi": 4096}[memory]
        new_mem = {
            "same": base,
            "up": base * 2,
            "beyond": base * 4 + 1024,
            "down": base // 2,
            "unaligned": base + 1,
        }[mem_change]
        _d(proposed)["memory"]["guest"] = f"{new_mem}Mi"
        if rng.random() < 0.2:
            proposed["spec"]["template"]["spec"]["hostname"] = "changed"
        conds: list[JSON] = []
        status: JSON = {}
        roll = rng.random()
        if roll < 0.08:
            conds.append({"type": "HotVCPUChange", "status": "True"})
        elif roll < 0.16:
            conds.append({"type": "HotMemoryChange", "status": rng.choice(["True", "False"])})
        elif roll < 0.22:
            status["migrationState"] = {"startTimestamp": "2024-01-01T00:00:00Z"}
        elif roll < 0.26:
            status["migrationState"] = {
                "startTimestamp": "2024-01-01T00:00:00Z",
                "endTimestamp": "2024-01-01T00:05:00Z",
            }
        lives = [{}, {"maxHotplugRatio": 2}, {"maxCpuSockets": 3}, {"maxGuest": "3Gi"}]
        strategy = rng.choice([LU, LU, ST, None])
        yield Case(
            family,
            f"#{i} sockets {sockets}->{new_sockets}, guest {memory}->{new_mem}Mi ({strategy or 'unset'})",
            start,
            proposed,
            [],
            kubevirt(strategy, **rng.choice(lives)),
            migratable=rng.random() < 0.8,
            vmi_conditions=conds,
            vmi_status=status,
        )


def fam_volumes(rng: random.Random) -> Iterator[Case]:
    hp_dv = (
        {"name": "hp-dv", "dataVolume": {"name": "hp-dv", "hotpluggable": True}},
        {"name": "hp-dv", "disk": {"bus": "scsi"}},
    )
    hp_pvc = (
        {"name": "hp-pvc", "persistentVolumeClaim": {"claimName": "hp-claim", "hotpluggable": True}},
        {"name": "hp-pvc", "disk": {"bus": "scsi"}},
    )
    reg_dv = (
        {"name": "data", "dataVolume": {"name": "data-dv"}},
        {"name": "data", "disk": {"bus": "virtio"}},
    )
    cdrom = (
        {"name": "cd", "containerDisk": {"image": "quay.io/example/iso:1"}},
        {"name": "cd", "cdrom": {"bus": "sata"}},
    )

    def add(vm: JSON, pair: tuple[JSON, JSON]) -> None:
        _t(vm)["volumes"].append(copy.deepcopy(pair[0]))
        _d(vm)["devices"]["disks"].append(copy.deepcopy(pair[1]))

    def remove(vm: JSON, name: str) -> None:
        _t(vm)["volumes"] = [v for v in _t(vm)["volumes"] if v["name"] != name]
        _d(vm)["devices"]["disks"] = [d for d in _d(vm)["devices"]["disks"] if d["name"] != name]

    changes: list[tuple[str, list[tuple[str, JSON]], Callable[[JSON], None]]] = [
        ("add hotplug DV", [], lambda vm: add(vm, hp_dv)),
        ("add hotplug PVC", [], lambda vm: add(vm, hp_pvc)),
        ("add regular DV", [], lambda vm: add(vm, reg_dv)),
        ("add hotplug and regular", [], lambda vm: (add(vm, hp_dv), add(vm, reg_dv))),
        ("remove hotplug DV", [("hp", hp_dv)], lambda vm: remove(vm, "hp-dv")),
        ("remove regular DV", [("reg", reg_dv)], lambda vm: remove(vm, "data")),
        ("remove CD-ROM", [("cd", cdrom)], lambda vm: remove(vm, "cd")),
        ("add CD-ROM", [], lambda vm: add(vm, cdrom)),
        ("change disk bus", [], lambda vm: _d(vm)["devices"]["disks"][0]["disk"].update(bus="sata")),
        (
            "change hotplug disk bus",
            [("hp", hp_dv)],
            lambda vm: _d(vm)["devices"]["disks"][-1]["disk"].update(bus="virtio"),
        ),
        (
            "change container image",
            [],
            lambda vm: _t(vm)["volumes"][0]["containerDisk"].update(image="quay.io/x/y:2"),
        ),
        (
            "volume request",
            [],
            lambda vm: vm["status"].update(
                volumeRequests=[
                    {
                        "addVolumeOptions": {
                            "name": "req",
                            "volumeSource": {"dataVolume": {"name": "req-dv", "hotpluggable": True}},
                            "disk": {"name": "req", "disk": {"bus": "scsi"}},
                        }
                    }
                ]
            ),
        ),
    ]
    for what, initial, change in changes:
        for strategy in STRATEGIES:
            for _ in range(2):
                start = new_vm("vm-vol", base_tspec(memory="2Gi"))
                for _, pair in initial:
                    add(start, pair)
                proposed = copy.deepcopy(start)
                change(proposed)
                yield Case(
                    "volumes",
                    f"{what} ({strategy or 'unset'})",
                    start,
                    proposed,
                    [],
                    kubevirt(strategy),
                    migratable=rng.random() < 0.7,
                )


def fam_interfaces(rng: random.Random) -> Iterator[Case]:
    sec_net = {"name": "sec", "multus": {"networkName": "nad-a"}}
    sec_bridge = {"name": "sec", "bridge": {}}

    def with_secondary(vm: JSON, iface: JSON | None = None, net: JSON | None = None) -> None:
        _d(vm)["devices"]["interfaces"].append(copy.deepcopy(iface or sec_bridge))
        _t(vm)["networks"].append(copy.deepcopy(net or sec_net))

    changes: list[tuple[str, bool, Callable[[JSON], None]]] = [
        ("add bridge on multus", False, lambda vm: with_secondary(vm)),
        ("add sriov on multus", False, lambda vm: with_secondary(vm, {"name": "sec", "sriov": {}})),
        ("add masquerade secondary", False, lambda vm: with_secondary(vm, {"name": "sec", "masquerade": {}})),
        (
            "remove secondary",
            True,
            lambda vm: (_d(vm)["devices"]["interfaces"].pop(), _t(vm)["networks"].pop()),
        ),
        (
            "unplug secondary (absent)",
            True,
            lambda vm: _d(vm)["devices"]["interfaces"][-1].update(state="absent"),
        ),
        ("change NAD name", True, lambda vm: _t(vm)["networks"][-1]["multus"].update(networkName="nad-b")),
        ("change model", False, lambda vm: _d(vm)["devices"]["interfaces"][0].update(model="e1000")),
        (
            "change MAC",
            True,
            lambda vm: _d(vm)["devices"]["interfaces"][-1].update(macAddress="02:00:00:00:00:01"),
        ),
        (
            "remove pod network",
            False,
            lambda vm: (_d(vm)["devices"]["interfaces"].pop(0), _t(vm)["networks"].pop(0)),
        ),
        ("link down", True, lambda vm: _d(vm)["devices"]["interfaces"][-1].update(state="down")),
    ]
    for what, has_secondary, change in changes:
        for strategy in STRATEGIES:
            for migratable in (True, False):
                start = new_vm("vm-net", base_tspec(memory="2Gi"))
                if has_secondary:
                    with_secondary(start)
                proposed = copy.deepcopy(start)
                change(proposed)
                ifaces = [{"name": "default", "podInterfaceName": "eth0"}]
                if has_secondary:
                    ifaces.append({"name": "sec", "podInterfaceName": rng.choice(["pod1234abcd", "net1"])})
                yield Case(
                    "interfaces",
                    f"{what} ({strategy or 'unset'}, migratable={migratable})",
                    start,
                    proposed,
                    [],
                    kubevirt(strategy),
                    migratable=migratable,
                    vmi_status={"interfaces": ifaces},
                )
    # a networkless VM gets a pod network
    for strategy in STRATEGIES:
        tspec = base_tspec(memory="2Gi")
        tspec["domain"]["devices"]["interfaces"] = []
        tspec["domain"]["devices"]["autoattachPodInterface"] = False
        tspec["networks"] = []
        start = new_vm("vm-nonet", tspec)
        proposed = copy.deepcopy(start)
        _d(proposed)["devices"]["interfaces"] = [{"name": "default", "masquerade": {}}]
        _t(proposed)["networks"] = [{"name": "default", "pod": {}}]
        yield Case(
            "interfaces",
            f"add pod network to networkless ({strategy or 'unset'})",
            start,
            proposed,
            [],
            kubevirt(strategy),
        )


def fam_firmware(rng: random.Random) -> Iterator[Case]:
    from apiserver.render.vmcontroller.firmware import legacy_uuid

    for strategy in STRATEGIES:
        for start_uuid in (None, "legacy", "custom"):
            for new_uuid in (None, "legacy", "custom", "other"):
                start = new_vm("vm-fw", base_tspec(memory="2Gi"))
                values = {
                    "legacy": legacy_uuid("vm-fw"),
                    "custom": "5f0c7a2e-1111-4222-8333-444455556666",
                    "other": "0b7e6a1c-9999-4aaa-8bbb-cccccccccccc",
                }
                if start_uuid:
                    _d(start)["firmware"] = {"uuid": values[start_uuid]}
                proposed = copy.deepcopy(start)
                if new_uuid:
                    _d(proposed)["firmware"] = {"uuid": values[new_uuid]}
                else:
                    _d(proposed).pop("firmware", None)
                yield Case(
                    "firmware",
                    f"uuid {start_uuid} -> {new_uuid} ({strategy or 'unset'})",
                    start,
                    proposed,
                    [],
                    kubevirt(strategy),
                )


def fam_stale_condition(rng: random.Random) -> Iterator[Case]:
    changes: list[tuple[str, Callable[[JSON], None]]] = [
        ("no change", lambda vm: None),
        ("sockets up", lambda vm: _d(vm)["cpu"].update(sockets=3)),
        ("hostname", lambda vm: _t(vm).update(hostname="other")),
        ("memory up", lambda vm: _d(vm)["memory"].update(guest="3Gi")),
        ("toleration", lambda vm: _t(vm).update(tolerations=[{"key": "k", "operator": "Exists"}])),
    ]
    conditions = [
        (
            "stale True",
            {"type": "RestartRequired", "status": "True", "message": "an earlier change needs a restart"},
        ),
        ("stale False", {"type": "RestartRequired", "status": "False", "message": "old"}),
        (
            "stale True with reason",
            {"type": "RestartRequired", "status": "True", "reason": "Old", "message": "x"},
        ),
    ]
    for what, change in changes:
        for cname, cond in conditions:
            for strategy in STRATEGIES:
                start = new_vm("vm-stale", base_tspec(memory="2Gi", sockets=2))
                proposed = copy.deepcopy(start)
                proposed["status"]["conditions"].append(copy.deepcopy(cond))
                change(proposed)
                yield Case(
                    "stale-condition",
                    f"{cname}, {what} ({strategy or 'unset'})",
                    start,
                    proposed,
                    [],
                    kubevirt(strategy),
                )


def fam_scheduling(rng: random.Random) -> Iterator[Case]:
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    }
    changes: list[tuple[str, Callable[[JSON], None]]] = [
        ("add node selector", lambda vm: _t(vm).update(nodeSelector={"zone": "a"})),
        ("add affinity", lambda vm: _t(vm).update(affinity=copy.deepcopy(aff))),
        (
            "add tolerations",
            lambda vm: _t(vm).update(
                tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
            ),
        ),
        (
            "selector and tolerations",
            lambda vm: _t(vm).update(
                nodeSelector={"zone": "b"}, tolerations=[{"key": "x", "operator": "Exists"}]
            ),
        ),
        ("scheduler name", lambda vm: _t(vm).update(schedulerName="custom")),
        ("eviction strategy", lambda vm: _t(vm).update(evictionStrategy="LiveMigrate")),
        ("template labels only", lambda vm: vm["spec"]["template"].update(metadata={"labels": {"app": "x"}})),
        ("clock", lambda vm: _d(vm).update(clock={"timezone": "Europe/Paris"})),
        ("machine type", lambda vm: _d(vm).update(machine={"type": "pc-q35-rhel9.4.0"})),
    ]
    for what, change in changes:
        for strategy in STRATEGIES:
            for migrating in (False, True):
                start = new_vm("vm-sched", base_tspec(memory="2Gi"))
                proposed = copy.deepcopy(start)
                change(proposed)
                status = {"migrationState": {"startTimestamp": "2024-01-01T00:00:00Z"}} if migrating else {}
                yield Case(
                    "scheduling",
                    f"{what} ({strategy or 'unset'}{', migrating' if migrating else ''})",
                    start,
                    proposed,
                    [],
                    kubevirt(strategy),
                    vmi_status=status,
                )


FAMILIES: dict[str, Callable[[random.Random], Iterator[Case]]] = {
    "instancetype-switch": fam_instancetype_switch,
    "preference-switch": fam_preference_switch,
    "revision-upgrade": fam_revision_upgrade,
    "cpu-memory": fam_cpu_memory,
    "arm": lambda rng: fam_cpu_memory(rng, "arm64", 40),
    "volumes": fam_volumes,
    "interfaces": fam_interfaces,
    "firmware": fam_firmware,
    "stale-condition": fam_stale_condition,
    "scheduling": fam_scheduling,
}
ANSWER_KEYS = (
    "restartRequired",
    "message",
    "outcome",
    "liveUpdates",
    "vmPatches",
    "syncErrorReason",
    "syncError",
)


def restart_inputs(
    launcher: Path, cases: list[Case], launcher_input: Callable[[Case], JSON] = Case.launcher_input
) -> tuple[list[tuple[Case, JSON]], list[str]]:
    """Each case with its expand-restart input, the running VMI made by expand-launcher from
    ``launcher_input``; the cases the launcher refuses, with why."""
    vmis = run_oracle(launcher, [launcher_input(c) for c in cases])
    skipped: list[str] = []
    ready: list[tuple[Case, JSON]] = []
    for case, out in zip(cases, vmis, strict=True):
        if "vmi" not in out:
            skipped.append(f"{case.family}: {case.name}: launcher: {out.get('error') or out}")
            continue
        inp = {
            "startVM": case.start,
            "vm": case.proposed,
            "vmi": case.finish_vmi(out["vmi"]),
            "objects": case.objects,
            "kubevirt": case.kv,
        }
        ready.append((case, inp))
    return ready, skipped


def build(restart: Path, launcher: Path, seed: int) -> tuple[dict[str, list[JSON]], list[str]]:
    """Every family's case records (``{"name", "input", "answer"}``) and the cases skipped, with why."""
    rng = random.Random(seed)
    cases = [c for fam in FAMILIES.values() for c in fam(rng)]
    ready, skipped = restart_inputs(launcher, cases)
    answers = run_oracle(restart, [inp for _, inp in ready])
    families: dict[str, list[JSON]] = {name: [] for name in FAMILIES}
    for (case, inp), answer in zip(ready, answers, strict=True):
        if "restartRequired" not in answer:
            skipped.append(f"{case.family}: {case.name}: restart: {answer}")
            continue
        kept = {k: answer[k] for k in ANSWER_KEYS if k in answer}
        families[case.family].append({"name": case.name, "input": inp, "answer": kept})
    return families, skipped


def write(families: dict[str, list[JSON]]) -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    for name, records in families.items():
        text = "".join(json.dumps(r, separators=(",", ":"), sort_keys=True) + "\n" for r in records)
        with gzip.GzipFile(CORPUS / f"{name}.jsonl.gz", "wb", mtime=0) as out:
            out.write(text.encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restart", default=None, help="the expand-restart binary")
    parser.add_argument("--launcher", default=None, help="the expand-launcher binary")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--check", action="store_true", help="compare with the engine; write nothing")
    args = parser.parse_args(argv)
    restart = Path(args.restart) if args.restart else find_binary(RESTART_ENV, "expand-restart")
    launcher = Path(args.launcher) if args.launcher else find_binary(LAUNCHER_ENV, "expand-launcher")
    if restart is None or launcher is None:
        print("expand-restart and expand-launcher are needed (../shared/oracle/build.sh)", file=sys.stderr)
        return 2
    families, skipped = build(restart, launcher, args.seed)
    for line in skipped:
        print("skipped", line, file=sys.stderr)
    total = sum(len(r) for r in families.values())
    if args.check:
        from tests.render.vmcontroller.replay import replay

        differ = [(f, r["name"]) for f, records in families.items() for r in records if replay(r) is not None]
        print(f"{len(differ)} of {total} differ", *differ[:20], sep="\n")
        return 1 if differ else 0
    write(families)
    print(f"{total} cases in {len(families)} families ({len(skipped)} skipped) written to {CORPUS}")
    for name, records in families.items():
        verdicts = sum(1 for r in records if r["answer"]["restartRequired"])
        print(f"  {name}: {len(records)} cases, {verdicts} RestartRequired")
    return 0


if __name__ == "__main__":
    sys.exit(main())
