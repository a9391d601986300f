"""Sync passes until the VM settles: what KubeVirt's VM controller decides once its own patches land.

A pass (:func:`.sync.sync_pass`) that patches the running VMI or the VM is not the last one: the patched
object is an update event the controller's informers see (``updateVirtualMachineInstance`` and
``updateVirtualMachine`` re-queue the VM, ``Execute`` runs ``sync`` again), and that next pass judges
the VM against the VMI as patched. A hot-plugged interface is the case in point: the network
synchronizer writes the VM template's interface to the VMI without the preference's model, and the
next pass's ``syncRestartRequired``, which compares the VM with its preference applied, then finds the
interface changed and sets ``RestartRequired``. :func:`settle` runs passes, each against the VM and VMI
as the previous one left them, until a pass patches nothing and leaves the VM as it found it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.objects import ObjectLookup
from apiserver.render.vmcontroller import revision
from apiserver.render.vmcontroller._go import JSON, VMI_SPEC
from apiserver.render.vmcontroller.sync import META, ControllerConfig, SyncResult, decode_vmi, sync_pass

MAX_PASSES = 10


def _set(doc: JSON, path: str, value: Any) -> None:
    """A JSON-patch ``add``/``replace`` (``remove`` when ``value`` is None) of a member path."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    parent = doc
    for part in parts[:-1]:
        found = parent.get(part)
        if not isinstance(found, dict):
            if value is None:
                return
            found = parent[part] = {}
        parent = found
    if value is None:
        parent.pop(parts[-1], None)
    else:
        parent[parts[-1]] = clone(value)


def patched_vmi(vmi: JSON, patch: Mapping[str, Any]) -> JSON:
    """``vmi`` (:func:`.sync.decode_vmi`) with the VMI patches of a pass applied, read back as the
    controller's VMI informer would hand it over."""
    raw: JSON = {
        "metadata": gojson.encode(vmi.get("metadata") or {}, META),
        "spec": gojson.encode(vmi.get("spec") or {}, VMI_SPEC),
        "status": clone(vmi.get("status") or {}),
    }
    for path, value in patch.items():
        _set(raw, path, value)
    return decode_vmi(raw)


def _same_vm(a: JSON, b: JSON) -> bool:
    spec_a = gojson.encode(a.get("spec") or {}, revision.SPEC)
    spec_b = gojson.encode(b.get("spec") or {}, revision.SPEC)
    return bool(spec_a == spec_b and (a.get("status") or {}) == (b.get("status") or {}))


def settle(
    vm: JSON,
    vmi: JSON | None,
    start_spec: JSON | None,
    lookup: ObjectLookup,
    config: ControllerConfig,
    *,
    max_passes: int = MAX_PASSES,
) -> SyncResult:
    """Passes of :func:`.sync.sync_pass` over ``vm`` and ``vmi`` (both decoded) until nothing changes.

    The answer is the last pass's (its RestartRequired condition, sync error, outcome), with every
    VMI and VM patch the passes wrote (a later pass's value for a path wins), ``passes`` and whether the
    VM ``settled`` within ``max_passes``."""
    merged_live: dict[str, Any] = {}
    merged_vm: dict[str, Any] = {}
    current = vm
    result = SyncResult()
    for count in range(1, max_passes + 1):
        before = clone(current)
        result = sync_pass(current, vmi, start_spec, lookup, config)
        merged_live.update(result.live_updates)
        merged_vm.update(result.vm_patches)
        after = result.vm if result.vm is not None else current
        result.passes = count
        if not result.live_updates and not result.vm_patches and _same_vm(before, after):
            result.settled = True
            break
        if vmi is not None and result.live_updates:
            vmi = patched_vmi(vmi, result.live_updates)
        current = clone(after)
    result.live_updates = merged_live
    result.vm_patches = merged_vm
    return result
