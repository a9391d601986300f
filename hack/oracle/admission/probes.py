"""Probes: readiness and liveness (``apiserver/render/admission/probes.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    INV,
    REQ,
    VMI_CREATE,
    add_iface,
    check,
    drop_networks,
    go_file,
    sweep,
    tspec,
    variant,
)

_PROBES: list[Any] = [
    {},
    {"httpGet": {"port": 80}},
    {"tcpSocket": {"port": 22}},
    {"exec": {"command": ["true"]}},
    {"guestAgentPing": {}},
    {"httpGet": {"port": 80}, "tcpSocket": {"port": 22}},
    {"exec": {"command": ["x"]}, "guestAgentPing": {}, "httpGet": {"port": 1}},
    {"initialDelaySeconds": 5},
]


def variants() -> None:
    """validateProbe, podNetworkRequiredStatusCause."""
    for probe in ("readinessProbe", "livenessProbe"):
        sweep("probes", f"{probe}={{}}", _PROBES, lambda vm, v, p=probe: tspec(vm).__setitem__(p, v))
        sweep(
            "probes",
            f"{probe}={{}} without pod network",
            _PROBES[:6],
            lambda vm, v, p=probe: (drop_networks(vm), tspec(vm).__setitem__(p, v)),
        )
    variant(
        "probes",
        "both probes http without pod network, multus only",
        lambda vm: (
            drop_networks(vm),
            add_iface(vm, {"name": "m", "bridge": {}}),
            tspec(vm).update(
                {
                    "readinessProbe": {"httpGet": {"port": 1}, "tcpSocket": {"port": 2}},
                    "livenessProbe": {"tcpSocket": {"port": 2}},
                }
            ),
        ),
    )


def checks() -> None:
    go_file(VMI_CREATE, "probes")
    check("probes.one-handler", "validateProbe", INV, "must have exactly one probe type set")
    check("probes.no-handler", "validateProbe", REQ, "must be set if a ")
    check(
        "probes.pod-network",
        "podNetworkRequiredStatusCause",
        INV,
        "is only allowed if the Pod Network is attached",
    )
