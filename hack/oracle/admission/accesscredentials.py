"""Access credentials: SSH public keys and user passwords
(``apiserver/render/admission/accesscredentials.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import INV, VMI_CREATE, add_disk, check, go_file, sweep, tspec, variant

_SSH = {"source": {"secret": {"secretName": "keys"}}}
_AC: list[Any] = [
    {"sshPublicKey": {**_SSH, "propagationMethod": {"noCloud": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"configDrive": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"qemuGuestAgent": {"users": ["root"]}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"qemuGuestAgent": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"qemuGuestAgent": {"users": []}}}},
    {"sshPublicKey": {"source": {}, "propagationMethod": {"qemuGuestAgent": {"users": []}, "noCloud": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {}}},
    {"sshPublicKey": {"source": {}, "propagationMethod": {"noCloud": {}}}},
    {"sshPublicKey": {**_SSH, "propagationMethod": {"noCloud": {}, "configDrive": {}}}},
    {
        "sshPublicKey": {
            "source": {},
            "propagationMethod": {"noCloud": {}, "configDrive": {}, "qemuGuestAgent": {}},
        }
    },
    {
        "userPassword": {
            "source": {"secret": {"secretName": "pw"}},
            "propagationMethod": {"qemuGuestAgent": {}},
        }
    },
    {"userPassword": {"source": {}, "propagationMethod": {}}},
    {},
    {
        "sshPublicKey": {**_SSH, "propagationMethod": {"noCloud": {}}},
        "userPassword": {
            "source": {"secret": {"secretName": "p"}},
            "propagationMethod": {"qemuGuestAgent": {}},
        },
    },
]


def variants() -> None:
    """validateAccessCredentials."""
    sweep(
        "accesscredentials",
        "accessCredentials=[{}]",
        _AC,
        lambda vm, v: tspec(vm).__setitem__("accessCredentials", [v]),
    )
    sweep(
        "accesscredentials",
        "accessCredentials=[{}] with configDrive volume",
        _AC[:3],
        lambda vm, v: (
            tspec(vm).__setitem__("accessCredentials", [v]),
            add_disk(vm, "cd", {}, {"cloudInitConfigDrive": {"userData": "x"}}),
        ),
    )
    variant(
        "accesscredentials",
        "two credentials, both broken",
        lambda vm: tspec(vm).__setitem__("accessCredentials", [_AC[5], _AC[9]]),
    )


def checks() -> None:
    go_file(VMI_CREATE, "accesscredentials")
    check("ac.nocloud", "validateAccessCredentials", INV, "requires a noCloud volume to exist")
    check("ac.configdrive", "validateAccessCredentials", INV, "requires a configDrive volume to exist")
    check(
        "ac.qga-users",
        "validateAccessCredentials",
        INV,
        "requires at least one user to be present in the users list",
    )
    check(
        "ac.ssh-source",
        "validateAccessCredentials",
        INV,
        "must have exactly one source set",
        field="sshPublicKey",
    )
    check(
        "ac.ssh-method",
        "validateAccessCredentials",
        INV,
        "must have exactly one propagationMethod set",
        field="sshPublicKey",
    )
    check(
        "ac.password-source",
        "validateAccessCredentials",
        INV,
        "must have exactly one source set",
        field="userPassword",
    )
    check(
        "ac.password-method",
        "validateAccessCredentials",
        INV,
        "must have exactly one propagationMethod set",
        field="userPassword",
    )
    check("ac.one-type", "validateAccessCredentials", INV, "must have exactly one access credential type set")
