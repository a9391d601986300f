"""Decoding (area ``decode``, no module of its own in ``apiserver/render/admission``): names as Go's
decoder matches them (case-insensitively where the schema does not look), numbers at Go's type limits."""

from __future__ import annotations

from hack.oracle.admission.base import LIVE_UPDATE_OFF, add_disk, cpu, memory, sweep, tspec
from hack.oracle.admission.network import set_ports
from hack.oracle.admission.vm_spec import STORAGE, add_dvt


def variants() -> None:
    sweep(
        "decode",
        "template metadata {}",
        [
            {"Labels": {"kubevirt.io/created-by": "x"}},
            {"LABELS": {"kubevirt.io/nodeName": "x"}},
            {"labels": {"a": "b"}, "Labels": {"kubevirt.io/created-by": "x"}},
            {"Labels": {"kubevirt.io/created-by": "x"}, "labels": {"a": "b"}},
            {"Annotations": {"kubevirt.io/ignitiondata": "x"}},
            {"annotations": {"hooks.kubevirt.io/hookSidecars": "x"}, "ANNOTATIONS": {}},
            {"labels": None},
            {"labels": {"kubevirt.io/created-by": ""}},
        ],
        lambda vm, v: vm["spec"]["template"].__setitem__("metadata", v),
    )
    sweep(
        "decode",
        "vm metadata {}",
        [
            {"Name": "cd", "Namespace": "other"},
            {"name": "cd", "namespace": "default", "DeletionTimestamp": "2024-01-01T00:00:00Z"},
            {"name": "cd", "namespace": "default", "deletionTimestamp": None},
            {"name": "cd"},
            {"name": "cd", "NAMESPACE": "x"},
        ],
        lambda vm, v: (
            vm.__setitem__("metadata", v),
            tspec(vm).__setitem__("hostname", "Bad_Host"),
            add_dvt(
                vm,
                {
                    "metadata": {"name": "t1", "namespace": "other"},
                    "spec": {"storage": STORAGE, "source": {"blank": {}}},
                },
            ),
        ),
    )
    sweep(
        "decode",
        "status {}",
        [
            {"Ready": True, "VolumeRequests": [{"addVolumeOptions": {"name": "x"}}]},
            {"volumerequests": [{}]},
            {"volumeRequests": [{"AddVolumeOptions": {"name": "hp"}, "removeVolumeOptions": {"name": "hp"}}]},
            {"volumeRequests": None},
            {"volumeRequests": []},
            {"ready": "yes"},
            {"printableStatus": 5},
        ],
        lambda vm, v: vm.__setitem__("status", v),
    )
    sweep(
        "decode",
        "integer field cores={}",
        [1.0, 2.5, -1, 4294967296, 4294967295, 2147483648, 1e3, "2", True, 0.99999999999],
        lambda vm, v: cpu(vm).__setitem__("cores", v),
    )
    sweep(
        "decode",
        "bootOrder={}",
        [1.0, -1, 4294967296, 0, 18446744073709551615, 18446744073709551616],
        lambda vm, v: add_disk(vm, "bo", {"bootOrder": v}),
    )
    sweep(
        "decode",
        "port={}",
        [1.0, 2147483648, -2147483649, 65535.0, 80.5],
        lambda vm, v: set_ports(vm, [{"port": v}]),
    )
    sweep(
        "decode",
        "memory.guest={}",
        [1073741824, 1073741824.0, 1.5e9, 1e20, -1e9, 10**30, "1e1000", "0.000000001"],
        lambda vm, v: memory(vm).__setitem__("guest", v),
        configs=(LIVE_UPDATE_OFF,),
    )
