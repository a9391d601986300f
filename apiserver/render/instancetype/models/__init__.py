"""Typed instance type and preference specs, for every API version KubeVirt has had.

Conventions (the renderer relies on them):

* Attribute names are the JSON member names in snake_case (``dedicatedCPUPlacement`` →
  ``dedicated_cpu_placement``, ``preferredCPUTopology`` → ``preferred_cpu_topology``); each field's
  ``alias`` is the exact JSON name. Models accept either (``populate_by_name``) and dump by alias.
* ``None`` means absent: a nil Go pointer, map or slice. A present empty map or list (``nodeSelector:
  {}``) is not ``None``, so ``spec.node_selector is not None`` is Go's ``NodeSelector != nil``.
* Plain (non-pointer) Go strings, integers and booleans default to ``""``, ``0`` and ``False``;
  absent and zero are the same thing there, as in Go.
* Members that hold KubeVirt core types copied verbatim into the VM (``cpu.numa``, ``gpus``,
  ``preferredTPM``, ``preferredHyperv``, ...) are plain dicts/lists exactly as Go's decode leaves
  them: unknown members dropped, quantities canonical. Quantity-typed fields hold canonical strings.
* Models are frozen: one decoded spec may be shared between renders.

:mod:`.v1beta1` holds the working types; :mod:`.v1alpha` the older shapes with their conversions;
:mod:`.plain` the v1beta1 dicts the renderer reads, written without pydantic. The names below are
imported when first asked for, so that importing a pydantic-free module of this package (``.plain``,
``._json``, ``.scheme``) does not build the models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from apiserver.render.instancetype.models.v1beta1 import (
        ClockPreferences,
        CPUInstancetype,
        CPUPreferenceRequirement,
        CPUPreferences,
        DevicePreferences,
        FeaturePreferences,
        FirmwarePreferences,
        InstancetypeSpec,
        MachinePreferences,
        MemoryInstancetype,
        MemoryPreferenceRequirement,
        PreferenceRequirements,
        PreferenceSpec,
        SpreadOptions,
        VolumePreferences,
    )

__all__ = [
    "CPUInstancetype",
    "CPUPreferenceRequirement",
    "CPUPreferences",
    "ClockPreferences",
    "DevicePreferences",
    "FeaturePreferences",
    "FirmwarePreferences",
    "InstancetypeSpec",
    "MachinePreferences",
    "MemoryInstancetype",
    "MemoryPreferenceRequirement",
    "PreferenceRequirements",
    "PreferenceSpec",
    "SpreadOptions",
    "VolumePreferences",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from apiserver.render.instancetype.models import v1beta1

        return getattr(v1beta1, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
