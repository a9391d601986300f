"""Interfaces and networks of a running VM: what needs a restart, and what is hot-plugged.

Mirrors ``pkg/network/vmliveupdate/restart.go`` (``IsRestartRequired`` and its predicates) and
``pkg/network/controllers/vm.go`` (``VMController.Sync``: ``syncVMIInterfaces``,
``applyDynamicIfaceRequestOnVMI``, ``syncNetworks``, ``clearDetachedIfacesFromVMI``/``FromVM``), with the
helpers of ``pkg/network/vmispec`` and ``pkg/network/namescheme`` they call.
"""

from __future__ import annotations

import re
from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.vmcontroller._go import (
    JSON,
    devices,
    has_condition_status,
    semantic_equal,
    template_spec,
)

INTERFACE = "kubevirt.io/api/core/v1.Interface"
NETWORK = "kubevirt.io/api/core/v1.Network"
ABSENT = "absent"
NETWORKS_PATH = "/spec/networks"
INTERFACES_PATH = "/spec/domain/devices/interfaces"
_ORDINAL = re.compile(r"^net\d+$")


def _by_name(items: Any) -> dict[str, JSON]:
    return {str(i.get("name", "")): i for i in items or () if isinstance(i, dict)}


def is_migratable(vmi: JSON) -> bool:
    """``VirtualMachineInstance.IsMigratable``: a LiveMigratable condition with status True."""
    return has_condition_status(vmi, "LiveMigratable", "True")


def _ifaces_equal(a: JSON | None, b: JSON | None) -> bool:
    """``areNormalizedIfacesEqual``: equal but for ``state``."""
    left = {k: v for k, v in (a or {}).items() if k != "state"}
    right = {k: v for k, v in (b or {}).items() if k != "state"}
    return semantic_equal(left, right, INTERFACE)


def _without_nad_name(net: JSON | None) -> JSON:
    out: JSON = clone(net or {})
    if isinstance(out.get("multus"), dict):
        out["multus"].pop("networkName", None)
    return out


def _has_pod_network(nets: Any) -> bool:
    return any(isinstance(n, dict) and n.get("pod") is not None for n in nets or ())


def is_restart_required(vm: JSON, vmi: JSON) -> bool:
    """``vmliveupdate.IsRestartRequired``: an interface or network of the running VMI removed or changed
    (other than by the hot-unplug flow, or a NAD name change on a migratable VMI), or a pod network added."""
    tspec = vm["spec"]["template"]["spec"]
    vmi_spec = vmi.get("spec") or {}
    desired_ifaces = _by_name((tspec.get("domain") or {}).get("devices", {}).get("interfaces"))
    current_ifaces = _by_name((vmi_spec.get("domain") or {}).get("devices", {}).get("interfaces"))
    if any(name not in desired_ifaces for name in current_ifaces):
        return True
    if any(not _ifaces_equal(desired_ifaces.get(n), i) for n, i in current_ifaces.items()):
        return True
    desired_nets_list = tspec.get("networks")
    current_nets_list = vmi_spec.get("networks")
    if _has_pod_network(desired_nets_list) and not _has_pod_network(current_nets_list):
        return True
    desired_nets = _by_name(desired_nets_list)
    current_nets = _by_name(current_nets_list)
    if any(name not in desired_nets for name in current_nets):
        return True
    migratable = is_migratable(vmi)
    for name, net in current_nets.items():
        want = desired_nets.get(name)
        if migratable:
            if not semantic_equal(_without_nad_name(want), _without_nad_name(net), NETWORK):
                return True
        elif not semantic_equal(want or {}, net, NETWORK):
            return True
    return False


def _has_ordinal_secondary_ifaces(networks: Any, statuses: Any) -> bool:
    """``namescheme.HasOrdinalSecondaryIfaces``."""
    secondary = [
        n for n in networks or () if isinstance(n.get("multus"), dict) and not n["multus"].get("default")
    ]
    if not secondary:
        return False
    by_name = _by_name(statuses)
    for net in secondary:
        status = by_name.get(str(net.get("name", "")))
        if status is not None and status.get("podInterfaceName"):
            return bool(_ORDINAL.match(str(status["podInterfaceName"])))
    return True


def _filter_networks(networks: list[JSON], ifaces: list[JSON]) -> list[JSON] | None:
    """``vmispec.FilterNetworksByInterfaces`` (nil when none is kept)."""
    by_name = _by_name(networks)
    kept = [by_name[str(i.get("name", ""))] for i in ifaces if str(i.get("name", "")) in by_name]
    return kept or None


def _put(spec_part: JSON, key: str, value: list[JSON] | None) -> None:
    if value is None:
        spec_part.pop(key, None)
    else:
        spec_part[key] = value


def sync_interfaces(vm: JSON, vmi: JSON | None) -> dict[str, Any]:
    """``VMController.Sync``: the VMI patch KubeVirt writes for hot-plugged (and state-changed) interfaces,
    as ``{path: value}`` (empty when none); ``vm``'s template drops interfaces detached everywhere."""
    patch: dict[str, Any] = {}
    if vmi is not None and (vmi.get("metadata") or {}).get("deletionTimestamp") is not None:
        return patch
    vmi_ifaces_by_name: dict[str, JSON] = {}
    statuses: dict[str, JSON] = {}
    tspec = template_spec(vm)
    vm_ifaces: list[JSON] = list((tspec.get("domain") or {}).get("devices", {}).get("interfaces") or ())
    vm_nets: list[JSON] = list(tspec.get("networks") or ())
    if vmi is not None:
        vmi_spec = vmi.get("spec") or {}
        status_list = (vmi.get("status") or {}).get("interfaces") or ()
        statuses = _by_name(status_list)
        old_ifaces = (vmi_spec.get("domain") or {}).get("devices", {}).get("interfaces")
        old_nets = vmi_spec.get("networks")
        ifaces: list[JSON] = [clone(i) for i in old_ifaces or ()]
        nets: list[JSON] = [clone(n) for n in old_nets or ()]
        ordinal = _has_ordinal_secondary_ifaces(old_nets, status_list)
        indexed = _by_name(ifaces)
        vm_nets_by_name = _by_name(vm_nets)
        for want in vm_ifaces:
            name = str(want.get("name", ""))
            have = indexed.get(name)
            state = want.get("state", "")
            if have is None:
                if state != ABSENT and (want.get("bridge") is not None or want.get("sriov") is not None):
                    nets.append(clone(vm_nets_by_name.get(name, {})))
                    ifaces.append(clone(want))
            elif (
                state != have.get("state", "")
                and have.get("state", "") != ABSENT
                and not (ordinal and state == ABSENT)
            ):
                for iface in ifaces:
                    if iface.get("name", "") == name:
                        _put_state(iface, state)
                        break
        kept = [i for i in ifaces if i.get("state", "") != ABSENT or str(i.get("name", "")) in statuses]
        kept_nets = _filter_networks(nets, kept) or []
        if is_migratable(vmi):
            for net in kept_nets:
                want_net = vm_nets_by_name.get(str(net.get("name", "")))
                if (
                    want_net is not None
                    and isinstance(want_net.get("multus"), dict)
                    and isinstance(net.get("multus"), dict)
                ):
                    net["multus"]["networkName"] = want_net["multus"].get("networkName", "")
                    if not net["multus"]["networkName"]:
                        net["multus"].pop("networkName")
        new_ifaces = kept or None
        new_nets = kept_nets or None
        if not _same_list(old_ifaces, new_ifaces, INTERFACE) or not _same_list(old_nets, new_nets, NETWORK):
            patch[NETWORKS_PATH] = _encoded(new_nets, NETWORK)
            patch[INTERFACES_PATH] = _encoded(new_ifaces, INTERFACE)
        vmi_ifaces_by_name = _by_name(new_ifaces)
    retained = [
        i
        for i in vm_ifaces
        if i.get("state", "") != ABSENT
        or str(i.get("name", "")) in vmi_ifaces_by_name
        or str(i.get("name", "")) in statuses
    ]
    _put(devices(tspec), "interfaces", retained or None)
    _put(tspec, "networks", _filter_networks(vm_nets, retained))
    return patch


def _put_state(iface: JSON, state: str) -> None:
    if state:
        iface["state"] = state
    else:
        iface.pop("state", None)


def _same_list(a: Any, b: Any, go_type: str) -> bool:
    left = list(a or ())
    right = list(b or ())
    return len(left) == len(right) and all(
        semantic_equal(x, y, go_type) for x, y in zip(left, right, strict=True)
    )


def _encoded(items: list[JSON] | None, go_type: str) -> list[Any] | None:
    return None if items is None else [gojson.encode(i, go_type) for i in items]
