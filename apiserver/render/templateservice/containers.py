"""The virt-launcher pod's other containers and init containers, with their requests and limits.

Mirrors, in ``renderLaunchManifest``'s order (``pkg/virt-controller/services/template.go``): the
container disks' containers (``containerdisk.GenerateContainers``, ``GenerateKernelBootContainer``,
``getMinimalInitContainerDiskResources``; only without the ``ImageVolume`` gate), virtiofs
(``generateVirtioFSContainers``, ``virtiofs.ResourcesForVirtioFSContainer``), the hook sidecars
(``hooks.UnmarshalHookSidecarList``, ``netbinding.NetBindingPluginSidecarList``,
``sidecarResources``); then the init containers: the guest console log
(``generateSerialConsoleLogContainer``, ``isSerialConsoleLogEnabled``,
``resourcesForSerialConsoleLogContainer``), ``container-disk-binary``
(``initContainerResourceRequirementsForVMI``) and the container disks' init containers, or under
``ImageVolume`` ``CreateImageVolumeInitContainer`` per container disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from apiserver.render.kubernetes.quantity import Quantity
from apiserver.render.kubernetes.quantitymath import ResourceList, must_parse
from apiserver.render.templateservice import vmi as traits
from apiserver.render.templateservice.config import IMAGE_VOLUME, LauncherConfig
from apiserver.render.templateservice.resources import EPHEMERAL_STORAGE_OVERHEAD, RenderError

JSON = dict[str, Any]

HOOK_SIDECARS_ANNOTATION = "hooks.kubevirt.io/hookSidecars"
IMAGE_VOLUME_SKIP_DIGEST = "kubevirt.io/image-volume-skip-digest-resolution"
KERNEL_BOOT_VOLUME = "kernel-boot-volume"

# SupportContainerType values (kubevirt.io/api/core/v1)
CONTAINER_DISK = "container-disk"
SIDECAR = "sidecar"
GUEST_CONSOLE_LOG = "guest-console-log"
VIRTIOFS = "virtiofs"


@dataclass(frozen=True, slots=True)
class Container:
    """A container's name, its requests and limits, its resource claims, and whether it is an init
    container that keeps running (``restartPolicy: Always``)."""

    name: str
    requests: ResourceList
    limits: ResourceList
    claims: tuple[JSON, ...] = ()
    restartable: bool = False


def _pick(config: LauncherConfig, kind: str, name: str, default: str, *, limit: bool) -> Quantity:
    got = config.support_limit(kind, name) if limit else config.support_request(kind, name)
    return got if got is not None else must_parse(default)


def _guaranteed(vmi: JSON) -> bool:
    return traits.is_cpu_dedicated(vmi) or traits.wants_guaranteed_qos(vmi)


def container_disk_resources(config: LauncherConfig, vmi: JSON) -> tuple[ResourceList, ResourceList]:
    """``getMinimalInitContainerDiskResources``."""
    requests = {
        "cpu": _pick(config, CONTAINER_DISK, "cpu", "1m", limit=False),
        "memory": _pick(config, CONTAINER_DISK, "memory", "1M", limit=False),
        "ephemeral-storage": must_parse(EPHEMERAL_STORAGE_OVERHEAD),
    }
    limits = {
        "cpu": _pick(config, CONTAINER_DISK, "cpu", "10m", limit=True),
        "memory": _pick(config, CONTAINER_DISK, "memory", "40M", limit=True),
    }
    if _guaranteed(vmi):
        requests["cpu"], requests["memory"] = limits["cpu"], limits["memory"]
    return requests, limits


def init_container_resources(config: LauncherConfig, vmi: JSON) -> tuple[ResourceList, ResourceList]:
    """``initContainerResourceRequirementsForVMI`` for the ``container-disk-binary`` copy."""
    if _guaranteed(vmi):
        res = {
            "cpu": _pick(config, CONTAINER_DISK, "cpu", "10m", limit=True),
            "memory": _pick(config, CONTAINER_DISK, "memory", "40M", limit=True),
        }
        return dict(res), dict(res)
    limits = {
        "cpu": _pick(config, CONTAINER_DISK, "cpu", "100m", limit=True),
        "memory": _pick(config, CONTAINER_DISK, "memory", "40M", limit=True),
    }
    requests = {
        "cpu": _pick(config, CONTAINER_DISK, "cpu", "10m", limit=False),
        "memory": _pick(config, CONTAINER_DISK, "memory", "1M", limit=False),
    }
    return requests, limits


def sidecar_resources(config: LauncherConfig, vmi: JSON) -> tuple[ResourceList, ResourceList]:
    """``sidecarResources``."""
    requests: ResourceList = {}
    limits: ResourceList = {}
    for name in ("cpu", "memory"):
        got = config.support_request(SIDECAR, name)
        if got is not None:
            requests[name] = got
    if _guaranteed(vmi):
        limits["cpu"] = _pick(config, SIDECAR, "cpu", "200m", limit=True)
        limits["memory"] = _pick(config, SIDECAR, "memory", "64M", limit=True)
        requests["cpu"], requests["memory"] = limits["cpu"], limits["memory"]
    else:
        for name in ("cpu", "memory"):
            got = config.support_limit(SIDECAR, name)
            if got is not None:
                limits[name] = got
    return requests, limits


def virtiofs_resources(config: LauncherConfig, vmi: JSON) -> tuple[ResourceList, ResourceList]:
    """``virtiofs.ResourcesForVirtioFSContainer(dedicated, dedicated || guaranteed QOS)``."""
    dedicated = traits.is_cpu_dedicated(vmi)
    guaranteed = dedicated or traits.wants_guaranteed_qos(vmi)
    requests: ResourceList = {"cpu": _pick(config, VIRTIOFS, "cpu", "10m", limit=False)}
    limits: ResourceList = {
        "memory": _pick(config, VIRTIOFS, "memory", "80M", limit=True),
        "cpu": _pick(config, VIRTIOFS, "cpu", "100m", limit=True),
    }
    if dedicated or guaranteed:
        requests["cpu"] = limits["cpu"]
    if guaranteed:
        requests["memory"] = limits["memory"]
    else:
        requests["memory"] = _pick(config, VIRTIOFS, "memory", "1M", limit=False)
    return requests, limits


def console_log_resources(config: LauncherConfig, vmi: JSON) -> tuple[ResourceList, ResourceList]:
    """``resourcesForSerialConsoleLogContainer(dedicated, guaranteed QOS)``."""
    requests = {
        "memory": _pick(config, GUEST_CONSOLE_LOG, "memory", "35M", limit=False),
        "cpu": _pick(config, GUEST_CONSOLE_LOG, "cpu", "5m", limit=False),
    }
    limits = {
        "memory": _pick(config, GUEST_CONSOLE_LOG, "memory", "60M", limit=True),
        "cpu": _pick(config, GUEST_CONSOLE_LOG, "cpu", "15m", limit=True),
    }
    if _guaranteed(vmi):
        requests["cpu"], requests["memory"] = limits["cpu"], limits["memory"]
    return requests, limits


def serial_console_log_enabled(config: LauncherConfig, vmi: JSON) -> bool:
    """``isSerialConsoleLogEnabled``."""
    devices = traits.devices_of(vmi)
    if devices.get("autoattachSerialConsole") is False:
        return False
    if devices.get("logSerialConsole") is not None:
        return bool(devices["logSerialConsole"])
    return not config.serial_console_log_disabled


def hook_sidecar_count(config: LauncherConfig, vmi: JSON) -> int:
    """How many sidecars the creators ask for: the VMI's ``hooks.kubevirt.io/hookSidecars`` list, then
    one per distinct network binding plugin with a sidecar image (an interface naming a binding the
    configuration lacks fails the render)."""
    annotations = (vmi.get("metadata") or {}).get("annotations") or {}
    count = 0
    raw = annotations.get(HOOK_SIDECARS_ANNOTATION)
    if raw is not None:
        try:
            hooks = json.loads(raw)
        except ValueError as err:
            raise RenderError(str(err)) from None
        if hooks is not None and not isinstance(hooks, list):
            raise RenderError("json: cannot unmarshal into Go value of type hooks.HookSidecarList")
        count += len(hooks or [])
    bindings: dict[str, JSON] = {}
    for iface in traits.devices_of(vmi).get("interfaces") or ():
        binding = iface.get("binding")
        if binding is None:
            continue
        name = binding.get("name", "")
        if name not in config.network_bindings:
            raise RenderError(f"couldn't find configuration for network binding: {name}")
        bindings[name] = config.network_bindings[name] or {}
    count += sum(1 for plugin in bindings.values() if plugin.get("sidecarImage"))
    return count


def _container_disk_volumes(vmi: JSON) -> list[str]:
    return [
        v.get("name", "")
        for v in traits.spec_of(vmi).get("volumes") or ()
        if v.get("containerDisk") is not None and v.get("name") != KERNEL_BOOT_VOLUME
    ]


def other_containers(config: LauncherConfig, vmi: JSON) -> list[Container]:
    """The containers after ``compute``, in the pod's order."""
    out: list[Container] = []
    if not config.enabled(IMAGE_VOLUME):
        req, lim = container_disk_resources(config, vmi)
        out.extend(Container(f"volume{name}", req, lim) for name in _container_disk_volumes(vmi))
        if traits.has_kernel_boot_container(vmi):
            out.append(Container(f"volume{KERNEL_BOOT_VOLUME}", req, lim))
    filesystems = {fs.get("name", "") for fs in traits.devices_of(vmi).get("filesystems") or ()}
    if filesystems:
        req, lim = virtiofs_resources(config, vmi)
        for volume in traits.spec_of(vmi).get("volumes") or ():
            if volume.get("name", "") in filesystems and volume.get("containerPath") is None:
                out.append(Container(f"virtiofs-{volume.get('name', '')}", req, lim))
    count = hook_sidecar_count(config, vmi)
    if count:
        req, lim = sidecar_resources(config, vmi)
        out.extend(Container(f"hook-sidecar-{i}", req, lim) for i in range(count))
    return out


def init_containers(config: LauncherConfig, vmi: JSON) -> list[Container]:
    """The init containers, in the pod's order."""
    out: list[Container] = []
    if serial_console_log_enabled(config, vmi):
        req, lim = console_log_resources(config, vmi)
        out.append(Container("guest-console-log", req, lim, restartable=True))
    disks = _container_disk_volumes(vmi)
    kernel_boot = traits.has_kernel_boot_container(vmi)
    image_volume = config.enabled(IMAGE_VOLUME)
    any_container_disk = any(
        v.get("containerDisk") is not None for v in traits.spec_of(vmi).get("volumes") or ()
    )
    if not image_volume and (any_container_disk or kernel_boot):
        req, lim = init_container_resources(config, vmi)
        out.append(Container("container-disk-binary", req, lim))
        dreq, dlim = container_disk_resources(config, vmi)
        out.extend(Container(f"volume{name}-init", dreq, dlim) for name in disks)
        if kernel_boot:
            out.append(Container(f"volume{KERNEL_BOOT_VOLUME}-init", dreq, dlim))
    elif (
        image_volume
        and ((vmi.get("metadata") or {}).get("annotations") or {}).get(IMAGE_VOLUME_SKIP_DIGEST) != "true"
    ):
        dreq, dlim = container_disk_resources(config, vmi)
        for volume in traits.spec_of(vmi).get("volumes") or ():
            if volume.get("containerDisk") is not None:
                out.append(Container(f"volume{volume.get('name', '')}", dreq, dlim))
        if kernel_boot:
            out.append(Container(f"volume{KERNEL_BOOT_VOLUME}", dreq, dlim))
    return out
