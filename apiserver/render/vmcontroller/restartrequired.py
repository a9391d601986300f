"""Whether a change to a running VM's template needs a restart.

Mirrors ``syncRestartRequired`` (``pkg/virt-controller/watch/vm/vm.go``): the VM as it is and the VM as
it was started (its start revision's spec), both with their instancetype and preference applied, are
compared after everything KubeVirt can change live has been copied over from the current one: hot-plug
volumes and disks, and under the ``LiveUpdate`` rollout strategy CPU sockets, guest memory, node
selector, affinity and tolerations; interfaces and networks when the network rules allow; a firmware UUID
equal to the VMI's.
"""

from __future__ import annotations

from apiserver.render.golang.tree import clone
from apiserver.render.objects import ObjectLookup
from apiserver.render.vmcontroller import network
from apiserver.render.vmcontroller._go import (
    JSON,
    RESTART_REQUIRED,
    VMI_SPEC,
    devices,
    domain,
    get_condition,
    remove_condition,
    semantic_equal,
    set_restart_required,
    template_spec,
)
from apiserver.render.vmcontroller.instancetype import ApplyError, apply_to_vm
from apiserver.render.vmcontroller.livevolumes import valid_live_update_disks, valid_live_update_volumes

NON_LIVE_UPDATABLE = "a non-live-updatable field was changed in the template spec"


def _copy_member(dst: JSON, src: JSON, key: str) -> None:
    if key in src:
        dst[key] = src[key]
    else:
        dst.pop(key, None)


def sync_restart_required(
    start_spec: JSON | None, vm: JSON, vmi: JSON | None, lookup: ObjectLookup, *, live_update: bool
) -> bool:
    """``syncRestartRequired``: sets RestartRequired on ``vm`` (and returns True) when a field that cannot
    change live differs from the start spec; otherwise removes the condition. ``live_update``: the
    rollout strategy is ``LiveUpdate``."""
    if start_spec is None:
        return False
    current = clone(vm)
    try:
        apply_to_vm(current, lookup)
    except ApplyError:
        return False
    last_seen: JSON = {"metadata": clone(current.get("metadata") or {}), "spec": clone(start_spec)}
    try:
        apply_to_vm(last_seen, lookup)
    except ApplyError:
        return False
    cur = template_spec(current)
    old = template_spec(last_seen)

    if valid_live_update_volumes(old, current.get("spec") or {}, cur):
        _copy_member(old, cur, "volumes")
    if valid_live_update_disks(old, cur):
        _copy_member(devices(old), (cur.get("domain") or {}).get("devices") or {}, "disks")

    if live_update:
        old_cpu = (old.get("domain") or {}).get("cpu")
        cur_cpu = (cur.get("domain") or {}).get("cpu")
        if old_cpu is not None and cur_cpu is not None:
            _copy_member(old_cpu, cur_cpu, "sockets")
        cur_memory = (cur.get("domain") or {}).get("memory")
        if cur_memory is not None and cur_memory.get("guest") is not None:
            old_memory = domain(old).get("memory")
            if old_memory is None:
                old_memory = domain(old)["memory"] = {}
            old_memory["guest"] = cur_memory["guest"]
        for key in ("nodeSelector", "affinity", "tolerations"):
            _copy_member(old, cur, key)

    if vmi is not None and not network.is_restart_required(current, vmi):
        _copy_member(devices(old), (cur.get("domain") or {}).get("devices") or {}, "interfaces")
        _copy_member(old, cur, "networks")

    vmi_firmware = ((vmi or {}).get("spec") or {}).get("domain", {}).get("firmware")
    cur_firmware = (cur.get("domain") or {}).get("firmware")
    if (
        vmi_firmware is not None
        and cur_firmware is not None
        and vmi_firmware.get("uuid", "") == cur_firmware.get("uuid", "")
    ):
        old_firmware = domain(old).get("firmware")
        if old_firmware is None:
            old_firmware = domain(old)["firmware"] = {}
        _copy_member(old_firmware, cur_firmware, "uuid")

    if not semantic_equal(old, cur, VMI_SPEC):
        set_restart_required(vm, NON_LIVE_UPDATABLE)
        return True
    if get_condition(vm, RESTART_REQUIRED) is not None:
        remove_condition(vm, RESTART_REQUIRED)
    return False
