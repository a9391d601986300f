"""Devices: start strategy, inputs, IO threads, eviction strategy, GPU displays (ramfb), the HostDevices
gate, sound, VSOCK, persistent reservation, downward metrics, video, panic devices, reboot policy
(``apiserver/render/admission/devices.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    INV,
    VMI_CREATE,
    add_disk,
    check,
    devices,
    domain,
    gate_list,
    go_file,
    sweep,
    tspec,
    variant,
)

_DISPLAY: list[Any] = [
    None,
    {},
    {"enabled": False},
    {"enabled": True, "ramFB": {"enabled": False}},
    {"ramFB": {}},
    {"enabled": True, "ramFB": {"enabled": True}},
]


def start_strategy_variants() -> None:
    """validateStartStrategy."""
    sweep(
        "devices",
        "startStrategy={}",
        ["Paused", "paused", "", "Running", "bogus"],
        lambda vm, v: tspec(vm).__setitem__("startStrategy", v),
    )
    variant(
        "devices",
        "startStrategy Paused + livenessProbe",
        lambda vm: tspec(vm).update({"startStrategy": "Paused", "livenessProbe": {"guestAgentPing": {}}}),
    )


def input_variants() -> None:
    """Inputs, IO threads (validateInputDevices, validateIOThreadsPolicy)."""
    sweep(
        "devices",
        "input={}",
        [
            {"type": "tablet", "bus": "virtio", "name": "t"},
            {"type": "tablet", "bus": "usb", "name": "t"},
            {"type": "tablet", "name": "t"},
            {"type": "mouse", "bus": "ps2", "name": "t"},
            {"type": "", "bus": "", "name": "t"},
            {"type": "keyboard", "bus": "usb", "name": "k"},
            {"type": "Tablet", "bus": "USB", "name": "t"},
        ],
        lambda vm, v: devices(vm).__setitem__("inputs", [v]),
    )
    sweep(
        "devices",
        "ioThreadsPolicy={}",
        ["shared", "auto", "supplementalPool", "bogus", "Shared", ""],
        lambda vm, v: domain(vm).__setitem__("ioThreadsPolicy", v),
    )
    sweep(
        "devices",
        "supplementalPool ioThreads={}",
        [
            None,
            {},
            {"supplementalPoolThreadCount": 0},
            {"supplementalPoolThreadCount": 1},
            {"supplementalPoolThreadCount": -1},
            {"supplementalPoolThreadCount": 4},
        ],
        lambda vm, v: domain(vm).update(
            {"ioThreadsPolicy": "supplementalPool", **({"ioThreads": v} if v is not None else {})}
        ),
    )
    variant(
        "devices",
        "ioThreads count without policy",
        lambda vm: domain(vm).__setitem__("ioThreads", {"supplementalPoolThreadCount": 0}),
    )


def eviction_and_gpu_variants() -> None:
    """Eviction strategy (validateLiveMigration), GPUs' ramfb displays (validateMDEVRamFB), host devices
    without the gate (validateHostDevicesWithPassthroughEnabled)."""
    sweep(
        "devices",
        "evictionStrategy={}",
        ["LiveMigrate", "LiveMigrateIfPossible", "None", "External", "bogus", "", "livemigrate"],
        lambda vm, v: tspec(vm).__setitem__("evictionStrategy", v),
    )
    sweep(
        "devices",
        "cluster evictionStrategy={}",
        ["LiveMigrate", "bogus"],
        lambda vm, v: None,
        configs=({"evictionStrategy": "bogus"}, {"evictionStrategy": "External"}),
    )
    for d1 in _DISPLAY:
        for d2 in _DISPLAY[:3]:
            variant(
                "gpus",
                f"two gpus displays {d1} / {d2}",
                lambda vm, a=d1, b=d2: devices(vm).__setitem__(
                    "gpus",
                    [
                        {
                            "name": "g1",
                            "deviceName": "nvidia.com/A",
                            **({"virtualGPUOptions": {"display": a}} if a is not None else {}),
                        },
                        {
                            "name": "g2",
                            "deviceName": "nvidia.com/B",
                            **({"virtualGPUOptions": {"display": b}} if b is not None else {}),
                        },
                    ],
                ),
            )
    sweep(
        "gpus",
        "hostDevices={}",
        [[], [{"name": "h", "deviceName": "vendor.com/x"}], None],
        lambda vm, v: devices(vm).__setitem__("hostDevices", v),
        gates=("HostDevices",),
    )


def variants() -> None:
    """Sound, VSOCK, persistent reservation, downward metrics, video, panic devices, reboot policy."""
    sweep(
        "devices",
        "sound={}",
        [
            {"name": "s", "model": "ich9"},
            {"name": "s", "model": "ac97"},
            {"name": "s"},
            {"model": "ich9"},
            {"name": "s", "model": "ICH9"},
            {},
            {"name": "", "model": "bogus"},
        ],
        lambda vm, v: devices(vm).__setitem__("sound", v),
    )
    sweep(
        "devices",
        "autoattachVSOCK={}",
        [True, False],
        lambda vm, v: devices(vm).__setitem__("autoattachVSOCK", v),
        gates=("VSOCK",),
    )
    sweep(
        "devices",
        "lun reservation={}",
        [True, False],
        lambda vm, v: add_disk(
            vm, "pr", {"lun": {"reservation": v}}, {"persistentVolumeClaim": {"claimName": "c"}}
        ),
        configs=(
            {"persistentReservationConfiguration": {"enabled": False}},
            {"persistentReservationConfiguration": {"enabled": True}},
            gate_list("PersistentReservation"),
            {},
        ),
    )
    sweep(
        "devices",
        "downwardMetrics device={}",
        [{}, None],
        lambda vm, v: devices(vm).__setitem__("downwardMetrics", v),
        gates=("DownwardMetrics",),
    )
    sweep(
        "devices",
        "video={} autoattachGraphicsDevice={}",
        [
            ({"type": "vga"}, False),
            ({"type": "virtio"}, True),
            ({"type": "bogus"}, None),
            ({}, False),
            (None, False),
        ],
        lambda vm, v: (
            devices(vm).__setitem__("video", v[0]) if v[0] is not None else None,
            devices(vm).__setitem__("autoattachGraphicsDevice", v[1]) if v[1] is not None else None,
        ),
    )
    sweep(
        "devices",
        "panicDevices={}",
        [
            [{"model": "hyperv"}],
            [{"model": "isa"}],
            [{"model": "pvpanic"}],
            [{"model": "bogus"}],
            [{}],
            [{"model": ""}],
            [{"model": "isa"}, {"model": "x"}, {"model": "y"}],
            [],
        ],
        lambda vm, v: devices(vm).__setitem__("panicDevices", v),
    )
    sweep(
        "devices",
        "panicDevices on arch={}",
        ["s390x", "arm64", ""],
        lambda vm, v: (
            tspec(vm).__setitem__("architecture", v),
            devices(vm).__setitem__("panicDevices", [{"model": "bogus"}]),
        ),
        configs=({"architectureConfiguration": {"defaultArchitecture": "s390x"}},),
    )
    sweep(
        "devices",
        "rebootPolicy={}",
        ["Reboot", "Terminate", "bogus", ""],
        lambda vm, v: domain(vm).__setitem__("rebootPolicy", v),
        gates=("RebootPolicy",),
        configs=({"developerConfiguration": {"disabledFeatureGates": ["RebootPolicy"]}},),
    )


def start_strategy_checks() -> None:
    go_file(VMI_CREATE, "devices")
    check(
        "devices.start-strategy",
        "validateStartStrategy",
        INV,
        "is set with an unrecognized option",
        field="startStrategy",
    )
    check(
        "devices.paused-liveness",
        "validateStartStrategy",
        INV,
        "Pausing VMI with LivenessProbe is not supported",
    )


def input_checks() -> None:
    go_file(VMI_CREATE, "devices")
    check("devices.input-bus", "validateInputDevices", INV, "Input device can have only virtio or usb bus.")
    check("devices.input-type", "validateInputDevices", INV, "Input device can have only tablet type.")
    check("devices.iothreads-policy", "validateIOThreadsPolicy", INV, "Invalid IOThreadsPolicy")
    check(
        "devices.iothreads-count",
        "validateIOThreadsPolicy",
        INV,
        "the number of iothreads needs to be set and positive",
    )


def eviction_and_gpu_checks() -> None:
    go_file(VMI_CREATE, "devices")
    check(
        "devices.eviction",
        "validateLiveMigration",
        INV,
        "is set with an unrecognized option",
        field="evictionStrategy",
        gate="evictionStrategy (cluster)",
    )
    check("gpus.ramfb", "validateMDEVRamFB", INV, "configuring multiple displays with ramfb is not valid")
    check(
        "gpus.host-devices-gate",
        "validateHostDevicesWithPassthroughEnabled",
        INV,
        "Host Devices feature gate is not enabled",
        gate="HostDevices",
    )


def sound_checks() -> None:
    go_file(VMI_CREATE, "devices")
    check("devices.sound-model", "validateSoundDevices", INV, "Sound device type is not supported.")
    check("devices.sound-name", "validateSoundDevices", INV, "Sound device requires a name field.")


def vsock_reservation_metrics_checks() -> None:
    go_file(VMI_CREATE, "devices")
    check("devices.vsock", "validateVSOCK", INV, "VSOCK feature gate is not enabled", gate="VSOCK")
    check(
        "devices.persistent-reservation",
        "validatePersistentReservation",
        INV,
        "persistent reservation is not enabled",
        gate="persistentReservationConfiguration / PersistentReservation",
    )
    check(
        "devices.downward-metrics-gate",
        "validateDownwardMetrics",
        INV,
        "downwardMetrics virtio serial is not allowed",
        gate="DownwardMetrics",
    )


def video_panic_reboot_checks() -> None:
    go_file(VMI_CREATE, "devices")
    check(
        "devices.video-no-graphics",
        "validateVideoConfig",
        INV,
        "Video configuration is not allowed when autoattachGraphicsDevice is set to false",
    )
    check(
        "devices.panic-s390x", "validatePanicDevices", INV, "custom panic devices are not supported on s390x"
    )
    check("devices.panic-model", "validatePanicDeviceModel", INV, "invalid PanicDeviceModel")
    check(
        "devices.reboot-policy",
        "validateRebootPolicy",
        INV,
        "RebootPolicy is specified but the RebootPolicy feature gate is not enabled",
        gate="RebootPolicy",
    )
