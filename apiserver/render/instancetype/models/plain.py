"""The v1beta1 specs as the renderer reads them, made without pydantic.

The renderer reads a spec as JSON-named dicts: what ``model_dump(by_alias=True, exclude_none=True)`` of
the :mod:`.v1beta1` model writes for a spec :func:`apiserver.render.golang.gojson.decode` has already
decoded (types right, quantities canonical; the ``CLEAN`` context re-checks nothing). This module writes
the same dicts from :data:`FIELDS`, each model's members in order, so that a command line run on current
objects never imports pydantic nor builds the models: they were half of its start-up
(docs/performance.md). ``tests/render/instancetype/test_plain.py`` checks :data:`FIELDS` against the
models and the dicts against their dumps; anything this module does not know is left to the models
(:func:`spec_dict` answers ``None``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FIELDS", "spec_dict"]

# Per model: (JSON name, the model it holds or None, the Go zero value written when absent or None
# when absent means left out). ``{}`` as the zero value of a model member is that model's own zeros.
FIELDS: dict[str, tuple[tuple[str, str | None, Any], ...]] = {
    "InstancetypeSpec": (
        ("nodeSelector", None, None),
        ("schedulerName", None, ""),
        ("cpu", "CPUInstancetype", {}),
        ("memory", "MemoryInstancetype", {}),
        ("gpus", None, None),
        ("hostDevices", None, None),
        ("ioThreadsPolicy", None, None),
        ("ioThreads", None, None),
        ("launchSecurity", None, None),
        ("annotations", None, None),
    ),
    "CPUInstancetype": (
        ("guest", None, 0),
        ("model", None, None),
        ("dedicatedCPUPlacement", None, None),
        ("numa", None, None),
        ("isolateEmulatorThread", None, None),
        ("realtime", None, None),
        ("maxSockets", None, None),
    ),
    "MemoryInstancetype": (
        ("guest", None, "0"),
        ("hugepages", None, None),
        ("overcommitPercent", None, 0),
        ("maxGuest", None, None),
    ),
    "PreferenceSpec": (
        ("clock", "ClockPreferences", None),
        ("cpu", "CPUPreferences", None),
        ("devices", "DevicePreferences", None),
        ("features", "FeaturePreferences", None),
        ("firmware", "FirmwarePreferences", None),
        ("machine", "MachinePreferences", None),
        ("volumes", "VolumePreferences", None),
        ("preferredSubdomain", None, None),
        ("preferredTerminationGracePeriodSeconds", None, None),
        ("requirements", "PreferenceRequirements", None),
        ("annotations", None, None),
        ("preferSpreadSocketToCoreRatio", None, 0),
        ("preferredArchitecture", None, None),
        ("preferredLaunchSecurity", None, None),
    ),
    "ClockPreferences": (
        ("preferredClockOffset", None, None),
        ("preferredTimer", None, None),
    ),
    "CPUPreferences": (
        ("preferredCPUTopology", None, None),
        ("spreadOptions", "SpreadOptions", None),
        ("preferredCPUFeatures", None, None),
    ),
    "SpreadOptions": (
        ("across", None, None),
        ("ratio", None, None),
    ),
    "DevicePreferences": (
        ("preferredAutoattachGraphicsDevice", None, None),
        ("preferredAutoattachMemBalloon", None, None),
        ("preferredAutoattachPodInterface", None, None),
        ("preferredAutoattachSerialConsole", None, None),
        ("preferredAutoattachInputDevice", None, None),
        ("preferredDisableHotplug", None, None),
        ("preferredVirtualGPUOptions", None, None),
        ("preferredSoundModel", None, ""),
        ("preferredUseVirtioTransitional", None, None),
        ("preferredInputBus", None, ""),
        ("preferredInputType", None, ""),
        ("preferredDiskBus", None, ""),
        ("preferredLunBus", None, ""),
        ("preferredCdromBus", None, ""),
        ("preferredDiskDedicatedIoThread", None, None),
        ("preferredDiskCache", None, ""),
        ("preferredDiskIO", None, ""),
        ("preferredDiskBlockSize", None, None),
        ("preferredInterfaceModel", None, ""),
        ("preferredRng", None, None),
        ("preferredBlockMultiQueue", None, None),
        ("preferredNetworkInterfaceMultiQueue", None, None),
        ("preferredTPM", None, None),
        ("preferredInterfaceMasquerade", None, None),
        ("preferredPanicDeviceModel", None, None),
        ("preferredVideoType", None, None),
    ),
    "FeaturePreferences": (
        ("preferredAcpi", None, None),
        ("preferredApic", None, None),
        ("preferredHyperv", None, None),
        ("preferredKvm", None, None),
        ("preferredPvspinlock", None, None),
        ("preferredSmm", None, None),
    ),
    "FirmwarePreferences": (
        ("preferredUseBios", None, None),
        ("preferredUseBiosSerial", None, None),
        ("preferredUseEfi", None, None),
        ("preferredUseSecureBoot", None, None),
        ("preferredEfi", None, None),
    ),
    "MachinePreferences": (("preferredMachineType", None, ""),),
    "VolumePreferences": (("preferredStorageClassName", None, ""),),
    "PreferenceRequirements": (
        ("cpu", "CPUPreferenceRequirement", None),
        ("memory", "MemoryPreferenceRequirement", None),
        ("architecture", None, None),
    ),
    "CPUPreferenceRequirement": (("guest", None, 0),),
    "MemoryPreferenceRequirement": (("guest", None, "0"),),
}


def spec_dict(model: str, clean: Any) -> dict[str, Any] | None:
    """The model's dump of ``clean`` (a gojson-decoded spec), or ``None`` when only the model can tell
    (a value this module does not expect: the caller then validates with the model)."""
    if not isinstance(clean, Mapping):
        return None
    out: dict[str, Any] = {}
    for name, nested, zero in FIELDS[model]:
        value = clean.get(name)
        if value is None:
            if zero is None:
                continue
            if name in clean:  # null where Go has a plain value: the model refuses it
                return None
            value = zero
        if nested is not None:
            dumped = spec_dict(nested, value)
            if dumped is None:
                return None
            out[name] = dumped
        else:
            out[name] = _copy(value)
    return out


def _copy(value: Any) -> Any:
    """A fresh copy of a JSON value, as the model's dump gives (the caller may keep it)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
