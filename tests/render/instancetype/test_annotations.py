"""The annotations the VM controller's ApplyToVMI puts on the VMI, naming the VM's instancetype and
preference (pkg/instancetype/annotations, pkg/preference/annotations)."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.render.instancetype.annotations import set_annotations


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"instancetype": {"name": "u1.small"}}, {"kubevirt.io/cluster-instancetype-name": "u1.small"}),
        (
            {
                "instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": "a"},
                "preference": {"name": "p"},
            },
            {"kubevirt.io/cluster-instancetype-name": "a", "kubevirt.io/cluster-preference-name": "p"},
        ),
        (
            {
                "instancetype": {"kind": "virtualmachineinstancetypes", "name": "a"},
                "preference": {"kind": "VirtualMachinePreference", "name": "p"},
            },
            {"kubevirt.io/instancetype-name": "a", "kubevirt.io/preference-name": "p"},
        ),
        # a kind KubeVirt does not know names nothing
        ({"instancetype": {"kind": "Other", "name": "a"}}, {}),
        ({}, {}),
        ("not an object", {}),
    ],
)
def test_the_vmi_names_the_vms_instancetype_and_preference(spec: Any, expected: dict[str, str]) -> None:
    annotations: dict[str, str] = {"kept": "x"}
    set_annotations({"spec": spec}, annotations)
    assert annotations == {"kept": "x", **expected}
