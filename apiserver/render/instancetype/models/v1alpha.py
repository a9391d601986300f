"""The spec shapes before v1beta1, and their conversion to v1beta1 as KubeVirt v1.6 converted them.

* ``instancetype.kubevirt.io/v1alpha1`` (v0.56, v0.57) and ``v1alpha2`` (v0.58, v0.59; adds the
  preference ``volumes``). The v1alpha1 specs are also what the base64 SpecRevision wrappers hold.
* ``flavor.kubevirt.io/v1alpha1`` as of v0.55 (the pre-rename instance types): the same as v1alpha1
  except that ``memory.guest`` is optional and devices lack ``preferredAutoattachInputDevice``.

Conversion rules (``Convert_v1alpha{1,2}_*_To_v1beta1_*``): the plain ``cpu.model``,
``cpu.dedicatedCPUPlacement`` and ``cpu.isolateEmulatorThread`` become pointers that are always set
(``""``/``false``/``false`` when they were unset), ``preferredCPUTopology`` becomes a pointer only
when non-empty, ``preferredUseEfi``/``preferredUseSecureBoot`` go to v1beta1's deprecated fields of
the same JSON names, and everything else is copied field for field, nil stays nil.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from apiserver.render.instancetype.models import v1beta1 as b
from apiserver.render.instancetype.models._base import (
    NUMA,
    BlockSize,
    ClockOffset,
    FeatureAPIC,
    FeatureHyperv,
    FeatureKVM,
    FeatureState,
    GoModel,
    GPUs,
    HostDevices,
    Hugepages,
    IOThreadsPolicy,
    LaunchSecurity,
    Quantity,
    Realtime,
    Rng,
    Timer,
    TPMDevice,
    Uint32,
    VGPUOptions,
)

# --- instance type -------------------------------------------------------------------------------


class CPUInstancetype(GoModel):
    guest: Uint32 = 0
    model: str = ""
    dedicated_cpu_placement: bool = Field(False, alias="dedicatedCPUPlacement")
    numa: NUMA | None = None
    isolate_emulator_thread: bool = Field(False, alias="isolateEmulatorThread")
    realtime: Realtime | None = None

    def to_v1beta1(self) -> b.CPUInstancetype:
        return b.CPUInstancetype(
            guest=self.guest,
            model=self.model,
            dedicated_cpu_placement=self.dedicated_cpu_placement,
            numa=self.numa,
            isolate_emulator_thread=self.isolate_emulator_thread,
            realtime=self.realtime,
        )


class MemoryInstancetype(GoModel):
    guest: Quantity = "0"
    hugepages: Hugepages | None = None

    def to_v1beta1(self) -> b.MemoryInstancetype:
        return b.MemoryInstancetype(guest=self.guest, hugepages=self.hugepages)


class InstancetypeSpec(GoModel):
    """v1alpha1/v1alpha2 ``VirtualMachineInstancetypeSpec`` (identical in both versions)."""

    _go_name: ClassVar[str] = "VirtualMachineInstancetypeSpec"

    cpu: CPUInstancetype = CPUInstancetype()
    memory: MemoryInstancetype = MemoryInstancetype()
    gpus: GPUs | None = None
    host_devices: HostDevices | None = Field(None, alias="hostDevices")
    io_threads_policy: IOThreadsPolicy | None = Field(None, alias="ioThreadsPolicy")
    launch_security: LaunchSecurity | None = Field(None, alias="launchSecurity")

    def to_v1beta1(self) -> b.InstancetypeSpec:
        return b.InstancetypeSpec(
            cpu=self.cpu.to_v1beta1(),
            memory=self.memory.to_v1beta1(),
            gpus=self.gpus,
            host_devices=self.host_devices,
            io_threads_policy=self.io_threads_policy,
            launch_security=self.launch_security,
        )


class FlavorMemory(GoModel):
    """v0.55 ``MemoryFlavor``: ``guest`` was a pointer; unset it converts to the zero quantity."""

    _go_name: ClassVar[str] = "MemoryFlavor"

    guest: Quantity | None = None
    hugepages: Hugepages | None = None

    def to_v1beta1(self) -> b.MemoryInstancetype:
        return b.MemoryInstancetype(guest=self.guest or "0", hugepages=self.hugepages)


class FlavorSpec(InstancetypeSpec):
    """``flavor.kubevirt.io/v1alpha1`` ``VirtualMachineFlavorSpec`` (v0.53 to v0.55)."""

    _go_name: ClassVar[str] = "VirtualMachineFlavorSpec"

    memory: FlavorMemory = FlavorMemory()  # type: ignore[assignment]


# --- preference ----------------------------------------------------------------------------------


class ClockPreferences(GoModel):
    preferred_clock_offset: ClockOffset | None = Field(None, alias="preferredClockOffset")
    preferred_timer: Timer | None = Field(None, alias="preferredTimer")

    def to_v1beta1(self) -> b.ClockPreferences:
        return b.ClockPreferences(
            preferred_clock_offset=self.preferred_clock_offset, preferred_timer=self.preferred_timer
        )


class CPUPreferences(GoModel):
    preferred_cpu_topology: str = Field("", alias="preferredCPUTopology")

    def to_v1beta1(self) -> b.CPUPreferences:
        return b.CPUPreferences(preferred_cpu_topology=self.preferred_cpu_topology or None)


class FlavorDevicePreferences(GoModel):
    """v0.55's device preferences; v1alpha1 later added ``preferredAutoattachInputDevice``."""

    _go_name: ClassVar[str] = "DevicePreferences"

    preferred_autoattach_graphics_device: bool | None = Field(None, alias="preferredAutoattachGraphicsDevice")
    preferred_autoattach_mem_balloon: bool | None = Field(None, alias="preferredAutoattachMemBalloon")
    preferred_autoattach_pod_interface: bool | None = Field(None, alias="preferredAutoattachPodInterface")
    preferred_autoattach_serial_console: bool | None = Field(None, alias="preferredAutoattachSerialConsole")
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

    def to_v1beta1(self) -> b.DevicePreferences:
        # Same attribute names on both sides: a field-for-field copy, nil staying nil.
        return b.DevicePreferences.model_validate(dict(self), context=_ATTRS)


class DevicePreferences(FlavorDevicePreferences):
    preferred_autoattach_input_device: bool | None = Field(None, alias="preferredAutoattachInputDevice")


class FeaturePreferences(GoModel):
    preferred_acpi: FeatureState | None = Field(None, alias="preferredAcpi")
    preferred_apic: FeatureAPIC | None = Field(None, alias="preferredApic")
    preferred_hyperv: FeatureHyperv | None = Field(None, alias="preferredHyperv")
    preferred_kvm: FeatureKVM | None = Field(None, alias="preferredKvm")
    preferred_pvspinlock: FeatureState | None = Field(None, alias="preferredPvspinlock")
    preferred_smm: FeatureState | None = Field(None, alias="preferredSmm")

    def to_v1beta1(self) -> b.FeaturePreferences:
        return b.FeaturePreferences.model_validate(dict(self), context=_ATTRS)


class FirmwarePreferences(GoModel):
    preferred_use_bios: bool | None = Field(None, alias="preferredUseBios")
    preferred_use_bios_serial: bool | None = Field(None, alias="preferredUseBiosSerial")
    preferred_use_efi: bool | None = Field(None, alias="preferredUseEfi")
    preferred_use_secure_boot: bool | None = Field(None, alias="preferredUseSecureBoot")

    def to_v1beta1(self) -> b.FirmwarePreferences:
        return b.FirmwarePreferences(
            preferred_use_bios=self.preferred_use_bios,
            preferred_use_bios_serial=self.preferred_use_bios_serial,
            preferred_use_efi=self.preferred_use_efi,
            preferred_use_secure_boot=self.preferred_use_secure_boot,
        )


class MachinePreferences(GoModel):
    preferred_machine_type: str = Field("", alias="preferredMachineType")

    def to_v1beta1(self) -> b.MachinePreferences:
        return b.MachinePreferences(preferred_machine_type=self.preferred_machine_type)


class VolumePreferences(GoModel):
    preferred_storage_class_name: str = Field("", alias="preferredStorageClassName")

    def to_v1beta1(self) -> b.VolumePreferences:
        return b.VolumePreferences(preferred_storage_class_name=self.preferred_storage_class_name)


class PreferenceSpec(GoModel):
    """v1alpha1 ``VirtualMachinePreferenceSpec`` (what a preference SpecRevision wrapper holds)."""

    _go_name: ClassVar[str] = "VirtualMachinePreferenceSpec"

    clock: ClockPreferences | None = None
    cpu: CPUPreferences | None = None
    devices: DevicePreferences | None = None
    features: FeaturePreferences | None = None
    firmware: FirmwarePreferences | None = None
    machine: MachinePreferences | None = None

    def to_v1beta1(self) -> b.PreferenceSpec:
        return b.PreferenceSpec(
            clock=self.clock.to_v1beta1() if self.clock else None,
            cpu=self.cpu.to_v1beta1() if self.cpu else None,
            devices=self.devices.to_v1beta1() if self.devices else None,
            features=self.features.to_v1beta1() if self.features else None,
            firmware=self.firmware.to_v1beta1() if self.firmware else None,
            machine=self.machine.to_v1beta1() if self.machine else None,
        )


class PreferenceSpecV1alpha2(PreferenceSpec):
    """v1alpha2 ``VirtualMachinePreferenceSpec``: v1alpha1 plus ``volumes``."""

    volumes: VolumePreferences | None = None

    def to_v1beta1(self) -> b.PreferenceSpec:
        spec = super().to_v1beta1()
        if self.volumes is None:
            return spec
        return spec.model_copy(update={"volumes": self.volumes.to_v1beta1()})


class FlavorPreferenceSpec(PreferenceSpec):
    """``flavor.kubevirt.io/v1alpha1`` ``VirtualMachinePreferenceSpec`` (v0.55)."""

    devices: FlavorDevicePreferences | None = None  # type: ignore[assignment]


# Validating a dict keyed by attribute names (a same-named copy): already-decoded values, no checks.
_ATTRS = {"clean": True}
