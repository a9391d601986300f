"""The cluster configuration virt-controller's template service reads (``pkg/virt-config``:
``virt-config.go``'s ``GetMemoryOvercommit``, ``GetCPUAllocationRatio``, ``AllowEmulation``,
``GetSupportContainerRequest``/``Limit``, ``GetNetworkBindings``, ``IsSerialConsoleLogDisabled``,
``GetPermittedHostDevices``, ``feature-gates.go``; the VMI webhook's ``GetCPUModel``,
``IsVMRolloutStrategyLiveUpdate``, ``GetMaximumCpuSockets``, ``GetMaximumGuestMemory``,
``GetMaxHotplugRatio``).

The configuration is decoded as virt-api and virt-controller decode it (over the built-in defaults; a
configuration ``validateConfig`` refuses is not used at all), by :mod:`apiserver.render.virtconfig`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission.clusterconfig import AdmissionConfig, admission_config
from apiserver.render.kubernetes.quantity import Quantity
from apiserver.render.kubernetes.quantitymath import ResourceList, resource_list
from apiserver.render.memo import Memo
from apiserver.render.virtconfig import decode_configuration

# virt-config's defaults (DefaultMemoryOvercommit, DefaultCPUAllocationRatio, DefaultMaxHotplugRatio).
DEFAULT_MEMORY_OVERCOMMIT = 100
DEFAULT_CPU_ALLOCATION_RATIO = 10
DEFAULT_MAX_HOTPLUG_RATIO = 4

IMAGE_VOLUME = "ImageVolume"
EXTERNAL_NET_RESOURCE_INJECTION = "ExternalNetResourceInjection"
ALIGN_CPUS = "AlignCPUs"
ROOT = "Root"
CONFIGURABLE_HYPERVISOR = "ConfigurableHypervisor"


@dataclass(frozen=True, slots=True)
class SupportResources:
    """One ``supportContainerResources`` entry: a support container type's requests and limits."""

    requests: ResourceList
    limits: ResourceList


@dataclass(frozen=True, slots=True)
class LauncherConfig:
    """What the VMI webhook and the template service ask the cluster configuration for."""

    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    memory_overcommit: int = DEFAULT_MEMORY_OVERCOMMIT
    cpu_allocation_ratio: int = DEFAULT_CPU_ALLOCATION_RATIO
    use_emulation: bool = False
    additional_overhead_ratio: str | None = None
    network_bindings: Mapping[str, Any] = field(default_factory=dict)
    support: tuple[tuple[str, SupportResources], ...] = ()
    auto_cpu_limit_selector: Mapping[str, Any] | None = None
    serial_console_log_disabled: bool = False
    permitted_host_devices: Mapping[str, Any] | None = None
    cpu_model: str = ""
    max_cpu_sockets: int = 0
    max_guest: Quantity | None = None
    max_hotplug_ratio: int = DEFAULT_MAX_HOTPLUG_RATIO
    kubevirt_annotations: Mapping[str, str] = field(default_factory=dict)
    hypervisor: str = "kvm"
    image_pull_policy: str = ""

    def enabled(self, gate: str) -> bool:
        """``isFeatureGateEnabled``."""
        return self.admission.enabled(gate)

    def support_request(self, kind: str, name: str) -> Quantity | None:
        """``GetSupportContainerRequest``: the first entry of the type with a non-zero value."""
        return self._support(kind, name, requests=True)

    def support_limit(self, kind: str, name: str) -> Quantity | None:
        """``GetSupportContainerLimit``."""
        return self._support(kind, name, requests=False)

    def _support(self, kind: str, name: str, *, requests: bool) -> Quantity | None:
        for entry_kind, entry in self.support:
            if entry_kind != kind:
                continue
            got = (entry.requests if requests else entry.limits).get(name)
            if got is not None and not got.is_zero():
                return got
        return None


_CONFIGS: Memo[LauncherConfig] = Memo(64)
DEFAULT_LAUNCHER_CONFIG = LauncherConfig()


def launcher_config(
    kubevirt: Mapping[str, Any] | None, *, fingerprint: bytes | None = None
) -> LauncherConfig:
    """The configuration from a KubeVirt CR or a bare KubeVirtConfiguration (``fingerprint``: its JSON
    text, when known to be JSON; results are reused per CR version, apiserver.render.memo)."""
    if not kubevirt:
        return DEFAULT_LAUNCHER_CONFIG
    return _CONFIGS.get(kubevirt, lambda: _build(kubevirt, fingerprint), fingerprint=fingerprint)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value else default


def _build(kubevirt: Mapping[str, Any], fingerprint: bytes | None) -> LauncherConfig:
    admission = admission_config(kubevirt, fingerprint=fingerprint)
    annotations = (kubevirt.get("metadata") or {}).get("annotations") if kubevirt.get("spec") else None
    values: dict[str, Any] = {
        "admission": admission,
        "kubevirt_annotations": dict(annotations) if isinstance(annotations, Mapping) else {},
    }
    if admission.render.invalid:
        return LauncherConfig(**values)
    conf = decode_configuration(kubevirt)
    dev = conf.get("developerConfiguration") or {}
    values["memory_overcommit"] = _int(dev.get("memoryOvercommit"), DEFAULT_MEMORY_OVERCOMMIT)
    values["cpu_allocation_ratio"] = _int(dev.get("cpuAllocationRatio"), DEFAULT_CPU_ALLOCATION_RATIO)
    values["use_emulation"] = bool(dev.get("useEmulation"))
    ratio = conf.get("additionalGuestMemoryOverheadRatio")
    values["additional_overhead_ratio"] = ratio if isinstance(ratio, str) else None
    network = conf.get("network") or {}
    values["network_bindings"] = dict(network.get("binding") or {})
    support = []
    for entry in conf.get("supportContainerResources") or ():
        res = entry.get("resources") or {}
        support.append(
            (
                entry.get("type", ""),
                SupportResources(resource_list(res.get("requests")), resource_list(res.get("limits"))),
            )
        )
    values["support"] = tuple(support)
    values["auto_cpu_limit_selector"] = conf.get("autoCPULimitNamespaceLabelSelector")
    options = conf.get("virtualMachineOptions") or {}
    values["serial_console_log_disabled"] = options.get("disableSerialConsoleLog") is not None
    values["permitted_host_devices"] = conf.get("permittedHostDevices")
    values["cpu_model"] = conf.get("cpuModel") or ""
    values["image_pull_policy"] = conf.get("imagePullPolicy") or ""
    # decoded over the default liveUpdateConfiguration ({maxHotplugRatio: 4})
    live = conf.get("liveUpdateConfiguration") or {}
    values["max_cpu_sockets"] = _int(live.get("maxCpuSockets"), 0)
    if live.get("maxGuest") is not None:
        values["max_guest"] = resource_list({"m": live["maxGuest"]})["m"]
    values["max_hotplug_ratio"] = _int(live.get("maxHotplugRatio"), DEFAULT_MAX_HOTPLUG_RATIO)
    hypervisors = conf.get("hypervisors") or ()
    if (
        fg.is_enabled(CONFIGURABLE_HYPERVISOR, admission.feature_gates, admission.disabled_feature_gates)
        and hypervisors
    ):
        values["hypervisor"] = hypervisors[0].get("name") or "kvm"
    return LauncherConfig(**values)
