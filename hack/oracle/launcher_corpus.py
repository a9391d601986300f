"""Generate the launcher corpus: VMs over the families that move a virt-launcher pod's resources, each
with KubeVirt's own answer from ``expand-launcher`` (../shared/oracle, built by its build.sh).

Writes ``tests/render/launcher/cases/<family>.jsonl``: one case a line, ``{"name", "input", "answer"}``,
``input`` as the oracle reads it (``vm`` or ``vmi``, ``objects``, ``kubevirt``, ``arch``, ``namespace``,
``namespaceQuota``) and ``answer`` the part of the oracle's output the tests compare (the pod's
containers, init containers and total, the memory overhead, the VMI's CPU, memory, resources,
architecture and machine, or the error and the stage it came from). Nothing here is written by hand:
rerun after changing a family, and commit the cases with the script.

    .venv/bin/python -m hack.oracle.launcher_corpus [--oracle PATH] [--only FAMILY] [--check]

``--check`` compares the engine with the oracle on the generated inputs without writing anything.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import random
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "render" / "launcher" / "cases"
PLACES = (
    Path.home() / ".cache" / "kubevirt-oracle" / "bin" / "expand-launcher",  # build.sh's default OUT
    REPO.parent / "oracle" / "bin" / "expand-launcher",
)
DEFAULT_ORACLE = os.environ.get("KUBEVIRT_EXPAND_LAUNCHER_ORACLE") or str(
    next((p for p in PLACES if p.is_file()), PLACES[-1])
)

JSON = dict[str, Any]
Case = tuple[str, JSON]


def vm(
    name: str, tspec: JSON, *, meta: JSON | None = None, spec: JSON | None = None, ns: str = "default"
) -> JSON:
    template: JSON = {"spec": tspec}
    if meta:
        template["metadata"] = meta
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": "11111111-2222-4333-8444-555555555555",
            "generation": 1,
        },
        "spec": {"runStrategy": "Always", "template": template, **(spec or {})},
    }


def domain(
    cpu: JSON | None = None, memory: JSON | None = None, resources: JSON | None = None, **more: Any
) -> JSON:
    d: JSON = {"devices": more.pop("devices", {})}
    if cpu is not None:
        d["cpu"] = cpu
    if memory is not None:
        d["memory"] = memory
    if resources is not None:
        d["resources"] = resources
    d.update(more)
    return d


def case(
    tspec: JSON,
    *,
    kubevirt: JSON | None = None,
    arch: str = "amd64",
    objects: list[JSON] | None = None,
    namespace: JSON | None = None,
    quota: JSON | None = None,
    meta: JSON | None = None,
    spec: JSON | None = None,
) -> JSON:
    given: JSON = {"vm": vm("vm", tspec, meta=meta, spec=spec), "objects": objects or [], "arch": arch}
    if kubevirt is not None:
        given["kubevirt"] = kubevirt
    if namespace is not None:
        given["namespace"] = namespace
    if quota is not None:
        given["namespaceQuota"] = quota
    return given


def pvc(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"},
    }


def small(**more: Any) -> JSON:
    return {"domain": domain(cpu={"cores": 1}, memory={"guest": "1Gi"}, **more)}


# --- families ------------------------------------------------------------------------------------------


def architectures() -> Iterator[Case]:
    for arch in ("amd64", "arm64", "s390x"):
        conf = {"architectureConfiguration": {"defaultArchitecture": arch}}
        for mem in ("512Mi", "1Gi", "3Gi", "8Gi"):
            for cores in (1, 2, 4):
                yield (
                    f"{arch}-{mem}-{cores}c",
                    case(
                        {"domain": domain(cpu={"cores": cores}, memory={"guest": mem})},
                        kubevirt=conf,
                        arch=arch,
                    ),
                )
        # the VM's own architecture, differing from the cluster's
        yield (
            f"{arch}-vm-arm64",
            case(
                {"architecture": "arm64", "domain": domain(cpu={"cores": 2}, memory={"guest": "2Gi"})},
                arch=arch,
            ),
        )
        yield (
            f"{arch}-noarch-config",
            case({"domain": domain(cpu={"cores": 2}, memory={"guest": "2Gi"})}, arch=arch),
        )


def topologies() -> Iterator[Case]:
    for sockets, cores, threads in itertools.product((0, 1, 2, 4), (0, 1, 3), (0, 1, 2)):
        cpu = {k: v for k, v in (("sockets", sockets), ("cores", cores), ("threads", threads)) if v}
        yield f"s{sockets}c{cores}t{threads}", case({"domain": domain(cpu=cpu, memory={"guest": "2Gi"})})
    for count in (1, 3, 8, 24, 64, 200, 300):
        yield f"sockets-{count}", case({"domain": domain(cpu={"sockets": count}, memory={"guest": "4Gi"})})
    for req, lim in (("1", None), ("2", "2"), ("500m", None), (None, "3"), ("1500m", "4"), ("250m", "250m")):
        res: JSON = {}
        if req:
            res.setdefault("requests", {})["cpu"] = req
        if lim:
            res.setdefault("limits", {})["cpu"] = lim
        res.setdefault("requests", {})["memory"] = "1Gi"
        yield f"cpu-req{req}-lim{lim}", case({"domain": domain(resources=res)})
        yield f"cpu-req{req}-lim{lim}-cores", case({"domain": domain(cpu={"cores": 2}, resources=res)})
    for threads in (0, 1, 2, 4):
        tspec = {
            "domain": domain(cpu={"cores": 2}, memory={"guest": "2Gi"}, ioThreadsPolicy="supplementalPool")
        }
        if threads:
            tspec["domain"]["ioThreads"] = {"supplementalPoolThreadCount": threads}
        yield f"iothreads-{threads}", case(tspec)


def memory_sizes() -> Iterator[Case]:
    sizes = (
        "64Mi",
        "100M",
        "1Gi",
        "1G",
        "1500Mi",
        "2Gi",
        "7G",
        "16Gi",
        "64Gi",
        "256Gi",
        "1Ti",
        "1025Mi",
        "123456789",
    )
    for size in sizes:
        yield f"guest-{size}", case({"domain": domain(cpu={"cores": 1}, memory={"guest": size})})
        yield (
            f"request-{size}",
            case({"domain": domain(cpu={"cores": 1}, resources={"requests": {"memory": size}})}),
        )
        yield (
            f"limit-{size}",
            case({"domain": domain(cpu={"cores": 1}, resources={"limits": {"memory": size}})}),
        )
    for guest, req, lim in (
        ("2Gi", "1Gi", None),
        ("2Gi", "3Gi", None),
        ("2Gi", "2Gi", "4Gi"),
        (None, "1Gi", "2Gi"),
        ("1Gi", None, "1Gi"),
    ):
        res: JSON = {}
        if req:
            res.setdefault("requests", {})["memory"] = req
        if lim:
            res.setdefault("limits", {})["memory"] = lim
        mem = {"guest": guest} if guest else None
        yield (
            f"mix-g{guest}-r{req}-l{lim}",
            case({"domain": domain(cpu={"cores": 2}, memory=mem, resources=res)}),
        )
        res2 = copy.deepcopy(res)
        res2["overcommitGuestOverhead"] = True
        yield (
            f"mix-g{guest}-r{req}-l{lim}-overcommit-overhead",
            case({"domain": domain(cpu={"cores": 2}, memory=mem, resources=res2)}),
        )
    for page, guest, req in (
        ("2Mi", "1Gi", None),
        ("2Mi", None, "2Gi"),
        ("1Gi", "4Gi", None),
        ("1Gi", "2Gi", "3Gi"),
        ("2Mi", "1Gi", "1Gi"),
        ("2Mi", None, None),
    ):
        mem2: JSON = {"hugepages": {"pageSize": page}}
        if guest:
            mem2["guest"] = guest
        res3 = {"requests": {"memory": req}} if req else None
        yield (
            f"hugepages-{page}-g{guest}-r{req}",
            case({"domain": domain(cpu={"cores": 2}, memory=mem2, resources=res3)}),
        )
        res4 = {"requests": {"memory": req or "2Gi"}, "limits": {"memory": req or "2Gi"}}
        yield (
            f"hugepages-{page}-g{guest}-r{req}-limits",
            case({"domain": domain(cpu={"cores": 2}, memory=mem2, resources=res4)}),
        )
    for added in ("100Mi", "1G", "12345"):
        yield (
            f"reserved-{added}",
            case(
                {
                    "domain": domain(
                        cpu={"cores": 1},
                        memory={"guest": "1Gi", "reservedOverhead": {"addedOverhead": added}},
                    )
                }
            ),
        )
    for overcommit in (50, 100, 150, 200, 333):
        conf = {"developerConfiguration": {"memoryOvercommit": overcommit}}
        yield (
            f"overcommit-{overcommit}",
            case({"domain": domain(cpu={"cores": 1}, memory={"guest": "3Gi"})}, kubevirt=conf),
        )
        yield (
            f"overcommit-{overcommit}-hugepages",
            case(
                {
                    "domain": domain(
                        cpu={"cores": 1}, memory={"guest": "2Gi", "hugepages": {"pageSize": "2Mi"}}
                    )
                },
                kubevirt=conf,
            ),
        )


def dedicated() -> Iterator[Case]:
    parity = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {
            "name": "kubevirt",
            "annotations": {"alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity": ""},
        },
        "spec": {"configuration": {"developerConfiguration": {"featureGates": ["AlignCPUs"]}}},
    }
    for cores, isolate, threads in itertools.product((1, 2, 3, 4), (False, True), (0, 1, 2)):
        cpu: JSON = {"cores": cores, "dedicatedCpuPlacement": True}
        if isolate:
            cpu["isolateEmulatorThread"] = True
        d = domain(cpu=cpu, memory={"guest": "2Gi"})
        if threads:
            d["ioThreadsPolicy"] = "supplementalPool"
            d["ioThreads"] = {"supplementalPoolThreadCount": threads}
        yield f"dedicated-{cores}-iso{isolate}-io{threads}", case({"domain": d})
        if isolate:
            yield f"dedicated-{cores}-parity-io{threads}", case({"domain": copy.deepcopy(d)}, kubevirt=parity)
    for res in (
        {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
        {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
        {"limits": {"cpu": "2", "memory": "2Gi"}},
    ):
        yield f"qos-{json.dumps(res, sort_keys=True)}", case({"domain": domain(resources=res)})
        yield (
            f"qos-dedicated-{json.dumps(res, sort_keys=True)}",
            case({"domain": domain(cpu={"dedicatedCpuPlacement": True}, resources=res)}),
        )
        yield (
            f"qos-containerdisk-{json.dumps(res, sort_keys=True)}",
            case(
                {
                    "domain": domain(resources=res),
                    "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/x:1"}}],
                }
            ),
        )


def devices() -> Iterator[Case]:
    base = {"cpu": {"cores": 2}, "memory": {"guest": "2Gi"}}

    def with_devices(devs: JSON, **tspec: Any) -> JSON:
        return {"domain": domain(**copy.deepcopy(base), devices=devs), **tspec}

    yield "no-graphics", case(with_devices({"autoattachGraphicsDevice": False}))
    yield "graphics-true", case(with_devices({"autoattachGraphicsDevice": True}))
    yield "no-serial", case(with_devices({"autoattachSerialConsole": False}))
    yield "log-serial-false", case(with_devices({"logSerialConsole": False}))
    yield (
        "log-serial-true-disabled",
        case(
            with_devices({"logSerialConsole": True}),
            kubevirt={"virtualMachineOptions": {"disableSerialConsoleLog": {}}},
        ),
    )
    yield (
        "serial-log-disabled",
        case(with_devices({}), kubevirt={"virtualMachineOptions": {"disableSerialConsoleLog": {}}}),
    )
    yield "tpm", case(with_devices({"tpm": {}}))
    yield "tpm-disabled", case(with_devices({"tpm": {"enabled": False}}))
    yield (
        "vsock",
        case(
            with_devices({"autoattachVSOCK": True}),
            kubevirt={"developerConfiguration": {"featureGates": ["VSOCK"]}},
        ),
    )
    yield "no-pod-interface", case(with_devices({"autoattachPodInterface": False}))
    yield (
        "downward-metrics",
        case(
            with_devices({}, volumes=[{"name": "dm", "downwardMetrics": {}}]),
            kubevirt={"developerConfiguration": {"featureGates": ["DownwardMetrics"]}},
        ),
    )
    probe_exec = {"exec": {"command": ["true"]}}
    probe_http = {"httpGet": {"port": 80}}
    for live, ready in itertools.product((None, probe_exec, probe_http), repeat=2):
        extra: JSON = {}
        if live:
            extra["livenessProbe"] = live
        if ready:
            extra["readinessProbe"] = ready
        yield (
            f"probes-{bool(live) and 'exec' in live}-{bool(ready) and 'exec' in ready}-{bool(live)}{bool(ready)}",
            case(with_devices({}, **extra)),
        )
    for count in (1, 2, 3):
        vols = [{"name": f"d{i}", "containerDisk": {"image": f"quay.io/d{i}:1"}} for i in range(count)]
        yield f"containerdisks-{count}", case(with_devices({}, volumes=vols))
        yield (
            f"containerdisks-{count}-no-imagevolume",
            case(
                with_devices({}, volumes=copy.deepcopy(vols)),
                kubevirt={"developerConfiguration": {"disabledFeatureGates": ["ImageVolume"]}},
            ),
        )
        yield (
            f"containerdisks-{count}-skip-digest",
            case(
                with_devices({}, volumes=copy.deepcopy(vols)),
                meta={"annotations": {"kubevirt.io/image-volume-skip-digest-resolution": "true"}},
            ),
        )
    kb = {"firmware": {"kernelBoot": {"container": {"image": "quay.io/kernel:1", "kernelPath": "/vmlinuz"}}}}
    yield "kernel-boot", case({"domain": domain(**copy.deepcopy(base), **copy.deepcopy(kb))})
    yield (
        "kernel-boot-no-imagevolume",
        case(
            {"domain": domain(**copy.deepcopy(base), **copy.deepcopy(kb))},
            kubevirt={"developerConfiguration": {"disabledFeatureGates": ["ImageVolume"]}},
        ),
    )
    fs_vols = [
        {"name": "cm", "configMap": {"name": "cm"}},
        {"name": "pvc", "persistentVolumeClaim": {"claimName": "pvc"}},
    ]
    for count in (1, 2):
        fss = [{"name": v["name"], "virtiofs": {}} for v in fs_vols[:count]]
        yield (
            f"virtiofs-{count}",
            case(
                with_devices({"filesystems": fss}, volumes=copy.deepcopy(fs_vols[:count])),
                kubevirt={
                    "developerConfiguration": {
                        "featureGates": ["EnableVirtioFsConfigVolumes", "EnableVirtioFsPVC"]
                    }
                },
                objects=[pvc("pvc")],
            ),
        )
    yield (
        "sev",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base),
                    launchSecurity={"sev": {}},
                    firmware={"bootloader": {"efi": {"secureBoot": False}}},
                )
            },
            kubevirt={"developerConfiguration": {"featureGates": ["WorkloadEncryptionSEV"]}},
        ),
    )
    yield (
        "sev-es",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base),
                    launchSecurity={"sev": {"policy": {"encryptedState": True}}},
                    firmware={"bootloader": {"efi": {"secureBoot": False}}},
                )
            },
            kubevirt={"developerConfiguration": {"featureGates": ["WorkloadEncryptionSEV"]}},
        ),
    )
    yield (
        "lun-reservation",
        case(
            with_devices(
                {"disks": [{"name": "lun", "lun": {"reservation": True}}]},
                volumes=[{"name": "lun", "persistentVolumeClaim": {"claimName": "lun"}}],
            ),
            kubevirt={"developerConfiguration": {"featureGates": ["PersistentReservation"]}},
            objects=[pvc("lun")],
        ),
    )
    hooks = json.dumps([{"image": "quay.io/hook:1", "args": ["--version", "v1alpha2"]}])
    yield (
        "hook-sidecar",
        case(with_devices({}), meta={"annotations": {"hooks.kubevirt.io/hookSidecars": hooks}}),
    )
    yield (
        "hook-sidecar-dedicated",
        case(
            {"domain": domain(cpu={"cores": 2, "dedicatedCpuPlacement": True}, memory={"guest": "2Gi"})},
            meta={"annotations": {"hooks.kubevirt.io/hookSidecars": hooks}},
        ),
    )
    yield (
        "iommufd",
        case(with_devices({}), kubevirt={"developerConfiguration": {"featureGates": ["IOMMUFD"]}}),
    )


def gpus_and_host_devices() -> Iterator[Case]:
    base = {"cpu": {"cores": 2}, "memory": {"guest": "4Gi"}}
    permitted = {
        "permittedHostDevices": {
            "pciHostDevices": [
                {"pciVendorSelector": "10DE:1EB8", "resourceName": "nvidia.com/TU104GL_Tesla_T4"}
            ],
            "mediatedDevices": [{"mdevNameSelector": "GRID T4-1Q", "resourceName": "nvidia.com/GRID_T4-1Q"}],
        },
        "developerConfiguration": {"featureGates": ["HostDevices", "GPU"]},
    }
    for gpus, hds in itertools.product((0, 1, 2), (0, 1, 2)):
        devs: JSON = {}
        if gpus:
            devs["gpus"] = [{"name": f"gpu{i}", "deviceName": "nvidia.com/GRID_T4-1Q"} for i in range(gpus)]
        if hds:
            devs["hostDevices"] = [
                {"name": f"hd{i}", "deviceName": "nvidia.com/TU104GL_Tesla_T4"} for i in range(hds)
            ]
        yield (
            f"gpus{gpus}-hostdevs{hds}",
            case({"domain": domain(**copy.deepcopy(base), devices=devs)}, kubevirt=permitted),
        )
        yield (
            f"gpus{gpus}-hostdevs{hds}-unconfigured",
            case(
                {"domain": domain(**copy.deepcopy(base), devices=copy.deepcopy(devs))},
                kubevirt={"developerConfiguration": {"featureGates": ["HostDevices", "GPU"]}},
            ),
        )
    yield (
        "gpu-not-permitted",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base), devices={"gpus": [{"name": "g", "deviceName": "vendor.com/other"}]}
                )
            },
            kubevirt=permitted,
        ),
    )
    yield (
        "hostdev-not-permitted",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base),
                    devices={"hostDevices": [{"name": "h", "deviceName": "vendor.com/x"}]},
                )
            },
            kubevirt=permitted,
        ),
    )
    yield (
        "gpus-two-kinds",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base),
                    devices={
                        "gpus": [
                            {"name": "a", "deviceName": "nvidia.com/GRID_T4-1Q"},
                            {"name": "b", "deviceName": "nvidia.com/TU104GL_Tesla_T4"},
                        ]
                    },
                )
            },
            kubevirt=permitted,
        ),
    )


def networks() -> Iterator[Case]:
    base = {"cpu": {"cores": 2}, "memory": {"guest": "2Gi"}}
    pod_net = [{"name": "default", "pod": {}}]
    bindings = {
        "network": {
            "binding": {
                "mybind": {
                    "sidecarImage": "quay.io/bind:1",
                    "computeResourceOverhead": {"requests": {"memory": "300Mi"}},
                },
                "other": {
                    "domainAttachmentType": "tap",
                    "computeResourceOverhead": {"requests": {"memory": "12M"}},
                },
                "plain": {"sidecarImage": "quay.io/plain:1"},
            }
        }
    }
    for iface in (
        {"name": "default", "masquerade": {}},
        {"name": "default", "bridge": {}},
        {"name": "default", "masquerade": {}, "model": "e1000"},
        {"name": "default", "masquerade": {}, "model": "virtio"},
        {"name": "default", "binding": {"name": "mybind"}},
        {"name": "default", "binding": {"name": "other"}},
        {"name": "default", "binding": {"name": "plain"}},
    ):
        name = "-".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in iface.items() if k != "name")
        yield (
            f"iface-{name}",
            case(
                {
                    "domain": domain(**copy.deepcopy(base), devices={"interfaces": [iface]}),
                    "networks": copy.deepcopy(pod_net),
                },
                kubevirt=bindings,
            ),
        )
    yield (
        "passt",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base), devices={"interfaces": [{"name": "default", "passtBinding": {}}]}
                ),
                "networks": copy.deepcopy(pod_net),
            }
        ),
    )
    multus = [
        {"name": "default", "pod": {}},
        {"name": "sec", "multus": {"networkName": "net1"}},
        {"name": "sec2", "multus": {"networkName": "net2"}},
    ]
    yield (
        "bindings-three",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base),
                    devices={
                        "interfaces": [
                            {"name": "default", "binding": {"name": "mybind"}},
                            {"name": "sec", "binding": {"name": "other"}},
                            {"name": "sec2", "binding": {"name": "mybind"}},
                        ]
                    },
                ),
                "networks": copy.deepcopy(multus),
            },
            kubevirt=bindings,
        ),
    )
    yield (
        "masquerade-and-bridge",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base),
                    devices={
                        "interfaces": [{"name": "default", "masquerade": {}}, {"name": "sec", "bridge": {}}]
                    },
                ),
                "networks": copy.deepcopy(multus[:2]),
            }
        ),
    )
    yield "emulation", case(small(), kubevirt={"developerConfiguration": {"useEmulation": True}})
    yield (
        "emulation-masquerade",
        case(
            {
                "domain": domain(
                    **copy.deepcopy(base), devices={"interfaces": [{"name": "default", "masquerade": {}}]}
                ),
                "networks": copy.deepcopy(pod_net),
            },
            kubevirt={"developerConfiguration": {"useEmulation": True}},
        ),
    )
    yield "default-masquerade", case(small(), kubevirt={"network": {"defaultNetworkInterface": "masquerade"}})


def ratios() -> Iterator[Case]:
    for ratio in ("1", "1.0", "1.2", "1.5", "2", "2.75", "3.333", "10"):
        conf = {"additionalGuestMemoryOverheadRatio": ratio}
        for mem in ("1Gi", "4Gi", "100Gi"):
            yield (
                f"overhead-ratio-{ratio}-{mem}",
                case({"domain": domain(cpu={"cores": 2}, memory={"guest": mem})}, kubevirt=conf),
            )
    for ratio in (1, 2, 3, 4, 7, 10, 16, 100):
        conf2 = {"developerConfiguration": {"cpuAllocationRatio": ratio}}
        for vcpus in (1, 2, 3, 5, 8, 13, 64):
            yield (
                f"cpu-ratio-{ratio}-{vcpus}",
                case({"domain": domain(cpu={"sockets": vcpus}, memory={"guest": "2Gi"})}, kubevirt=conf2),
            )
    for entry in (
        {
            "type": "guest-console-log",
            "resources": {
                "requests": {"cpu": "20m", "memory": "50M"},
                "limits": {"cpu": "40m", "memory": "100M"},
            },
        },
        {"type": "container-disk", "resources": {"requests": {"cpu": "5m"}, "limits": {"memory": "200M"}}},
        {"type": "sidecar", "resources": {"requests": {"memory": "33Mi"}, "limits": {"cpu": "1"}}},
        {"type": "virtiofs", "resources": {"requests": {"cpu": "3m"}, "limits": {"memory": "120M"}}},
    ):
        conf3 = {
            "supportContainerResources": [entry],
            "developerConfiguration": {
                "featureGates": ["EnableVirtioFsConfigVolumes"],
                "disabledFeatureGates": ["ImageVolume"],
            },
        }
        hooks = json.dumps([{"image": "quay.io/hook:1"}])
        tspec = {
            "domain": domain(
                cpu={"cores": 1},
                memory={"guest": "1Gi"},
                devices={"filesystems": [{"name": "cm", "virtiofs": {}}]},
            ),
            "volumes": [
                {"name": "root", "containerDisk": {"image": "quay.io/x:1"}},
                {"name": "cm", "configMap": {"name": "cm"}},
            ],
        }
        yield (
            f"support-{entry['type']}",
            case(tspec, kubevirt=conf3, meta={"annotations": {"hooks.kubevirt.io/hookSidecars": hooks}}),
        )
        guaranteed = copy.deepcopy(tspec)
        guaranteed["domain"]["resources"] = {
            "requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        }
        yield (
            f"support-{entry['type']}-guaranteed",
            case(guaranteed, kubevirt=conf3, meta={"annotations": {"hooks.kubevirt.io/hookSidecars": hooks}}),
        )


def auto_limits() -> Iterator[Case]:
    def quota(hard: JSON) -> JSON:
        return {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "default"},
            "spec": {"hard": hard},
        }

    def ns(labels: JSON | None) -> JSON:
        meta: JSON = {"name": "default"}
        if labels:
            meta["labels"] = labels
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}

    hards: list[JSON | None] = [
        None,
        {"limits.memory": "100Gi"},
        {"limits.cpu": "20"},
        {"limits.cpu": "20", "limits.memory": "100Gi"},
        {"requests.memory": "100Gi"},
    ]
    labels_options: list[JSON | None] = [
        None,
        {"alpha.kubevirt.io/auto-memory-limits-ratio": "1.5"},
        {"alpha.kubevirt.io/auto-memory-limits-ratio": "3"},
        {"alpha.kubevirt.io/auto-memory-limits-ratio": "0.5"},
        {"alpha.kubevirt.io/auto-memory-limits-ratio": "x"},
        {"cpu-limits": "yes"},
    ]
    selector = {"autoCPULimitNamespaceLabelSelector": {"matchLabels": {"cpu-limits": "yes"}}}
    vms = {
        "plain": {"domain": domain(cpu={"cores": 2}, memory={"guest": "2Gi"})},
        "own-limits": {
            "domain": domain(
                cpu={"cores": 2},
                resources={"requests": {"memory": "2Gi"}, "limits": {"memory": "3Gi", "cpu": "2"}},
            )
        },
        "hugepages": {
            "domain": domain(cpu={"cores": 2}, memory={"guest": "2Gi", "hugepages": {"pageSize": "2Mi"}})
        },
        "dedicated": {
            "domain": domain(cpu={"cores": 2, "dedicatedCpuPlacement": True}, memory={"guest": "2Gi"})
        },
    }
    for (vm_name, tspec), hard, labels, conf in itertools.product(
        vms.items(), hards, labels_options, (None, selector)
    ):
        if labels is None and hard is None and conf is None:
            continue
        # the label's parsing is tested on the plain VM; the others take one ratio
        if (
            vm_name != "plain"
            and labels is not None
            and labels.get("alpha.kubevirt.io/auto-memory-limits-ratio") not in (None, "3")
        ):
            continue
        key = (
            f"{vm_name}-{json.dumps(hard, sort_keys=True)}-{json.dumps(labels, sort_keys=True)}-{bool(conf)}"
        )
        yield (
            key,
            case(
                copy.deepcopy(tspec),
                kubevirt=conf,
                namespace=ns(labels) if labels is not None else None,
                quota=quota(hard) if hard is not None else None,
            ),
        )


def instancetypes() -> Iterator[Case]:
    def itype(name: str, spec: JSON) -> JSON:
        return {
            "apiVersion": "instancetype.kubevirt.io/v1beta1",
            "kind": "VirtualMachineClusterInstancetype",
            "metadata": {"name": name},
            "spec": spec,
        }

    def pref(name: str, spec: JSON) -> JSON:
        return {
            "apiVersion": "instancetype.kubevirt.io/v1beta1",
            "kind": "VirtualMachineClusterPreference",
            "metadata": {"name": name},
            "spec": spec,
        }

    types = {
        "u1.small": {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}},
        "u1.large": {"cpu": {"guest": 4}, "memory": {"guest": "16Gi"}},
        "cx1.medium": {
            "cpu": {"guest": 2, "dedicatedCPUPlacement": True, "isolateEmulatorThread": True},
            "memory": {"guest": "4Gi", "hugepages": {"pageSize": "2Mi"}},
            "ioThreadsPolicy": "shared",
        },
        "m1.xlarge": {"cpu": {"guest": 8}, "memory": {"guest": "64Gi", "hugepages": {"pageSize": "1Gi"}}},
        "o1.medium": {"cpu": {"guest": 2}, "memory": {"guest": "4Gi", "overcommitPercent": 50}},
        "n1.medium": {"cpu": {"guest": 4, "dedicatedCPUPlacement": True}, "memory": {"guest": "4Gi"}},
        "gpu": {
            "cpu": {"guest": 4},
            "memory": {"guest": "16Gi"},
            "gpus": [{"name": "gpu1", "deviceName": "nvidia.com/GRID_T4-1Q"}],
        },
        "maxsockets": {"cpu": {"guest": 2, "maxSockets": 6}, "memory": {"guest": "2Gi", "maxGuest": "8Gi"}},
    }
    prefs = {
        None: None,
        "sockets": {"cpu": {"preferredCPUTopology": "sockets"}},
        "cores": {"cpu": {"preferredCPUTopology": "cores"}},
        "threads": {"cpu": {"preferredCPUTopology": "threads"}},
        "spread": {
            "cpu": {
                "preferredCPUTopology": "spread",
                "spreadOptions": {"across": "SocketsCoresThreads", "ratio": 2},
            }
        },
        "devices": {
            "devices": {
                "preferredAutoattachGraphicsDevice": False,
                "preferredAutoattachSerialConsole": False,
                "preferredInterfaceModel": "e1000",
                "preferredTPM": {},
            }
        },
        "input": {"devices": {"preferredAutoattachInputDevice": True}},
    }
    conf = {
        "permittedHostDevices": {
            "mediatedDevices": [{"mdevNameSelector": "GRID T4-1Q", "resourceName": "nvidia.com/GRID_T4-1Q"}]
        },
        "developerConfiguration": {"featureGates": ["GPU"]},
    }
    for (tname, tspec), (pname, pspec) in itertools.product(types.items(), prefs.items()):
        objects = [itype(tname, tspec)]
        spec: JSON = {"instancetype": {"name": tname}}
        if pname is not None:
            objects.append(pref(pname, pspec or {}))
            spec["preference"] = {"name": pname}
        tmpl: JSON = {"domain": {"devices": {}}}
        if pname == "devices":
            tmpl["networks"] = [{"name": "default", "pod": {}}]
            tmpl["domain"]["devices"]["interfaces"] = [{"name": "default", "masquerade": {}}]
        yield f"{tname}-{pname}", case(tmpl, objects=objects, spec=spec, kubevirt=conf)


def combinations(count: int = 300, seed: int = 7) -> Iterator[Case]:
    """Random mixes of the families' knobs (fixed seed: the same cases every run)."""
    rnd = random.Random(seed)
    for index in range(count):
        cpu: JSON = {}
        for key in ("sockets", "cores", "threads"):
            if rnd.random() < 0.5:
                cpu[key] = rnd.choice((1, 2, 3, 4))
        if rnd.random() < 0.15:
            cpu["dedicatedCpuPlacement"] = True
            if rnd.random() < 0.5:
                cpu["isolateEmulatorThread"] = True
        memory: JSON = {}
        resources: JSON = {}
        pick = rnd.random()
        size = rnd.choice(("512Mi", "1Gi", "1536Mi", "2G", "3Gi", "5Gi", "12Gi", "999M"))
        if pick < 0.5:
            memory["guest"] = size
        elif pick < 0.8:
            resources["requests"] = {"memory": size}
        else:
            resources["limits"] = {"memory": size}
        if rnd.random() < 0.15:
            memory["hugepages"] = {"pageSize": rnd.choice(("2Mi", "1Gi"))}
            memory.setdefault("guest", "2Gi")
        if rnd.random() < 0.25:
            resources.setdefault("requests", {})["cpu"] = rnd.choice(("100m", "500m", "1", "2"))
        if rnd.random() < 0.15:
            resources.setdefault("limits", {})["cpu"] = rnd.choice(("1", "2", "4"))
        devs: JSON = {}
        if rnd.random() < 0.2:
            devs["autoattachGraphicsDevice"] = False
        if rnd.random() < 0.15:
            devs["autoattachSerialConsole"] = False
        if rnd.random() < 0.15:
            devs["tpm"] = {}
        if rnd.random() < 0.2:
            devs["interfaces"] = [{"name": "default", rnd.choice(("masquerade", "bridge")): {}}]
        tspec: JSON = {
            "domain": domain(
                cpu=cpu or None, memory=memory or None, resources=resources or None, devices=devs
            )
        }
        if "interfaces" in devs:
            tspec["networks"] = [{"name": "default", "pod": {}}]
        if rnd.random() < 0.4:
            tspec["volumes"] = [{"name": "root", "containerDisk": {"image": "quay.io/x:1"}}]
        if rnd.random() < 0.1:
            tspec["readinessProbe"] = {"exec": {"command": ["true"]}}
        conf: JSON = {}
        if rnd.random() < 0.3:
            conf["additionalGuestMemoryOverheadRatio"] = rnd.choice(("1.1", "1.5", "2"))
        if rnd.random() < 0.3:
            conf["developerConfiguration"] = {"cpuAllocationRatio": rnd.choice((1, 2, 5, 10, 20))}
        if rnd.random() < 0.15:
            conf.setdefault("developerConfiguration", {})["memoryOvercommit"] = rnd.choice((80, 120, 150))
        arch = rnd.choice(("amd64", "amd64", "arm64", "s390x"))
        if arch != "amd64":
            conf["architectureConfiguration"] = {"defaultArchitecture": arch}
        quota = None
        if rnd.random() < 0.15:
            quota = {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "q"},
                "spec": {"hard": {"limits.memory": "1Ti", "limits.cpu": "100"}},
            }
        yield f"mix-{index}", case(tspec, kubevirt=conf or None, arch=arch, quota=quota)


# --- the classes issue 36 found (also generated afresh by tests/api/test_launch_oracle.py) ---------------

GATE = "ExternalNetResourceInjection"


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
        tspec = small(devices={"interfaces": interfaces})
        tspec["networks"] = networks
        cases.append(case(tspec, kubevirt=_gate(rng), objects=objects))
    return cases


def _pvc(name: str, namespace: str | None, mode: str | None, access: str) -> JSON:
    claim = pvc(name)
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
        tspec = small(devices={"disks": disks})
        tspec["volumes"] = volumes
        cases.append(case(tspec, objects=objects))
    return cases


def vmi_cases(count: int, seed: int = 38) -> list[JSON]:
    """VMIs given whole: the VM cases of the other classes and of the corpus' families, their template
    made a VMI, under configurations that change the webhook's defaults."""
    rng = random.Random(seed)
    pool = [
        given for family in ("topologies", "memory", "devices", "networks") for _, given in FAMILIES[family]()
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


def multus() -> Iterator[Case]:
    for index, given in enumerate(multus_cases(100, seed=360)):
        yield f"multus-{index}", given


def claims() -> Iterator[Case]:
    for index, given in enumerate(claim_cases(100, seed=370)):
        yield f"claims-{index}", given


def vmis() -> Iterator[Case]:
    for index, given in enumerate(vmi_cases(100, seed=380)):
        yield f"vmi-{index}", given


EXAMPLES = REPO / "examples"
EXAMPLE_KINDS = (
    "VirtualMachineInstancetype",
    "VirtualMachineClusterInstancetype",
    "VirtualMachinePreference",
    "VirtualMachineClusterPreference",
    "ControllerRevision",
)


def example_objects() -> tuple[list[JSON], list[JSON], JSON | None]:
    """The examples folder: its VMs, the objects they may reference, its KubeVirt CR."""
    from apiserver.documents.manifests import parse_manifests

    vms, objects, kubevirt = [], [], None
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for obj in parse_manifests(path.read_text(), str(path)):
            if obj.get("kind") == "VirtualMachine":
                vms.append(obj)
            elif obj.get("kind") in EXAMPLE_KINDS:
                objects.append(obj)
            elif obj.get("kind") == "KubeVirt":
                kubevirt = obj
    return vms, objects, kubevirt


def examples() -> Iterator[Case]:
    """The examples' VMs as the collection renders them (no presets)."""
    vms, objects, kubevirt = example_objects()
    for example in vms:
        given: JSON = {"vm": example, "objects": objects, "arch": "amd64"}
        if kubevirt is not None:
            given["kubevirt"] = kubevirt
        yield example["metadata"]["name"], given


FAMILIES: dict[str, Callable[[], Iterator[Case]]] = {
    "examples": examples,
    "architectures": architectures,
    "topologies": topologies,
    "memory": memory_sizes,
    "dedicated": dedicated,
    "devices": devices,
    "gpus": gpus_and_host_devices,
    "networks": networks,
    "ratios": ratios,
    "autolimits": auto_limits,
    "instancetypes": instancetypes,
    "combinations": combinations,
    "multus": multus,
    "claims": claims,
    "vmis": vmis,
}


# --- the oracle's answer -------------------------------------------------------------------------------

VMI_PATHS = (
    ("spec", "architecture"),
    ("spec", "domain", "cpu"),
    ("spec", "domain", "memory"),
    ("spec", "domain", "resources"),
    ("spec", "domain", "machine"),
    ("status", "memory"),
    ("status", "currentCPUTopology"),
)


def _dig(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def kubernetes_total(pod: JSON) -> JSON:
    """The harness's totals (``podTotals`` in ``expand-launcher``: ``PodRequests``' rule for limits too,
    each set limit summed) under Kubernetes' rule for the pod's limits: no CPU or memory limit where some
    container or init container declares none (kubelet's ``ResourceConfigForPod``;
    ``PodResources.effective_limits``). KubeVirt's containers are compared as they are."""
    from apiserver.render.kubernetes.quantity import parse_quantity

    everyone = [*pod["containers"], *pod["initContainers"]]
    limits = dict(pod["total"].get("limits") or {})
    for name in ("cpu", "memory"):
        declared = ((c.get("resources") or {}).get("limits") or {} for c in everyone)
        if not all(name in got and not parse_quantity(got[name]).is_zero() for got in declared):
            limits.pop(name, None)
    return {**pod["total"], "limits": limits}


def answer_of(output: JSON) -> JSON:
    """The part of the oracle's output the tests compare."""
    if "inputError" in output:
        return {"inputError": output["inputError"]}
    if output.get("error") or output.get("panic"):
        return {"error": output.get("error") or output.get("panic"), "stage": output.get("stage", "")}
    pod = output["pod"]
    return {
        "memoryOverhead": output["memoryOverhead"],
        "containers": pod["containers"],
        "initContainers": pod["initContainers"],
        "total": kubernetes_total(pod),
        "vmi": {".".join(path): _dig(output["vmi"], path) for path in VMI_PATHS},
    }


def harness_kubevirt(kubevirt: JSON | None, arch: str) -> JSON:
    """The KubeVirt CR as the harness reads it: ``status.defaultArchitecture`` is the configured
    architecture, else the harness's ``arch`` (what virt-operator running there would publish)."""
    if kubevirt is not None and "spec" in kubevirt:
        cr = copy.deepcopy(kubevirt)
    else:
        cr = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "spec": {"configuration": copy.deepcopy(kubevirt or {})},
        }
    configured = ((cr["spec"].get("configuration") or {}).get("architectureConfiguration") or {}).get(
        "defaultArchitecture"
    )
    cr.setdefault("status", {})["defaultArchitecture"] = configured or arch
    return cr


def run_case(given: JSON) -> JSON:
    """Our engine's stages on a case's input, in the shape of :func:`answer_of`, compared with the oracle's
    stages: expand the VM, then the VM controller and the VMI webhook (a ``vmi`` input: the webhook alone,
    :func:`apiserver.render.launcher.admit_vmi`; with ``skipMutation``, neither), then the template
    service's pod (``render_pod_resources``, before kube-apiserver's defaulting), with the
    NetworkAttachmentDefinitions and PVCs among the objects as the harness stores them."""
    from apiserver import api
    from apiserver.render.kubernetes.errors import ExpandError
    from apiserver.render.launcher import admit_vmi, cluster_inputs, decode_vmi
    from apiserver.render.templateservice.config import launcher_config
    from apiserver.render.templateservice.pod import render_pod_resources
    from apiserver.render.templateservice.resources import Cluster, RenderError
    from apiserver.render.vmcontroller.startvmi import start_vmi
    from apiserver.render.vmimutation.mutate import mutate_vmi

    kubevirt = harness_kubevirt(given.get("kubevirt"), given.get("arch") or "amd64")
    config = launcher_config(kubevirt)
    if given.get("vmi") is not None and given.get("skipMutation"):
        try:
            vmi = decode_vmi(given["vmi"])
        except ExpandError as err:
            return {"inputError": err.message}
        vmi["metadata"].setdefault("namespace", "default")
    elif given.get("vmi") is not None:
        try:
            vmi, _ = admit_vmi(config, given["vmi"])
        except ExpandError as err:
            # refused by virt-api's VMI webhook, as the harness reports it
            return {"error": f"admission denied: {err.message}", "stage": "vmi-mutation"}
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expanded = api.expand_vm(given["vm"], given.get("objects") or [], kubevirt)
        except ExpandError as err:
            return {"error": err.message, "stage": "expand"}
        vmi = mutate_vmi(config, start_vmi(expanded, config.admission.render))
    namespace = vmi["metadata"]["namespace"]
    inputs = cluster_inputs(given.get("objects") or [], namespace)
    quota = given.get("namespaceQuota")
    quotas = [quota] if quota else []
    for q in quotas:
        q.setdefault("metadata", {}).setdefault("namespace", namespace)
    cluster = Cluster(arch=given.get("arch") or "amd64", namespace=given.get("namespace"), quotas=quotas)
    try:
        pod = render_pod_resources(config, vmi, cluster, inputs["nads"], inputs["pvcs"])
    except RenderError as err:
        return {"error": str(err), "stage": "render"}
    out = pod.to_json()
    return {
        "memoryOverhead": out["memoryOverhead"],
        "containers": out["containers"],
        "initContainers": out["initContainers"],
        "total": out["total"],
        "vmi": {".".join(path): _dig(vmi, path) for path in VMI_PATHS},
    }


def ask_oracle(oracle: str, inputs: list[JSON]) -> list[JSON]:
    text = "".join(json.dumps(i) + "\n" for i in inputs)
    done = subprocess.run([oracle], input=text, capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    if len(lines) != len(inputs):
        raise SystemExit(
            f"oracle answered {len(lines)} lines for {len(inputs)} inputs: {done.stderr[-2000:]}"
        )
    return [answer_of(json.loads(line)) for line in lines]


def generate(only: str | None = None) -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for family, make in FAMILIES.items():
        if only and family != only:
            continue
        seen: set[str] = set()
        cases = []
        for name, given in make():
            if name in seen:
                raise SystemExit(f"{family}: duplicate case name {name}")
            seen.add(name)
            cases.append((name, given))
        out[family] = cases
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--oracle", default=DEFAULT_ORACLE)
    parser.add_argument("--only", choices=sorted(FAMILIES))
    parser.add_argument(
        "--check", action="store_true", help="compare the engine with the oracle; write nothing"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="with --check: show what differs")
    args = parser.parse_args(argv)
    if not Path(args.oracle).exists():
        print(
            f"no expand-launcher oracle at {args.oracle} (KUBEVIRT_EXPAND_LAUNCHER_ORACLE)", file=sys.stderr
        )
        return 2
    families = generate(args.only)
    total = differ = 0
    for family, cases in families.items():
        answers = ask_oracle(args.oracle, [given for _, given in cases])
        if args.check:
            for (name, given), answer in zip(cases, answers, strict=True):
                total += 1
                mine = run_case(given)
                if json.loads(json.dumps(mine)) != answer:
                    differ += 1
                    print(f"{family}/{name}: differs", file=sys.stderr)
                    if args.verbose:
                        for key in sorted(set(mine) | set(answer)):
                            if json.loads(json.dumps(mine.get(key))) != answer.get(key):
                                print(f"  {key}: ours {json.dumps(mine.get(key))[:700]}", file=sys.stderr)
                                print(
                                    f"  {key}: kubevirt {json.dumps(answer.get(key))[:700]}", file=sys.stderr
                                )
            continue
        CASES.mkdir(parents=True, exist_ok=True)
        with (CASES / f"{family}.jsonl").open("w") as fh:
            for (name, given), answer in zip(cases, answers, strict=True):
                fh.write(json.dumps({"name": name, "input": given, "answer": answer}, sort_keys=True) + "\n")
        total += len(cases)
        print(f"{family}: {len(cases)} cases")
    print(f"{total} cases" + (f", {differ} differ" if args.check else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
