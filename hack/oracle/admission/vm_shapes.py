"""Misc VM shapes (area ``status``, no module of its own in ``apiserver/render/admission``): deletion,
architectures, cluster defaults, no networks, multiqueue."""

from __future__ import annotations

from hack.oracle.admission.base import devices, drop_networks, sweep, tspec, variant


def variants() -> None:
    variant(
        "status",
        "deletionTimestamp set on a broken VM",
        lambda vm: (
            vm["metadata"].__setitem__("deletionTimestamp", "2024-01-01T00:00:00Z"),
            tspec(vm).__setitem__("hostname", "Bad_Host"),
        ),
    )
    sweep(
        "status",
        "architecture={}",
        ["amd64", "arm64", "s390x", "bogus", "", "AMD64"],
        lambda vm, v: tspec(vm).__setitem__("architecture", v),
    )
    sweep(
        "status",
        "cluster default architecture={}",
        ["arm64", "s390x"],
        lambda vm, v: None,
        configs=(
            {"architectureConfiguration": {"defaultArchitecture": "arm64"}},
            {"architectureConfiguration": {"defaultArchitecture": "s390x"}},
        ),
    )
    variant("status", "autoattachPodInterface false, no networks", lambda vm: drop_networks(vm))
    sweep(
        "status",
        "networkInterfaceMultiqueue={} / blockMultiQueue",
        [True, False],
        lambda vm, v: devices(vm).update({"networkInterfaceMultiqueue": v, "blockMultiQueue": v}),
    )
    variant(
        "status",
        "cluster default network interface slirp",
        lambda vm: drop_networks(vm) or devices(vm).pop("autoattachPodInterface", None),
        configs=(
            {"network": {"defaultNetworkInterface": "slirp"}},
            {"network": {"defaultNetworkInterface": "bridge", "permitBridgeInterfaceOnPodNetwork": False}},
            {"network": {"defaultNetworkInterface": "bogus"}},
        ),
    )
