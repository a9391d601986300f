"""The generated defaults virt-api's VMI webhook applies, and the Hyper-V feature dependencies.

Mirrors ``SetObjectDefaults_VirtualMachineInstance`` (``kubevirt.io/api/core/v1/zz_generated.defaults.go``)
with the ``SetDefaults_*`` functions of ``kubevirt.io/api/core/v1/defaults.go`` it calls (an empty
``firmware`` and ``features``, ACPI and every feature state given without ``enabled`` enabled, Hyper-V
spinlocks' retries, clock timers ``present``, a disk without a device type a ``disk``, CD-ROMs read-only
with their tray closed, inputs on USB as tablets, probes' thresholds), and ``SetHypervFeatureDependencies``
(``pkg/defaults/hyperv.go``: the features an enabled Hyper-V feature needs, enabled where not set; EVMCS
asks for the ``vmx`` CPU feature). ``SetDefaults_Firmware``'s UUID is not drawn: a VM's VMI has the one the
VM controller set; for a VMI created without one, virt-api draws a random one (``uuid.NewString``), which
no renderer can know.

A member holding JSON ``null`` is Go's nil pointer: treated as absent.
"""

from __future__ import annotations

from typing import Any

from apiserver.render.golang.tree import child

JSON = dict[str, Any]

_TIMERS = ("hpet", "kvm", "pit", "rtc", "hyperv")
_HYPERV_STATES = (
    "relaxed",
    "vapic",
    "spinlocks",
    "vpindex",
    "runtime",
    "synic",
    "synictimer",
    "reset",
    "vendorid",
    "frequencies",
    "reenlightenment",
    "tlbflush",
    "ipi",
    "evmcs",
)
SPINLOCK_RETRIES = 4096
VMX_FEATURE = "vmx"
REQUIRE_POLICY = "require"


def _enable(state: JSON, key: str = "enabled") -> None:
    """``SetDefaults_FeatureState`` (and the timers' and the others' alike): nil ``enabled`` is true."""
    if state.get(key) is None:
        state[key] = True


def _present(parent: JSON, key: str) -> JSON | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _set_defaults_probe(probe: JSON | None) -> None:
    """``SetDefaults_Probe``."""
    if probe is None:
        return
    for key, default in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if int(probe.get(key) or 0) < 1:
            probe[key] = default


def _set_defaults_disk_device(disk: JSON) -> None:
    """``SetDefaults_DiskDevice``: a disk without ``disk``, ``cdrom`` or ``lun`` is a ``disk``."""
    if disk.get("disk") is None and disk.get("cdrom") is None and disk.get("lun") is None:
        disk["disk"] = {}


def _features(features: JSON) -> None:
    _enable(child(features, "acpi"))
    apic = _present(features, "apic")
    if apic is not None:
        _enable(apic)
    hyperv = _present(features, "hyperv")
    if hyperv is not None:
        for name in _HYPERV_STATES:
            state = _present(hyperv, name)
            if state is None:
                continue
            _enable(state)
            if name == "spinlocks" and state["enabled"] is True and state.get("spinlocks") is None:
                state["spinlocks"] = SPINLOCK_RETRIES
            if name in ("synictimer", "tlbflush"):
                for inner in ("direct", "extended") if name == "tlbflush" else ("direct",):
                    sub = _present(state, inner)
                    if sub is not None:
                        _enable(sub)
    for name in ("smm", "pvspinlock"):
        state = _present(features, name)
        if state is not None:
            _enable(state)


def set_object_defaults(vmi: JSON) -> None:
    """``SetObjectDefaults_VirtualMachineInstance`` (``SetDefaults_VirtualMachineInstance`` first)."""
    spec = vmi["spec"]
    domain = child(spec, "domain")
    child(domain, "firmware")
    features = child(domain, "features")
    devices = child(domain, "devices")
    for disk in devices.get("disks") or ():
        _set_defaults_disk_device(disk)
    for device in devices.get("inputs") or ():
        if not device.get("bus"):
            device["bus"] = "usb"
        if not device.get("type"):
            device["type"] = "tablet"
    _set_defaults_probe(_present(spec, "readinessProbe"))
    _set_defaults_probe(_present(spec, "livenessProbe"))
    timer = _present(_present(domain, "clock") or {}, "timer")
    if timer is not None:
        for name in _TIMERS:
            state = _present(timer, name)
            if state is not None:
                _enable(state, "present")
    _features(features)
    for disk in devices.get("disks") or ():
        cdrom = _present(disk, "cdrom")
        if cdrom is not None:
            if cdrom.get("readonly") is None:
                cdrom["readonly"] = True
            if not cdrom.get("tray"):
                cdrom["tray"] = "closed"
        match_volume = _present(_present(disk, "blockSize") or {}, "matchVolume")
        if match_volume is not None:
            _enable(match_volume)
    for gpu in devices.get("gpus") or ():
        ramfb = _present(_present(_present(gpu, "virtualGPUOptions") or {}, "display") or {}, "ramFB")
        if ramfb is not None:
            _enable(ramfb)


def _missing(state: JSON | None) -> bool:
    return state is None or state.get("enabled") is None


def _enabled(state: JSON | None) -> bool:
    return not _missing(state) and state is not None and state.get("enabled") is True


class _Disabled(Exception):
    """A requirement is explicitly disabled: the validating webhook refuses it later."""


def _require(hyperv: JSON, state: JSON | None, needed: str) -> None:
    """``HypervFeature.TryToSetRequirement`` where ``state`` is the feature's and ``needed`` names the
    Hyper-V feature it requires (enabled where missing)."""
    if not _enabled(state):
        return
    required = _present(hyperv, needed)
    if _missing(required):
        if required is None:
            hyperv[needed] = required = {}
        required["enabled"] = True
        return
    if _enabled(required):
        return
    raise _Disabled(needed)


def set_hyperv_feature_dependencies(spec: JSON) -> None:
    """``setDefaultHypervFeatureDependencies``: leaves first (evmcs, ipi, tlbflush, synictimer, then
    synic); the first explicitly disabled requirement stops it, what was set before kept."""
    hyperv = _present(_present(_present(spec, "domain") or {}, "features") or {}, "hyperv")
    if hyperv is None:
        return
    # synictimer and tlbflush are judged on a copy of their own state (only ``enabled``).
    synictimer = _present(hyperv, "synictimer")
    tlbflush = _present(hyperv, "tlbflush")
    try:
        _require(hyperv, _present(hyperv, "evmcs"), "vapic")
        _require(hyperv, _present(hyperv, "ipi"), "vpindex")
        _require(hyperv, {"enabled": tlbflush.get("enabled")} if tlbflush is not None else None, "vpindex")
        _require(hyperv, {"enabled": synictimer.get("enabled") if synictimer is not None else None}, "synic")
        _require(hyperv, _present(hyperv, "synic"), "vpindex")
    except _Disabled:
        return
    evmcs = _present(hyperv, "evmcs")
    if evmcs is not None and evmcs.get("enabled") in (None, True):
        _set_evmcs_dependency(spec)


def _set_evmcs_dependency(spec: JSON) -> None:
    """``setEVMCSDependency``: the ``vmx`` CPU feature, with the ``require`` policy."""
    cpu = child(spec["domain"], "cpu")
    features = cpu.get("features") or []
    if not features:
        cpu["features"] = [{"name": VMX_FEATURE, "policy": REQUIRE_POLICY}]
        return
    for feature in features:
        if feature.get("name") == VMX_FEATURE:
            if feature.get("policy") != REQUIRE_POLICY:
                feature["policy"] = REQUIRE_POLICY
            return
    cpu["features"] = [*features, {"name": VMX_FEATURE, "policy": REQUIRE_POLICY}]
