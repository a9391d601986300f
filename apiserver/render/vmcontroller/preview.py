"""Change preview: what a proposed change does to a VM, rendered, and whether KubeVirt applies it live.

Puts the VM controller's pieces together for a caller (no KubeVirt function of its own):

* :func:`decide` runs one reconcile (:func:`.sync.sync_pass`) of a VM against the VM as it runs: its
  start revision and its running VMI, as KubeVirt's VM controller does after the VM was changed (or,
  ``settled``, the reconciles that follow its own patches: :func:`.reconcile.settle`);
* :func:`preview` adds what a person asks before making the change: both VMs rendered with the expand
  engine (:func:`apiserver.render.expand.expand`), the RFC 6902 patch between them and the changed
  paths, the VM webhook's verdict on the proposed VM, KubeVirt's decision once its passes settle, and one
  word: ``live``, ``restart``,
  ``refused``, ``error`` (the reconcile fails; KubeVirt retries) or ``stopped`` (no VMI runs; the change
  applies at the next start);
* :func:`propose` names a change without writing a whole VM: another instancetype or preference, or the
  latest revision of the current ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.admission import AdmissionDenied
from apiserver.render.expand import expand
from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.kubernetes.errors import CAUSE_TYPE_INVALID, Cause, ExpandError
from apiserver.render.objects import ObjectLookup
from apiserver.render.vmcontroller import jsonpatch, revision
from apiserver.render.vmcontroller._go import JSON
from apiserver.render.vmcontroller.reconcile import settle
from apiserver.render.vmcontroller.sync import SyncResult, controller_config, decode_vmi, sync_pass
from apiserver.render.vmcontroller.volumemigration import UPDATE_STATE

LIVE = "live"
RESTART = "restart"
REFUSED = "refused"
ERROR = "error"
STOPPED = "stopped"
VERDICTS = (LIVE, RESTART, REFUSED, ERROR, STOPPED)


def _decode_vm(vm: Mapping[str, Any]) -> JSON:
    decoded: JSON = gojson.decode(vm, "VirtualMachine", exact_names=True)
    meta = decoded.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    return as_admitted(decoded)


def as_admitted(vm: JSON) -> JSON:
    """``vm`` (decoded) as the API server stores it: virt-api's VM mutating webhook (``VMsMutator.Mutate``,
    on every CREATE and UPDATE) replaces ``/spec`` with the spec as Go encodes it, so empty ``omitempty``
    maps and slices (``nodeSelector: {}``, ``tolerations: []``) are gone - nil to the VM controller, which
    then removes the VMI's member (a patch to null) rather than writing it empty. A pointer to an empty
    struct (``affinity: {}``) stays."""
    spec = vm.get("spec")
    if isinstance(spec, dict):
        vm["spec"] = gojson.decode(gojson.encode(spec, revision.SPEC), revision.SPEC)
    return vm


def start_spec_of(
    vm: JSON, *, start_vm: Mapping[str, Any] | None = None, start_revision: Mapping[str, Any] | None = None
) -> JSON | None:
    """The spec of the start revision: from the ControllerRevision ``start_revision`` (its ``data``), or
    as KubeVirt writes it for ``start_vm`` (the VM as it was started)."""
    if start_revision is not None:
        return revision.spec_from_data(start_revision.get("data"))
    if start_vm is None:
        return None
    started = gojson.decode(start_vm, "VirtualMachine", exact_names=True)
    return revision.start_spec(started)


def decide(
    vm: Mapping[str, Any],
    lookup: ObjectLookup,
    *,
    vmi: Mapping[str, Any] | None = None,
    start_vm: Mapping[str, Any] | None = None,
    start_revision: Mapping[str, Any] | None = None,
    kubevirt: Mapping[str, Any] | None = None,
    settled: bool = False,
) -> SyncResult:
    """KubeVirt's VM controller on ``vm`` (the VM as changed, status included) while ``vmi`` runs: one
    sync pass, or with ``settled`` the passes until the VM settles (:func:`.reconcile.settle`).

    Raises :class:`~apiserver.render.golang.gojson.GoDecodeError` for an input Go cannot decode, and
    :class:`~apiserver.render.objects.LookupPending` when ``lookup`` must fetch an object first."""
    decoded = _decode_vm(vm)
    spec = start_spec_of(decoded, start_vm=start_vm, start_revision=start_revision)
    running = decode_vmi(vmi) if vmi is not None else None
    if settled:
        return settle(decoded, running, spec, lookup, controller_config(kubevirt))
    return sync_pass(decoded, running, spec, lookup, controller_config(kubevirt))


@dataclass(slots=True)
class Preview:
    """The answer for one VM; :meth:`as_status` is its JSON form (the HTTP resource's ``status``)."""

    verdict: str
    message: str = ""
    patch: list[JSON] = field(default_factory=list)
    changes: list[JSON] = field(default_factory=list)
    live_updates: dict[str, Any] = field(default_factory=dict)
    vm_patches: dict[str, Any] = field(default_factory=dict)
    volume_update_state: JSON | None = None  # the VM's status.volumeUpdateState, as KubeVirt writes it
    sync_error: JSON | None = None
    refusal: JSON | None = None  # the Status the VM webhook (or the renderer) answers
    rollout_strategy: str = "LiveUpdate"
    warnings: list[str] = field(default_factory=list)
    not_modelled: list[str] = field(default_factory=list)
    running: JSON | None = None  # rendered VMs, when asked for
    proposed: JSON | None = None

    def as_status(self) -> JSON:
        out: JSON = {"verdict": self.verdict, "rolloutStrategy": self.rollout_strategy}
        if self.message:
            out["message"] = self.message
        out["patch"] = self.patch
        out["changes"] = self.changes
        if self.live_updates:
            out["liveUpdates"] = [{"path": p, "value": v} for p, v in self.live_updates.items()]
        if self.vm_patches:
            out["vmPatches"] = [{"path": p, "value": v} for p, v in self.vm_patches.items()]
        if self.volume_update_state is not None:
            out["volumeUpdateState"] = self.volume_update_state
        if self.sync_error is not None:
            out["syncError"] = self.sync_error
        if self.refusal is not None:
            out["refusal"] = self.refusal
        if self.warnings:
            out["warnings"] = self.warnings
        if self.not_modelled:
            out["notModelled"] = self.not_modelled
        if self.running is not None:
            out["running"] = self.running
        if self.proposed is not None:
            out["proposed"] = self.proposed
        return out


@contextmanager
def _reading(what: str) -> Iterator[None]:
    """A part of the running state Go cannot decode: a 422 naming it and the field."""
    try:
        yield
    except gojson.GoDecodeError as err:
        message = f"{what} cannot be read: {err}"
        raise ExpandError.invalid(message, Cause(err.path, message, CAUSE_TYPE_INVALID)) from None


def _render(vm: Mapping[str, Any], lookup: ObjectLookup, kubevirt: Mapping[str, Any] | None) -> JSON:
    return expand(vm, lookup, kubevirt=kubevirt, exact_names=True).vm


def _running_vm(current: JSON, start_spec: JSON | None) -> JSON:
    """The VM as it runs: the current VM's metadata with the start revision's spec (or the current VM)."""
    if start_spec is None:
        return current
    return {
        "apiVersion": current.get("apiVersion", "kubevirt.io/v1"),
        "kind": current.get("kind", "VirtualMachine"),
        "metadata": clone(current.get("metadata") or {}),
        "spec": gojson.encode(start_spec, revision.SPEC),
    }


def preview(
    proposed: Mapping[str, Any],
    lookup: ObjectLookup,
    *,
    current: Mapping[str, Any] | None = None,
    vmi: Mapping[str, Any] | None = None,
    start_vm: Mapping[str, Any] | None = None,
    start_revision: Mapping[str, Any] | None = None,
    kubevirt: Mapping[str, Any] | None = None,
    validate: bool = True,
    include_rendered: bool = False,
) -> Preview:
    """What ``proposed`` does to the VM that runs as ``start_vm``/``start_revision`` with ``vmi``.

    ``current`` is the VM as stored now (its status, conditions included, carries over to ``proposed``
    when that has no ``status`` member); the rendered difference is taken from the start revision when there is one,
    else from ``current``. ``validate``: run the VM webhook on ``proposed`` first (a refusal is the
    verdict ``refused``). Raises :class:`~apiserver.render.objects.LookupPending` when ``lookup`` must
    fetch an object first, and :class:`ExpandError` for a VM that cannot be read at all."""
    config = controller_config(kubevirt)
    proposed_vm: JSON = dict(proposed)
    if current is not None and "status" not in proposed_vm and current.get("status"):
        proposed_vm["status"] = current["status"]
    result = Preview(verdict=LIVE, rollout_strategy=config.rollout_strategy)
    try:
        rendered_new = expand(proposed_vm, lookup, kubevirt=kubevirt, exact_names=True, validate=validate)
    except AdmissionDenied as denied:
        result.verdict = REFUSED
        result.refusal = denied.status
        return result
    except ExpandError as err:
        result.verdict = ERROR
        result.refusal = err.status
        return result
    result.warnings = list(rendered_new.warnings)
    decoded = _decode_vm(proposed_vm)
    with _reading("the VM as started" if start_revision is None else "the start revision"):
        start_spec = start_spec_of(decoded, start_vm=start_vm, start_revision=start_revision)
    base_source: Mapping[str, Any] | None = None
    if start_spec is not None:
        base_source = _running_vm(dict(current or proposed_vm), start_spec)
    elif current is not None:
        base_source = current
    if base_source is not None:
        try:
            rendered_old = _render(base_source, lookup, kubevirt)
        except ExpandError as err:
            result.warnings.append(f"the running VM cannot be rendered: {err.message}")
            rendered_old = None
    else:
        rendered_old = None
    new_vm = rendered_new.vm
    if rendered_old is not None:
        old_spec, new_spec = rendered_old.get("spec") or {}, new_vm.get("spec") or {}
        result.patch = [{**op, "path": "/spec" + op["path"]} for op in jsonpatch.diff(old_spec, new_spec)]
        result.changes = [{**c, "path": "/spec" + c["path"]} for c in jsonpatch.changes(old_spec, new_spec)]
    if include_rendered:
        result.running = rendered_old
        result.proposed = new_vm
    if vmi is None:
        result.verdict = STOPPED
        return result
    with _reading("the running VMI"):
        running = decode_vmi(vmi)
    sync = settle(decoded, running, start_spec, lookup, config)
    result.live_updates = sync.live_updates
    result.vm_patches = sync.vm_patches
    result.volume_update_state = volume_update_state(sync)
    result.not_modelled = sync.not_modelled
    result.message = sync.message
    if sync.sync_error_reason:
        result.sync_error = {"reason": sync.sync_error_reason, "message": sync.sync_error}
    if sync.restart_required:
        result.verdict = RESTART
    elif sync.sync_error_reason:
        result.verdict = ERROR
    return result


def propose(
    current: Mapping[str, Any],
    *,
    instancetype: Mapping[str, Any] | None = None,
    preference: Mapping[str, Any] | None = None,
    upgrade: bool = False,
) -> JSON:
    """``current`` changed as named: another instancetype or preference (``{"name", "kind"}``), and/or
    ``upgrade`` (take the latest: the live objects instead of the revisions the VM captured)."""
    vm: JSON = clone(dict(current))
    spec = vm.setdefault("spec", {})
    status = vm.get("status") if isinstance(vm.get("status"), dict) else None
    for member, ref, given in (
        ("instancetype", "instancetypeRef", instancetype),
        ("preference", "preferenceRef", preference),
    ):
        if given is not None:
            spec[member] = {k: given[k] for k in ("name", "kind") if given.get(k)}
        elif upgrade and isinstance(spec.get(member), dict):
            spec[member] = {k: v for k, v in spec[member].items() if k != "revisionName"}
        else:
            continue
        if status is not None:
            status.pop(ref, None)
    return vm


def oracle_answer(result: SyncResult) -> JSON:
    """``result`` in the shape KubeVirt's ``expand-restart`` oracle answers (the fields compared)."""
    out: JSON = {
        "restartRequired": result.restart_required,
        "message": result.message if result.restart_required else None,
        "outcome": result.outcome,
        "liveUpdates": result.live_updates,
    }
    if result.vm_patches:
        out["vmPatches"] = result.vm_patches
    if result.sync_error_reason:
        out["syncErrorReason"] = result.sync_error_reason
        out["syncError"] = result.sync_error
    state = volume_update_state(result)
    if state is not None:
        out["vmStatus"] = {"volumeUpdateState": state}
    return out


def volume_update_state(result: SyncResult) -> JSON | None:
    """The ``status.volumeUpdateState`` of the VM the sync returns (Go-encoded), None when it has none."""
    state = ((result.vm or {}).get("status") or {}).get("volumeUpdateState")
    return None if state is None else gojson.encode(state, UPDATE_STATE)
