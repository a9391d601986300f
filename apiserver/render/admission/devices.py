"""Device and domain-option rules (``vmi-create-admitter.go``: ``validateInputDevices``,
``validateIOThreadsPolicy``, ``validateStartStrategy``, ``validateLiveMigration``, ``validateMDEVRamFB``,
``validateHostDevicesWithPassthroughEnabled``, ``validateSoundDevices``, ``validateVSOCK``,
``validatePersistentReservation``, ``validateDownwardMetrics``, ``validateVideoConfig``,
``validatePanicDevices``, ``validateRebootPolicy``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import Causes, KubeVirtPanic, has, invalid, items, obj, text
from apiserver.render.admission.clusterconfig import AdmissionConfig

_IOTHREADS_POLICIES = ("shared", "auto", "supplementalPool")
_EVICTION_STRATEGIES = ("LiveMigrate", "LiveMigrateIfPossible", "None", "External")
_PANIC_MODELS = ("hyperv", "isa", "pvpanic")


def _devices(spec: Mapping[str, Any]) -> dict[str, Any]:
    return obj(spec, "domain", "devices") or {}


def validate_inputs(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateInputDevices``."""
    causes: Causes = []
    for idx, device in enumerate(items(_devices(spec), "inputs")):
        path = f"{field}.domain.devices.inputs[{idx}]"
        if text(device, "bus") not in ("virtio", "usb", ""):
            causes.append(invalid(f"{path}.bus", "Input device can have only virtio or usb bus."))
        if text(device, "type") != "tablet":
            causes.append(invalid(f"{path}.type", "Input device can have only tablet type."))
    return causes


def validate_iothreads_policy(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateIOThreadsPolicy``."""
    domain = obj(spec, "domain") or {}
    policy = domain.get("ioThreadsPolicy")
    if policy is None:
        return []
    causes: Causes = []
    if policy not in _IOTHREADS_POLICIES:
        causes.append(invalid(f"{field}.domain.ioThreadsPolicy", f"Invalid IOThreadsPolicy ({policy})"))
    count = (obj(domain, "ioThreads") or {}).get("supplementalPoolThreadCount")
    if policy == "supplementalPool" and (count is None or count < 1):
        causes.append(
            invalid(
                f"{field}.domain.ioThreads.count",
                "the number of iothreads needs to be set and positive for the dedicated policy",
            )
        )
    return causes


def validate_start_strategy(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateStartStrategy``."""
    strategy = spec.get("startStrategy")
    if strategy is None:
        return []
    path = f"{field}.startStrategy"
    if strategy != "Paused":
        return [invalid(path, f"{path} is set with an unrecognized option: {strategy}")]
    if spec.get("livenessProbe") is not None:
        return [
            invalid(
                path,
                f"either {path} or {field}.livenessProbe should be provided.Pausing VMI with LivenessProbe is not supported",
            )
        ]
    return []


def validate_live_migration(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateLiveMigration``: the eviction strategy (the VM's, else the cluster's) must be known."""
    strategy = spec.get("evictionStrategy")
    effective = strategy if strategy is not None else config.render.eviction_strategy
    if effective is None or effective in _EVICTION_STRATEGIES:
        return []
    if strategy is None:  # KubeVirt prints the VM's own (nil) value here and panics
        raise KubeVirtPanic("invalid memory address or nil pointer dereference")
    path = f"{field}.evictionStrategy"
    return [invalid(path, f"{path} is set with an unrecognized option: {strategy}")]


def _ramfb_displays(spec: Mapping[str, Any]) -> int:
    """``countConfiguredMDEVRamFBs``: an unset ``enabled`` counts as enabled."""
    count = 0
    for gpu in items(_devices(spec), "gpus"):
        display = obj(gpu, "virtualGPUOptions", "display")
        if display is None or display.get("enabled") is False:
            continue
        ramfb = obj(display, "ramFB")
        if ramfb is None or ramfb.get("enabled") is None or ramfb["enabled"]:
            count += 1
    return count


def validate_mdev_ramfb(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateMDEVRamFB`` (its message ends in a space, as KubeVirt's does)."""
    if _ramfb_displays(spec) > 1:
        return [invalid(f"{field}.GPUs", "configuring multiple displays with ramfb is not valid ")]
    return []


def validate_host_devices_gate(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateHostDevicesWithPassthroughEnabled``."""
    if _devices(spec).get("hostDevices") is not None and not config.enabled(fg.HOST_DEVICES):
        return [
            invalid(f"{field}.HostDevices", "Host Devices feature gate is not enabled in kubevirt-config")
        ]
    return []


def validate_sound(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateSoundDevices``."""
    sound = obj(_devices(spec), "sound")
    if sound is None:
        return []
    causes: Causes = []
    if text(sound, "model") not in ("", "ich9", "ac97"):
        causes.append(
            invalid(f"{field}.Sound", "Sound device type is not supported. Options: 'ich9' or 'ac97'")
        )
    if not text(sound, "name"):
        causes.append(invalid(f"{field}.Sound", "Sound device requires a name field."))
    return causes


def validate_vsock(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateVSOCK``."""
    if _devices(spec).get("autoattachVSOCK") and not config.enabled(fg.VSOCK):
        return [
            invalid(
                f"{field}.domain.devices.autoattachVSOCK",
                "VSOCK feature gate is not enabled in kubevirt-config",
            )
        ]
    return []


def validate_persistent_reservation(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validatePersistentReservation``."""
    used = any(has(d, "lun") and d["lun"].get("reservation") for d in items(_devices(spec), "disks"))
    if used and not config.persistent_reservation():
        return [
            invalid(
                f"{field}.domain.devices.disks.luns.reservation",
                "persistent reservation is not enabled in kubevirt config",
            )
        ]
    return []


def validate_downward_metrics(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateDownwardMetrics``: the virtio-serial device needs its gate."""
    if _devices(spec).get("downwardMetrics") is not None and not config.enabled(fg.DOWNWARD_METRICS):
        return [
            invalid(
                f"{field}.domain.devices.downwardMetrics",
                "downwardMetrics virtio serial is not allowed: DownwardMetrics feature gate is not enabled",
            )
        ]
    return []


def validate_video(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateVideoConfig``."""
    devices = _devices(spec)
    if devices.get("video") is None:
        return []
    if devices.get("autoattachGraphicsDevice") is False:
        return [
            invalid(
                f"{field}.video",
                "Video configuration is not allowed when autoattachGraphicsDevice is set to false",
            )
        ]
    return []


def validate_panic_devices(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validatePanicDevices``."""
    devices = items(_devices(spec), "panicDevices")
    if not devices:
        return []
    causes: Causes = []
    arch = text(spec, "architecture") or config.default_architecture
    if arch == "s390x":
        causes.append(
            invalid(
                f"{field}.domain.devices.panicDevices",
                f"custom panic devices are not supported on {arch} architecture",
            )
        )
    for idx, device in enumerate(devices):
        model = device.get("model")
        if model is not None and model not in _PANIC_MODELS:
            causes.append(
                invalid(
                    f"{field}.domain.devices.panicDevices[{idx}].model", f"invalid PanicDeviceModel({model})"
                )
            )
    return causes


def validate_reboot_policy(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateRebootPolicy``."""
    if (obj(spec, "domain") or {}).get("rebootPolicy") is not None and not config.enabled(fg.REBOOT_POLICY):
        return [
            invalid(
                f"{field}.domain.rebootPolicy",
                "RebootPolicy is specified but the RebootPolicy feature gate is not enabled",
            )
        ]
    return []
