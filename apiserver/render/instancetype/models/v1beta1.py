"""``instancetype.kubevirt.io/v1beta1`` specs: the types the renderer applies.

Every older shape converts into these (see :mod:`.v1alpha`). Plain Go values (``schedulerName``,
``cpu.guest``, ``preferredDiskBus``, ...) default to their zero value; Go pointers, maps and slices
default to ``None``, so ``spec.cpu.model is not None`` is KubeVirt's ``Model != nil``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from apiserver.render.instancetype.models._base import (
    EFI,
    NUMA,
    BlockSize,
    ClockOffset,
    CPUFeatures,
    DiskIOThreads,
    FeatureAPIC,
    FeatureHyperv,
    FeatureKVM,
    FeatureState,
    GoModel,
    GPUs,
    HostDevices,
    Hugepages,
    Int,
    Int64,
    InterfaceMasquerade,
    IOThreadsPolicy,
    LaunchSecurity,
    Quantity,
    Realtime,
    Rng,
    StringMap,
    Timer,
    TPMDevice,
    Uint32,
    VGPUOptions,
)

# --- instance type -------------------------------------------------------------------------------


class CPUInstancetype(GoModel):
    _always: ClassVar[frozenset[str]] = frozenset({"guest"})

    guest: Uint32 = 0
    model: str | None = None
    dedicated_cpu_placement: bool | None = Field(None, alias="dedicatedCPUPlacement")
    numa: NUMA | None = None
    isolate_emulator_thread: bool | None = Field(None, alias="isolateEmulatorThread")
    realtime: Realtime | None = None
    max_sockets: Uint32 | None = Field(None, alias="maxSockets")


class MemoryInstancetype(GoModel):
    _always: ClassVar[frozenset[str]] = frozenset({"guest"})

    guest: Quantity = "0"
    hugepages: Hugepages | None = None
    overcommit_percent: Int = Field(0, alias="overcommitPercent")
    max_guest: Quantity | None = Field(None, alias="maxGuest")


class InstancetypeSpec(GoModel):
    """``VirtualMachineInstancetypeSpec``."""

    _go_name: ClassVar[str] = "VirtualMachineInstancetypeSpec"

    node_selector: StringMap | None = Field(None, alias="nodeSelector")
    scheduler_name: str = Field("", alias="schedulerName")
    cpu: CPUInstancetype = CPUInstancetype()
    memory: MemoryInstancetype = MemoryInstancetype()
    gpus: GPUs | None = None
    host_devices: HostDevices | None = Field(None, alias="hostDevices")
    io_threads_policy: IOThreadsPolicy | None = Field(None, alias="ioThreadsPolicy")
    io_threads: DiskIOThreads | None = Field(None, alias="ioThreads")
    launch_security: LaunchSecurity | None = Field(None, alias="launchSecurity")
    annotations: StringMap | None = None


# --- preference ----------------------------------------------------------------------------------


class ClockPreferences(GoModel):
    preferred_clock_offset: ClockOffset | None = Field(None, alias="preferredClockOffset")
    preferred_timer: Timer | None = Field(None, alias="preferredTimer")


class SpreadOptions(GoModel):
    across: str | None = None
    ratio: Uint32 | None = None


class CPUPreferences(GoModel):
    preferred_cpu_topology: str | None = Field(None, alias="preferredCPUTopology")
    spread_options: SpreadOptions | None = Field(None, alias="spreadOptions")
    preferred_cpu_features: CPUFeatures | None = Field(None, alias="preferredCPUFeatures")


class DevicePreferences(GoModel):
    preferred_autoattach_graphics_device: bool | None = Field(None, alias="preferredAutoattachGraphicsDevice")
    preferred_autoattach_mem_balloon: bool | None = Field(None, alias="preferredAutoattachMemBalloon")
    preferred_autoattach_pod_interface: bool | None = Field(None, alias="preferredAutoattachPodInterface")
    preferred_autoattach_serial_console: bool | None = Field(None, alias="preferredAutoattachSerialConsole")
    preferred_autoattach_input_device: bool | None = Field(None, alias="preferredAutoattachInputDevice")
    preferred_disable_hotplug: bool | None = Field(None, alias="preferredDisableHotplug")
    preferred_virtual_gpu_options: VGPUOptions | None = Field(None, alias="preferredVirtualGPUOptions")
    preferred_sound_model: str = Field("", alias="preferredSoundModel")
    preferred_use_virtio_transitional: bool | None = Field(None, alias="preferredUseVirtioTransitional")
    preferred_input_bus: str = Field("", alias="preferredInputBus")
    preferred_input_type: str = Field("", alias="preferredInputType")
    preferred_disk_bus: str = Field("", alias="preferredDiskBus")
    preferred_lun_bus: str = Field("", alias="preferredLunBus")
    preferred_cdrom_bus: str = Field("", alias="preferredCdromBus")
    preferred_disk_dedicated_io_thread: bool | None = Field(None, alias="preferredDiskDedicatedIoThread")
    preferred_disk_cache: str = Field("", alias="preferredDiskCache")
    preferred_disk_io: str = Field("", alias="preferredDiskIO")
    preferred_disk_block_size: BlockSize | None = Field(None, alias="preferredDiskBlockSize")
    preferred_interface_model: str = Field("", alias="preferredInterfaceModel")
    preferred_rng: Rng | None = Field(None, alias="preferredRng")
    preferred_block_multi_queue: bool | None = Field(None, alias="preferredBlockMultiQueue")
    preferred_network_interface_multi_queue: bool | None = Field(
        None, alias="preferredNetworkInterfaceMultiQueue"
    )
    preferred_tpm: TPMDevice | None = Field(None, alias="preferredTPM")
    preferred_interface_masquerade: InterfaceMasquerade | None = Field(
        None, alias="preferredInterfaceMasquerade"
    )
    preferred_panic_device_model: str | None = Field(None, alias="preferredPanicDeviceModel")
    preferred_video_type: str | None = Field(None, alias="preferredVideoType")


class FeaturePreferences(GoModel):
    preferred_acpi: FeatureState | None = Field(None, alias="preferredAcpi")
    preferred_apic: FeatureAPIC | None = Field(None, alias="preferredApic")
    preferred_hyperv: FeatureHyperv | None = Field(None, alias="preferredHyperv")
    preferred_kvm: FeatureKVM | None = Field(None, alias="preferredKvm")
    preferred_pvspinlock: FeatureState | None = Field(None, alias="preferredPvspinlock")
    preferred_smm: FeatureState | None = Field(None, alias="preferredSmm")


class FirmwarePreferences(GoModel):
    preferred_use_bios: bool | None = Field(None, alias="preferredUseBios")
    preferred_use_bios_serial: bool | None = Field(None, alias="preferredUseBiosSerial")
    # Deprecated in v1beta1 (DeprecatedPreferredUseEfi / ...SecureBoot); v1alpha values land here.
    preferred_use_efi: bool | None = Field(None, alias="preferredUseEfi")
    preferred_use_secure_boot: bool | None = Field(None, alias="preferredUseSecureBoot")
    preferred_efi: EFI | None = Field(None, alias="preferredEfi")


class MachinePreferences(GoModel):
    preferred_machine_type: str = Field("", alias="preferredMachineType")


class VolumePreferences(GoModel):
    preferred_storage_class_name: str = Field("", alias="preferredStorageClassName")


class CPUPreferenceRequirement(GoModel):
    _always: ClassVar[frozenset[str]] = frozenset({"guest"})

    guest: Uint32 = 0


class MemoryPreferenceRequirement(GoModel):
    _always: ClassVar[frozenset[str]] = frozenset({"guest"})

    guest: Quantity = "0"


class PreferenceRequirements(GoModel):
    cpu: CPUPreferenceRequirement | None = None
    memory: MemoryPreferenceRequirement | None = None
    architecture: str | None = None


class PreferenceSpec(GoModel):
    """``VirtualMachinePreferenceSpec``."""

    _go_name: ClassVar[str] = "VirtualMachinePreferenceSpec"

    clock: ClockPreferences | None = None
    cpu: CPUPreferences | None = None
    devices: DevicePreferences | None = None
    features: FeaturePreferences | None = None
    firmware: FirmwarePreferences | None = None
    machine: MachinePreferences | None = None
    volumes: VolumePreferences | None = None
    preferred_subdomain: str | None = Field(None, alias="preferredSubdomain")
    preferred_termination_grace_period_seconds: Int64 | None = Field(
        None, alias="preferredTerminationGracePeriodSeconds"
    )
    requirements: PreferenceRequirements | None = None
    annotations: StringMap | None = None
    prefer_spread_socket_to_core_ratio: Uint32 = Field(0, alias="preferSpreadSocketToCoreRatio")
    preferred_architecture: str | None = Field(None, alias="preferredArchitecture")
    preferred_launch_security: LaunchSecurity | None = Field(None, alias="preferredLaunchSecurity")
