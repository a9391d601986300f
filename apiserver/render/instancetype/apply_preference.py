"""Applying a preference to a VM template (KubeVirt ``pkg/instancetype/preference/apply``).

Preferences fill gaps only, with KubeVirt's documented exceptions (``preferredAcpi`` and
``preferredDisableHotplug`` always overwrite). Order: cpu features, devices, features, firmware,
machine, clock, subdomain, termination grace period, architecture, annotations, launch security.

Values taken from the preference are placed into the template without copying: the spec may be a
cached one shared between requests, so nothing here (or later in the pipeline) mutates a value it took
from a spec, and the final ``gojson.encode`` builds fresh containers for the whole result.
"""

from __future__ import annotations

from typing import Any

from apiserver.render.golang.tree import child
from apiserver.render.kubernetes.errors import Cause, ExpandError

JSON = dict[str, Any]

_AUTOATTACH = (
    ("preferredAutoattachGraphicsDevice", "autoattachGraphicsDevice"),
    ("preferredAutoattachMemBalloon", "autoattachMemBalloon"),
    ("preferredAutoattachPodInterface", "autoattachPodInterface"),
    ("preferredAutoattachSerialConsole", "autoattachSerialConsole"),
    ("preferredAutoattachInputDevice", "autoattachInputDevice"),
)
_DEVICE_FLAGS = (
    ("preferredUseVirtioTransitional", "useVirtioTransitional"),
    ("preferredBlockMultiQueue", "blockMultiQueue"),
    ("preferredNetworkInterfaceMultiQueue", "networkInterfaceMultiqueue"),
)
# Preference -> devices member, set only when the VM leaves the member unset.
_FILL_IF_ABSENT: dict[str, str] = dict(
    (*_DEVICE_FLAGS, ("preferredRng", "rng"), ("preferredTPM", "tpm"), *_AUTOATTACH)
)
_HYPERV = frozenset(
    (
        "evmcs",
        "frequencies",
        "ipi",
        "reenlightenment",
        "relaxed",
        "reset",
        "runtime",
        "spinlocks",
        "synic",
        "synictimer",
        "tlbflush",
        "vapic",
        "vpindex",
        "vendorid",
    )
)
_SIMPLE_FEATURES = (("preferredKvm", "kvm"), ("preferredPvspinlock", "pvspinlock"), ("preferredSmm", "smm"))
_BINDING_METHODS = ("bridge", "slirp", "masquerade", "sriov", "macvtap", "passt", "passtBinding")


def apply_preference(preference: JSON, tspec: JSON, tmeta: JSON) -> None:
    domain = child(tspec, "domain")
    _cpu_features(preference, domain)
    _devices(preference, tspec, domain)
    _features(preference, domain)
    _firmware(preference, domain)
    _machine(preference, domain)
    _clock(preference, domain)
    subdomain = preference.get("preferredSubdomain")
    if not tspec.get("subdomain") and subdomain is not None:
        tspec["subdomain"] = subdomain
    grace = preference.get("preferredTerminationGracePeriodSeconds")
    if grace is not None and tspec.get("terminationGracePeriodSeconds") is None:
        tspec["terminationGracePeriodSeconds"] = grace
    arch = preference.get("preferredArchitecture")
    if arch and not tspec.get("architecture"):
        tspec["architecture"] = arch
    pref_annotations = preference.get("annotations")
    if pref_annotations:  # an empty map is not written, so none is created for nothing
        annotations = child(tmeta, "annotations")
        for key, value in pref_annotations.items():
            annotations.setdefault(key, value)
    launch = preference.get("preferredLaunchSecurity")
    if launch is not None and domain.get("launchSecurity") is None:
        domain["launchSecurity"] = launch


def _cpu_features(preference: JSON, domain: JSON) -> None:
    wanted = (preference.get("cpu") or {}).get("preferredCPUFeatures")
    if not wanted:
        return
    cpu = domain.get("cpu")
    if cpu is None:
        # KubeVirt dereferences a nil domain.cpu here and panics; we refuse the input cleanly.
        message = (
            "preference cpu.preferredCPUFeatures needs spec.template.spec.domain.cpu in a VM without an "
            "instancetype (KubeVirt panics: invalid memory address or nil pointer dereference)"
        )
        raise ExpandError.invalid(message, Cause("spec.template.spec.domain.cpu", message))
    features = cpu.get("features") or []
    names = {f.get("name", "") for f in features}
    added = [f for f in wanted if f.get("name", "") not in names]
    if added:
        cpu["features"] = [*features, *added]


def _devices(preference: JSON, tspec: JSON, domain: JSON) -> None:
    prefs = preference.get("devices")
    if prefs is None:
        return
    devices = child(domain, "devices")
    # The fill-if-absent members write distinct keys, so one pass over the preferences present does
    # them all (a preference names a few of the ten).
    for pref_key, value in prefs.items():
        member = _FILL_IF_ABSENT.get(pref_key)
        if member is not None and value is not None and devices.get(member) is None:
            devices[member] = value
    if prefs.get("preferredDisableHotplug") is not None:
        devices["disableHotplug"] = prefs["preferredDisableHotplug"]
    sound_model = prefs.get("preferredSoundModel")
    sound = devices.get("sound")
    if sound_model and sound is not None and not sound.get("model"):
        sound["model"] = sound_model
    video_type = prefs.get("preferredVideoType")
    if video_type is not None:
        video = child(devices, "video")
        if not video.get("type"):
            video["type"] = video_type
    _disks(prefs, devices)
    _interfaces(prefs, tspec, devices)
    _inputs(prefs, devices)
    _panic_devices(prefs, devices)


def _inputs(prefs: JSON, devices: JSON) -> None:
    input_bus, input_type = prefs.get("preferredInputBus"), prefs.get("preferredInputType")
    for item in devices.get("inputs") or ():
        if input_bus and not item.get("bus"):
            item["bus"] = input_bus
        if input_type and not item.get("type"):
            item["type"] = input_type


def apply_input_preferences(preference: JSON, devices: JSON) -> None:
    """``ApplyDevicePreferences``' inputs part alone: the preferred bus and type of each input without
    them (the VM controller's ``ApplyToVMI`` reaches the input ``AutoAttachInputDevice`` added after the
    VM was expanded)."""
    prefs = preference.get("devices")
    if prefs is not None:
        _inputs(prefs, devices)


def _disks(prefs: JSON, devices: JSON) -> None:
    disks = devices.get("disks")
    if not disks:
        return
    # Read each preference once, not once per disk.
    bus = prefs.get("preferredDiskBus")
    block_size = prefs.get("preferredDiskBlockSize")
    cache = prefs.get("preferredDiskCache")
    io = prefs.get("preferredDiskIO")
    io_thread = prefs.get("preferredDiskDedicatedIoThread")
    cdrom_bus = prefs.get("preferredCdromBus")
    lun_bus = prefs.get("preferredLunBus")
    for disk in disks:
        target = disk.get("disk")
        if target is None:
            cdrom = disk.get("cdrom")
            if cdrom is not None:
                if cdrom_bus and not cdrom.get("bus"):
                    cdrom["bus"] = cdrom_bus
                continue
            lun = disk.get("lun")
            if lun is not None:
                if lun_bus and not lun.get("bus"):
                    lun["bus"] = lun_bus
                continue
            target = disk["disk"] = {}
        if bus and not target.get("bus"):
            target["bus"] = bus
        if block_size is not None and disk.get("blockSize") is None:
            disk["blockSize"] = block_size
        if cache and not disk.get("cache"):
            disk["cache"] = cache
        if io and not disk.get("io"):
            disk["io"] = io
        if io_thread is not None and disk.get("dedicatedIOThread") is None and target.get("bus") == "virtio":
            disk["dedicatedIOThread"] = io_thread


def _binding_unset(iface: JSON) -> bool:
    return all(iface.get(m) is None for m in _BINDING_METHODS) and iface.get("binding") is None


def _on_pod_network(name: str, tspec: JSON) -> bool:
    for network in tspec.get("networks") or []:
        if network.get("name", "") == name:
            return network.get("pod") is not None
    return False


def _interfaces(prefs: JSON, tspec: JSON, devices: JSON) -> None:
    model = prefs.get("preferredInterfaceModel")
    masquerade = prefs.get("preferredInterfaceMasquerade")
    for iface in devices.get("interfaces") or []:
        if model and not iface.get("model"):
            iface["model"] = model
        if masquerade is not None and _binding_unset(iface) and _on_pod_network(iface.get("name", ""), tspec):
            iface["masquerade"] = masquerade


def _panic_devices(prefs: JSON, devices: JSON) -> None:
    model = prefs.get("preferredPanicDeviceModel")
    if model is None:
        return
    panic_devices = devices.get("panicDevices")
    if not panic_devices:
        devices["panicDevices"] = [*(panic_devices or []), {"model": model}]
        return
    for device in panic_devices:
        if device.get("model") is None:
            device["model"] = model


def _features(preference: JSON, domain: JSON) -> None:
    prefs = preference.get("features")
    if prefs is None:
        return
    features = child(domain, "features")
    if prefs.get("preferredAcpi") is not None:
        features["acpi"] = prefs["preferredAcpi"]
    if prefs.get("preferredApic") is not None and features.get("apic") is None:
        features["apic"] = prefs["preferredApic"]
    hyperv_prefs = prefs.get("preferredHyperv")
    if hyperv_prefs is not None:
        hyperv = child(features, "hyperv")
        # Only the members the preference sets (a few of the fourteen) are looked at.
        for member, value in hyperv_prefs.items():
            if value is not None and member in _HYPERV and hyperv.get(member) is None:
                hyperv[member] = value
    for pref_key, member in _SIMPLE_FEATURES:
        if prefs.get(pref_key) is not None and features.get(member) is None:
            features[member] = prefs[pref_key]


def _firmware(preference: JSON, domain: JSON) -> None:
    prefs = preference.get("firmware")
    if prefs is None:
        return
    firmware = child(domain, "firmware")
    bootloader = child(firmware, "bootloader")
    if prefs.get("preferredUseBios") and bootloader.get("bios") is None and bootloader.get("efi") is None:
        bootloader["bios"] = {}
    bios = bootloader.get("bios")
    if prefs.get("preferredUseBiosSerial") is not None and bios is not None and bios.get("useSerial") is None:
        bios["useSerial"] = prefs["preferredUseBiosSerial"]
    if (
        bootloader.get("efi") is None
        and bootloader.get("bios") is None
        and prefs.get("preferredEfi") is not None
    ):
        bootloader["efi"] = prefs["preferredEfi"]
        return
    if prefs.get("preferredUseEfi") and bootloader.get("efi") is None and bootloader.get("bios") is None:
        bootloader["efi"] = {}
    efi = bootloader.get("efi")
    if prefs.get("preferredUseSecureBoot") is not None and efi is not None and efi.get("secureBoot") is None:
        efi["secureBoot"] = prefs["preferredUseSecureBoot"]


def _machine(preference: JSON, domain: JSON) -> None:
    machine_type = (preference.get("machine") or {}).get("preferredMachineType")
    if machine_type:
        machine = child(domain, "machine")
        if not machine.get("type"):
            machine["type"] = machine_type


def _clock(preference: JSON, domain: JSON) -> None:
    prefs = preference.get("clock")
    if prefs is None:
        return
    clock = child(domain, "clock")
    offset = prefs.get("preferredClockOffset")
    if offset is not None and clock.get("utc") is None and clock.get("timezone") is None:
        clock.pop("utc", None)
        clock.pop("timezone", None)
        clock.update(offset)
    if prefs.get("preferredTimer") is not None and clock.get("timer") is None:
        clock["timer"] = prefs["preferredTimer"]
