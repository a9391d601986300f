"""Defaults expand adds: volume disks and the pod network before application, VMI-spec defaults after.

Mirrors ``util.SetDefaultVolumeDisk``, ``vmispec.SetDefaultNetworkInterface`` and
``defaults.SetDefaultVirtualMachineInstanceSpec`` (only the parts that touch a VM template).
"""

from __future__ import annotations

import contextlib
from typing import Any

from apiserver.render.golang.tree import child
from apiserver.render.kubernetes.errors import Cause, ExpandError
from apiserver.render.kubernetes.quantity import QuantityError, QuantityText, parse_quantity_text, quantity_of
from apiserver.render.virtconfig import ClusterConfig

JSON = dict[str, Any]


def set_default_volume_disks(tspec: JSON) -> None:
    domain = child(tspec, "domain")
    devices = child(domain, "devices")
    volumes = tspec.get("volumes")
    if not volumes:
        return
    disks = devices.get("disks") or []
    names = {d.get("name", "") for d in disks}
    filesystems = devices.get("filesystems")
    if filesystems:
        names.update(fs.get("name", "") for fs in filesystems)
    added = [{"name": name} for v in volumes if (name := v.get("name", "")) not in names]
    if added:
        devices["disks"] = [*disks, *added]


def set_default_network_interface(config: ClusterConfig, tspec: JSON) -> None:
    domain = child(tspec, "domain")
    devices = child(domain, "devices")
    if devices.get("autoattachPodInterface") is False:
        return
    if tspec.get("networks") or devices.get("interfaces"):
        return
    kind = config.default_network_interface
    if kind == "bridge":
        if not config.permit_bridge_interface_on_pod_network:
            raise _config_error("bridge interface is not enabled in kubevirt-config", "network")
        devices["interfaces"] = [{"name": "default", "bridge": {}}]
    elif kind == "masquerade":
        devices["interfaces"] = [{"name": "default", "masquerade": {}}]
    elif kind == "slirp":
        raise _config_error("slirp interface is deprecated as of v1.3", "network.defaultNetworkInterface")
    tspec["networks"] = [{"name": "default", "pod": {}}]


def _config_error(message: str, field: str) -> ExpandError:
    # The VM is fine; the cluster's network configuration cannot give it a default interface.
    return ExpandError.invalid(
        message,
        Cause("spec.template.spec.domain.devices.interfaces", message),
        Cause(f"kubevirt.spec.configuration.{field}", message),
    )


def _nonzero(resources: JSON, group: str, name: str) -> bool:
    value = (resources.get(group) or {}).get(name)
    return value is not None and not quantity_of(value).is_zero()


def set_vmi_spec_defaults(config: ClusterConfig, tspec: JSON) -> None:
    if not tspec.get("architecture") and config.default_architecture:
        tspec["architecture"] = config.default_architecture
    domain = child(tspec, "domain")
    machine = child(domain, "machine")
    if not machine.get("type"):
        machine["type"] = config.machine_type_for(tspec.get("architecture", ""))
    _resource_requests(config, domain)
    _guest_memory(domain)
    _cpu_topology(domain)
    for volume in tspec.get("volumes") or []:
        disk = volume.get("containerDisk")
        if disk is not None and not disk.get("imagePullPolicy"):
            image = disk.get("image", "")
            pull_always = image.endswith(":latest") or not (":" in image or "@" in image)
            disk["imagePullPolicy"] = "Always" if pull_always else "IfNotPresent"
    if tspec.get("evictionStrategy") is None and config.eviction_strategy is not None:
        tspec["evictionStrategy"] = config.eviction_strategy
    # KubeVirt runs SetDefaultNetworkInterface and SetDefaultVolumeDisk again here. Both are no-ops by
    # now: the first run left networks (or autoattachPodInterface false) and a disk for every volume,
    # and applying an instancetype or preference adds neither volumes nor filesystems.


def _resource_requests(config: ClusterConfig, domain: JSON) -> None:
    resources = child(domain, "resources")
    if (
        resources.get("limits")
        and _nonzero(resources, "limits", "cpu")
        and not _nonzero(resources, "requests", "cpu")
    ):
        child(resources, "requests")["cpu"] = resources["limits"]["cpu"]
    if config.cpu_request_is_custom and "cpu" not in (resources.get("requests") or {}):
        if (domain.get("cpu") or {}).get("dedicatedCpuPlacement"):
            return
        child(resources, "requests")["cpu"] = config.cpu_request


def _guest_memory(domain: JSON) -> None:
    memory: JSON | None = domain.get("memory")
    if memory is not None and memory.get("guest") is not None:
        return
    if memory is None:
        memory = domain["memory"] = {}
    resources = domain.get("resources") or {}
    if _nonzero(resources, "requests", "memory"):
        memory["guest"] = resources["requests"]["memory"]
    elif _nonzero(resources, "limits", "memory"):
        memory["guest"] = resources["limits"]["memory"]
    elif memory.get("hugepages") is not None:
        page_size = memory["hugepages"].get("pageSize", "")
        with contextlib.suppress(QuantityError):  # ParseQuantity itself: " 2Mi" fails, unlike in JSON
            # the parsed quantity itself: its text alone can read back in another format (1.953125Ki)
            memory["guest"] = QuantityText(parse_quantity_text(page_size))


def _cpu_topology(domain: JSON) -> None:
    cpu: JSON | None = domain.get("cpu")
    if cpu is not None and (cpu.get("cores") or cpu.get("sockets") or cpu.get("threads")):
        return
    if cpu is None:
        cpu = domain["cpu"] = {}
    resources = domain.get("resources") or {}
    sockets = 1
    limit = (resources.get("limits") or {}).get("cpu")
    request = (resources.get("requests") or {}).get("cpu")
    # uint32(q.Value()): the quantity as Go parsed it (Value() is 0 or wraps beyond int64), truncated.
    if limit is not None:
        sockets = quantity_of(limit).value_ceil() & 0xFFFFFFFF
    elif request is not None:
        sockets = quantity_of(request).value_ceil() & 0xFFFFFFFF
    cpu["sockets"], cpu["cores"], cpu["threads"] = sockets, 1, 1
