"""Differences from KubeVirt's VM webhook that hack/oracle/fuzz_admission.py found beyond the golden cases, one
test per fix: the smallest input that showed it and the verdict KubeVirt's webhook (the expand-admit
oracle, commit d923fdb) gave for it, written out as it answered.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from apiserver import ExpandError, expand
from apiserver.render.admission import PREFIX, AdmissionDenied
from tests.render.admission.test_units import BASE

JSON = dict[str, Any]
CONFIG_NOTE = "the KubeVirt configuration is invalid ("


def vm(change: Callable[[JSON], Any]) -> JSON:
    """The units' base VM with ``change`` applied to its ``spec.template.spec``."""
    out = copy.deepcopy(BASE)
    change(out["spec"]["template"]["spec"])
    return out


def devices(tspec: JSON) -> JSON:
    return tspec["domain"]["devices"]  # type: ignore[no-any-return]


def refused(message: str, field: str, reason: str = "FieldValueInvalid") -> JSON:
    """KubeVirt's verdict with one cause (the oracle's shape)."""
    return {
        "allowed": False,
        "causes": [{"reason": reason, "message": message, "field": field}],
        "result": {"code": 422, "message": message, "reason": "Invalid"},
    }


def verdict(inp: JSON) -> JSON:
    """``validate=True``'s answer in the oracle's shape."""
    try:
        result = expand(
            inp["vm"], inp.get("objects", []), inp.get("kubevirt"), validate=True, field_validation="Ignore"
        )
    except AdmissionDenied as err:
        message = err.message.removeprefix(PREFIX)
        result_part = {"code": err.code, "message": message, "reason": err.reason}
        return {"allowed": False, "causes": err.causes, "result": result_part}
    except ExpandError as err:
        return {"allowed": False, "renderError": err.message}
    out: JSON = {"allowed": True}
    # The note naming a KubeVirt configuration validateConfig refuses is ours (docs/rendering.md), beside
    # the verdict; KubeVirt's webhook gives no such warning, it logs the error.
    warnings = [w for w in result.warnings if not w.startswith(CONFIG_NOTE)]
    if warnings:
        out["warnings"] = warnings
    return out


_PATH_MSG = "spec.template.spec.volumes[0].containerDisk must be an absolute path to a file without relative components"
_HOSTDISK = {"name": "hd", "hostDisk": {"path": "/x", "type": "Disk"}}
_OPERATOR = "spec.template.spec.topologySpreadConstraints.labelSelector.matchExpressions[0].operator"

CASES: list[tuple[str, JSON, JSON]] = [
    (
        # strings.TrimSuffix drops one trailing slash before the path is compared with its cleaned form
        "container disk path with one trailing slash",
        {"vm": vm(lambda s: s["volumes"][0]["containerDisk"].update(path="/disk/"))},
        {"allowed": True},
    ),
    (
        "container disk path with two trailing slashes",
        {"vm": vm(lambda s: s["volumes"][0]["containerDisk"].update(path="/disk//"))},
        refused(_PATH_MSG, "spec.template.spec.volumes[0].containerDisk"),
    ),
    (
        # GPU embeds *ClaimRequest inline: naming one of its members, even empty, allocates it
        "gpu with a device name and an empty claimName",
        {"vm": vm(lambda s: devices(s).update(gpus=[{"name": "g", "deviceName": "x", "claimName": ""}]))},
        refused(
            "vmi.spec.domain.devices.gpus contains GPUs with both deviceName and claimRequest",
            "spec.template.spec.domain.devices.gpus",
        ),
    ),
    (
        # swag.IsFloat64AJSONInteger: 1e20 is beyond 2**53, so not an integer to go-openapi
        "cpu cores 1e20",
        {"vm": vm(lambda s: s["domain"].update(cpu={"cores": 1e20}))},
        refused(
            'spec.template.spec.domain.cpu.cores in body must be of type int64: "float64"', "", reason=""
        ),
    ),
    (
        # virt-api reads the KubeVirt CR through client-go: member names match exactly
        "feature gates under a member spelled FeatureGates",
        {
            "vm": vm(lambda s: (s["volumes"].append(_HOSTDISK), devices(s)["disks"].append({"name": "hd"}))),
            "kubevirt": {"developerConfiguration": {"FeatureGates": ["HostDisk"]}},
        },
        refused("HostDisk feature gate is not enabled", "spec.template.spec.volumes[1]"),
    ),
    *(
        (
            # virt-api does not use a configuration validateConfig refuses: it falls back to the defaults,
            # so the HostDisk gate the bad configuration enables is off
            f"feature gate in a configuration with {label}",
            {
                "vm": vm(
                    lambda s: (s["volumes"].append(_HOSTDISK), devices(s)["disks"].append({"name": "hd"}))
                ),
                "kubevirt": {**bad, "developerConfiguration": {"featureGates": ["HostDisk"], **bad_dev}},
            },
            refused("HostDisk feature gate is not enabled", "spec.template.spec.volumes[1]")
            if refuses
            else {"allowed": True},
        )
        for label, bad, bad_dev, refuses in [
            ("memoryOvercommit -1", {}, {"memoryOvercommit": -1}, True),
            ("memoryOvercommit 0 (dropped, the default stays)", {}, {"memoryOvercommit": 0}, False),
            ("cpuAllocationRatio -1", {}, {"cpuAllocationRatio": -1}, True),
            ("pvcTolerateLessSpaceUpToPercent 101", {}, {"pvcTolerateLessSpaceUpToPercent": 101}, True),
            ("pvcTolerateLessSpaceUpToPercent -1", {}, {"pvcTolerateLessSpaceUpToPercent": -1}, True),
            ("pvcTolerateLessSpaceUpToPercent 100", {}, {"pvcTolerateLessSpaceUpToPercent": 100}, False),
            ("imagePullPolicy always", {"imagePullPolicy": "always"}, {}, True),
            ("imagePullPolicy Always", {"imagePullPolicy": "Always"}, {}, False),
            ("defaultNetworkInterface x", {"network": {"defaultNetworkInterface": "x"}}, {}, True),
        ]
    ),
    (
        # ... and so is the bridge the defaults permit on the pod network
        "no networks, bridge not permitted, in a configuration with memoryOvercommit -1",
        {
            "vm": vm(lambda s: (s.pop("networks"), devices(s).pop("interfaces"))),
            "kubevirt": {
                "network": {"defaultNetworkInterface": "bridge", "permitBridgeInterfaceOnPodNetwork": False},
                "developerConfiguration": {"memoryOvercommit": -1},
            },
        },
        {"allowed": True},
    ),
    (
        "no networks, defaultNetworkInterface bogus",
        {
            "vm": vm(lambda s: (s.pop("networks"), devices(s).pop("interfaces"))),
            "kubevirt": {"network": {"defaultNetworkInterface": "bogus"}},
        },
        {"allowed": True},
    ),
    (
        # Quantity.Value() of an int64 amount beyond int64 is 0 (apimachinery v0.34): no limit is exceeded
        "guest memory 1e20 under a 2Gi limit",
        {
            "vm": vm(
                lambda s: s["domain"].update(memory={"guest": 1e20}, resources={"limits": {"memory": "2Gi"}})
            ),
            "kubevirt": {"vmRolloutStrategy": "Stage"},
        },
        {"allowed": True},
    ),
    (
        # 10^30 prints as "1" (no suffix beyond 10^18) but is compared as parsed: the low 64 bits of
        # 10^30, above 2Gi (read back from its text it was 1, and admitted)
        "guest memory 10^30 under a 2Gi limit",
        {
            "vm": vm(
                lambda s: s["domain"].update(
                    memory={"guest": 10**30}, resources={"limits": {"memory": "2Gi"}}
                )
            ),
            "kubevirt": {"vmRolloutStrategy": "Stage"},
        },
        refused(
            "spec.template.spec.domain.memory.guest '1' must be equal to or less than the memory limit "
            "spec.template.spec.domain.resources.limits.memory '2Gi'",
            "spec.template.spec.domain.memory.guest",
        ),
    ),
    (
        # ... and 0 is 2Mi-aligned, so memory hotplug's alignment check passes
        "maxGuest 1e20",
        {"vm": vm(lambda s: s["domain"].update(memory={"guest": "1Gi", "maxGuest": 1e20}))},
        {"allowed": True},
    ),
    (
        # field.Error prints a value of a named string type (NodeSelectorOperator) with json.Marshal
        "label selector operator with HTML characters",
        {
            "vm": vm(
                lambda s: s.update(
                    topologySpreadConstraints=[
                        {
                            "maxSkew": 1,
                            "topologyKey": "k",
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {
                                "matchExpressions": [{"key": "k", "operator": "<b>", "values": ["a"]}]
                            },
                        }
                    ]
                )
            )
        },
        refused(f'{_OPERATOR}: Invalid value: "\\u003cb\\u003e": not a valid selector operator', _OPERATOR),
    ),
]


@pytest.mark.parametrize(("inp", "expected"), [(i, e) for _, i, e in CASES], ids=[n for n, _, _ in CASES])
def test_kubevirts_verdict(inp: JSON, expected: JSON) -> None:
    assert verdict(inp) == expected
