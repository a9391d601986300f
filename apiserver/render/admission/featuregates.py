"""KubeVirt's feature gates: their states, whether one is on, and the discontinued ones a VM may not use.

Mirrors ``pkg/virt-config/featuregate`` (``active.go``, ``inactive.go``, ``feature-gates.go``,
``validator.go``, ``passt.go``, ``macvtap.go``) at the matched commit. Only the gates that some rule of the
VM webhook reads, and every gate whose state is not Alpha, are listed: an unlisted gate is Alpha (off
unless enabled), which is what KubeVirt does for the Alpha gates it registers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apiserver.render.admission._go import Causes, items, obj
from apiserver.render.kubernetes.errors import Cause

ALPHA, BETA, GA, DEPRECATED, DISCONTINUED = (
    "Alpha",
    "Beta",
    "General Availability",
    "Deprecated",
    "Discontinued",
)

# Gate names the rules use (featuregate/active.go and inactive.go).
CPU_MANAGER = "CPUManager"
IGNITION = "ExperimentalIgnitionSupport"
SIDECAR = "Sidecar"
HOST_DEVICES = "HostDevices"
HOST_DISK = "HostDisk"
DOWNWARD_METRICS = "DownwardMetrics"
WORKLOAD_ENCRYPTION_SEV = "WorkloadEncryptionSEV"
WORKLOAD_ENCRYPTION_TDX = "WorkloadEncryptionTDX"
VSOCK = "VSOCK"
VIRTIOFS_STORAGE = "EnableVirtioFsStorageVolumes"
GPUS_WITH_DRA = "GPUsWithDRA"
HOST_DEVICES_WITH_DRA = "HostDevicesWithDRA"
PCI_NUMA_AWARE_TOPOLOGY = "PCINUMAAwareTopology"
NETWORK_DEVICES_WITH_DRA = "NetworkDevicesWithDRA"
DECENTRALIZED_LIVE_MIGRATION = "DecentralizedLiveMigration"
DECLARATIVE_HOTPLUG_VOLUMES = "DeclarativeHotplugVolumes"
PASST_BINDING = "PasstBinding"
REBOOT_POLICY = "RebootPolicy"
RESERVED_OVERHEAD_MEMLOCK = "ReservedOverheadMemlock"
GRACE_IO_VIRTUALIZATION = "GraceIOVirtualization"
IOMMUFD = "IOMMUFD"
PORT_RANGES_SPEC = "PortRangesSpec"
NUMA = "NUMA"
PERSISTENT_RESERVATION = "PersistentReservation"

_WARNING = (
    "feature gate {} is deprecated (feature state is {!r}), therefore it can be safely removed and is "
    "redundant. For more info, please look at: https://github.com/kubevirt/kubevirt/blob/main/docs/deprecation.md"
)


def _passt_used(spec: Mapping[str, Any]) -> bool:
    return any(i.get("passt") is not None for i in items(obj(spec, "domain", "devices"), "interfaces"))


def _macvtap_used(spec: Mapping[str, Any]) -> bool:
    return any(i.get("macvtap") is not None for i in items(obj(spec, "domain", "devices"), "interfaces"))


@dataclass(frozen=True, slots=True)
class Gate:
    state: str
    message: str = ""
    spec_used: Callable[[Mapping[str, Any]], bool] | None = None


def _inactive(state: str, message: str = "", used: Callable[[Mapping[str, Any]], bool] | None = None) -> Gate:
    return Gate(state, message, used)


_BETA = (
    "Snapshot", "WorkloadEncryptionSEV", "KubevirtSeccompProfile", "NodeRestriction", "GPUsWithDRA",
    "HostDevicesWithDRA", "DecentralizedLiveMigration", "DeclarativeHotplugVolumes", "PasstBinding",
    "PodSecondaryInterfaceNamingUpgrade", "ExternalNetResourceInjection", "RebootPolicy", "Template",
    "OptOutRoleAggregation", "ImageVolume",
)  # fmt: skip
_ALPHA = (
    "CPUManager", "ExperimentalIgnitionSupport", "HypervStrictCheck", "Sidecar", "HostDevices", "HostDisk",
    "DownwardMetrics", "Root", "WorkloadEncryptionTDX", "VSOCK", "AlignCPUs", "EnableVirtioFsStorageVolumes",
    "PCINUMAAwareTopology", "NetworkDevicesWithDRA", "ObjectGraph", "UtilityVolumes", "ConfigurableHypervisor",
    "IncrementalBackup", "ContainerPathVolumes", "ReservedOverheadMemlock", "VGPULiveMigration",
    "VMStatsCollector", "OCIExport", "Plugins", "GraceIOVirtualization", "IOMMUFD", "FirmwareAutoSelection",
    "MigrationStallDetection", "MigrationDowntimeTuning", "CrossArchitectureVirtualization", "PortRangesSpec",
)  # fmt: skip
_GA = (
    "LiveMigration", "SRIOVLiveMigration", "NonRoot", "PSA", "CPUNodeDiscovery", "NUMA",
    "CommonInstancetypesDeploymentGate", "GPU", "HotplugNICs", "BochsDisplayForEFIGuests",
    "VMLiveUpdateFeatures", "NetworkBindingPlugins", "DynamicPodInterfaceNaming", "VolumesUpdateStrategy",
    "VolumeMigration", "DisableCustomSELinuxPolicy", "AutoResourceLimitsGate", "ClusterProfiler",
    "VMPersistentState", "VMExport", "PersistentReservation", "InstancetypeReferencePolicy",
    "EnableVirtioFsConfigVolumes", "ExpandDisks", "PanicDevices", "LiveUpdateNADRef", "VideoConfig",
    "SecureExecution", "MigrationPriorityQueue", "VmiMemoryOverheadReport", "LibvirtHooksServerAndClient",
)  # fmt: skip

GATES: Mapping[str, Gate] = {
    **{name: Gate(ALPHA) for name in _ALPHA},
    **{name: Gate(BETA) for name in _BETA},
    **{name: Gate(GA, _WARNING.format(name, GA)) for name in _GA},
    "DockerSELinuxMCSWorkaround": Gate(
        DEPRECATED, "DockerSELinuxMCSWorkaround has been deprecated since v1.4."
    ),
    "MultiArchitecture": Gate(DEPRECATED, "MultiArchitecture has been deprecated since v1.8.0"),
    "DisableMDEVConfiguration": Gate(DEPRECATED, "DisableMDEVConfiguration has been deprecated since v1.8.0"),
    "HotplugVolumes": Gate(
        DEPRECATED,
        "HotplugVolumes has been deprecated since v1.9.0 and has been replaced by DeclarativeHotplugVolumes",
    ),
    "ExperimentalVirtiofsSupport": Gate(
        DISCONTINUED,
        "Virtiofs ExperimentalVirtiofsSupport feature gate is discontinued since v1.7. Please use "
        "EnableVirtioFsConfigVolumes or EnableVirtioFsPVC feature gates instead",
    ),
    "Passt": Gate(
        DISCONTINUED,
        "Passt network binding is discontinued since v1.3. Please refer to Kubevirt user guide for alternatives.",
        _passt_used,
    ),
    "Macvtap": Gate(
        DISCONTINUED,
        "Macvtap network binding is discontinued since v1.3. Please refer to Kubevirt user guide for alternatives.",
        _macvtap_used,
    ),
    "PasstIPStackMigration": Gate(
        DISCONTINUED,
        "Seamless migration with passt network binding plugin is no longer supported since KubeVirt v1.8. "
        "Please use the passt core binding instead.",
    ),
}


def is_enabled(gate: str, enabled: Sequence[str], disabled: Sequence[str]) -> bool:
    """``featuregate.IsEnabled``: GA always, then an explicit enable, an explicit disable, Beta by default."""
    info = GATES.get(gate)
    if info is None:
        return False
    if info.state == GA:
        return True
    if gate in enabled:
        return True
    if gate in disabled:
        return False
    return info.state == BETA


def validate_feature_gates(enabled: Sequence[str], spec: Mapping[str, Any]) -> Causes:
    """``featuregate.ValidateFeatureGates``: a discontinued gate that is both enabled and used."""
    causes: Causes = []
    for name in enabled:
        info = GATES.get(name)
        if (
            info is not None
            and info.state == DISCONTINUED
            and info.spec_used is not None
            and info.spec_used(spec)
        ):
            causes.append(Cause("", info.message, "FieldValueNotSupported"))
    return causes


def deprecated_api_warnings(enabled: Sequence[str], spec: Mapping[str, Any]) -> list[str]:
    """``warnDeprecatedAPIs`` (vmi-create-admitter.go): deprecated gates the spec uses.

    No deprecated gate has a usage check at this commit, so this is empty; kept so the rule stays where
    KubeVirt has it.
    """
    out = []
    for name in enabled:
        info = GATES.get(name)
        if (
            info is not None
            and info.state == DEPRECATED
            and info.spec_used is not None
            and info.spec_used(spec)
        ):
            out.append(info.message)
    return out
