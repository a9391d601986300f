"""A catalog change across a fleet: what changing the instancetypes and preferences ``before`` into
``after`` does to every VM, before the change is applied.

Puts the pieces together for a caller (no KubeVirt function of its own), as :mod:`.vmcontroller.preview`
does for one VM. KubeVirt tells after the fact: a VM keeps the instancetype and preference it captured in
ControllerRevisions when it started, and an edited (or upgraded) catalog shows only when the VM is
upgraded (its revision references dropped) or restarted. Here each VM is taken as started under
``before`` (its objects captured, as the instancetype controller captures them), then upgraded to
``after`` with the change preview (:func:`.vmcontroller.preview.preview`), and its virt-launcher pod
rendered both ways (:func:`.launcher.launch`). Only VMs that name an object the change touches (added,
removed or edited) are rendered: the others cannot change, so a large fleet against a small change is
quick.

Per VM: the verdict (``unaffected``, ``unchanged``, ``live``, ``restart`` with KubeVirt's
RestartRequired message, ``stopped``: applies at the next start, ``refused`` by KubeVirt's VM webhook,
``error``), the rendered change, and its pod's requests before and after. KubeVirt takes an upgrade
through the VM's status (the revision references dropped), which the VM webhook does not see: a
``refused`` VM is upgraded all the same (its ``upgrade`` member says how: live, restart, ...), and it is
its next write that the webhook refuses (an edit, a start of a halted VM). Per namespace: the change in
requested CPU and memory, and whether its ResourceQuotas still hold once the running VMs restart with
their new pods.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.admission import AdmissionDenied
from apiserver.render.expand import expand
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.kubernetes.quantity import Quantity, cmp
from apiserver.render.kubernetes.quantitymath import (
    ResourceList,
    add,
    new_quantity,
    resource_list,
    resource_text,
    sub,
    value,
    zero,
)
from apiserver.render.kubernetes.quota import Pod, pod_usage
from apiserver.render.launcher import cluster_inputs, launch
from apiserver.render.objects import CLUSTER_SCOPED_KINDS, ObjectIndex, ObjectRef, canonical_kind, ref_of
from apiserver.render.virtconfig import cluster_config
from apiserver.render.vmcontroller.assumedvmi import assumed_vmi
from apiserver.render.vmcontroller.preview import ERROR, REFUSED, RESTART, STOPPED, preview
from apiserver.render.vmcontroller.sync import controller_config

UNAFFECTED, UNCHANGED = "unaffected", "unchanged"
ADDED, REMOVED, EDITED = "added", "removed", "edited"
_MATCHERS = {
    "instancetype": ("VirtualMachineInstancetype", "VirtualMachineClusterInstancetype", "instancetypeRef"),
    "preference": ("VirtualMachinePreference", "VirtualMachineClusterPreference", "preferenceRef"),
}
# The kinds a VM captures in a ControllerRevision: of these only the spec counts (below). Other catalog
# objects (presets, revisions) are compared whole but for their server-written metadata.
_CAPTURED_KINDS = frozenset(kind for matcher in _MATCHERS.values() for kind in matcher[:2])
_KEPT_METADATA = ("name", "namespace", "labels", "annotations")
_RUNNING_STRATEGIES = ("Always", "RerunOnFailure")
# What a refused VM's entry says of the upgrade KubeVirt takes all the same.
_UPGRADE_MEMBERS = ("verdict", "message", "patch", "changes", "liveUpdates", "syncError")
_REVISION = "ControllerRevision"


def _status(vm: Mapping[str, Any]) -> Mapping[str, Any] | None:
    status = vm.get("status")
    return status if isinstance(status, Mapping) else None


@dataclass(slots=True)
class FleetChange:
    """The answer: one entry per VM (in namespace and name order), one per namespace, and the objects the
    change touches."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    changed: dict[ObjectRef, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entry in self.entries:
            counts[entry["verdict"]] = counts.get(entry["verdict"], 0) + 1
        return counts

    def failing(self) -> bool:
        """Whether a reviewer must look: a VM needs a restart, is refused or fails, or a quota breaks."""
        counts = self.counts()
        if counts.get(RESTART, 0) + counts.get(ERROR, 0):
            return True
        if any(e["verdict"] == REFUSED and not e.get("refusedBefore") for e in self.entries):
            return True
        return any(not q["fits"] for ns in self.namespaces for q in ns.get("quotas", ()))


def _content(obj: Mapping[str, Any]) -> str:
    """What of ``obj`` a VM can see. Of an instancetype or preference, its spec: the revision KubeVirt
    captures drops its labels and annotations (``revision.CreateControllerRevision``), and an edit of
    them alone gives the object no new generation, so an upgraded VM captures it again under the same
    revision name. Of another object, all but resourceVersion, managedFields and status, which change
    without the object changing."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in _KEPT_METADATA if isinstance(meta, Mapping) and k in meta}
    if canonical_kind(str(obj.get("kind", ""))) in _CAPTURED_KINDS:
        kept = {}
    body = {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion")}
    return json.dumps({"metadata": kept, **body}, sort_keys=True)


def changed_objects(
    before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]
) -> dict[ObjectRef, str]:
    """Each object the change adds, removes or edits (by ref), and which of the three."""
    old = {ref: _content(o) for o in before if (ref := ref_of(o)) is not None}
    new = {ref: _content(o) for o in after if (ref := ref_of(o)) is not None}
    changed = {ref: REMOVED for ref in old.keys() - new.keys()}
    changed.update({ref: ADDED for ref in new.keys() - old.keys()})
    changed.update({ref: EDITED for ref in old.keys() & new.keys() if old[ref] != new[ref]})
    return dict(sorted(changed.items()))


def used_objects(vm: Mapping[str, Any], namespace: str) -> set[ObjectRef] | None:
    """The instancetype and preference ``vm`` names, or None when the name comes from elsewhere (inferred
    from a volume): then any change may touch it."""
    spec = vm.get("spec") or {}
    used = set()
    for member, (namespaced, cluster, _) in _MATCHERS.items():
        matcher = spec.get(member) if isinstance(spec, Mapping) else None
        if not isinstance(matcher, Mapping):
            continue
        if matcher.get("inferFromVolume"):
            return None
        name = matcher.get("name")
        if not isinstance(name, str) or not name:
            continue
        given = canonical_kind(str(matcher.get("kind") or cluster))
        kind = namespaced if given.lower().rstrip("s") == namespaced.lower() else cluster
        used.add(ObjectRef(kind, "" if kind in CLUSTER_SCOPED_KINDS else namespace, name))
    return used


def is_running(vm: Mapping[str, Any]) -> bool:
    """Whether the VM runs: its VMI exists (``status.created``, as ``kubectl get -o yaml`` prints a live
    VM), or, for a VM as written (no status), its run strategy starts it."""
    status = vm.get("status")
    if isinstance(status, Mapping) and status:
        return status.get("created") is True
    spec = vm.get("spec") or {}
    if spec.get("running") is True:
        return True
    return spec.get("runStrategy") in _RUNNING_STRATEGIES


def captured_revision(namespace: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """A ControllerRevision as the instancetype controller stores ``obj`` for the VMs of a namespace."""
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": f"captured-{str(obj.get('kind', '')).lower()}-{meta.get('name', '')}",
            "namespace": namespace,
            "labels": {
                "instancetype.kubevirt.io/object-name": meta.get("name", ""),
                "instancetype.kubevirt.io/object-kind": obj.get("kind", ""),
            },
        },
        "data": dict(obj),
        "revision": 0,
    }


def versioned(objects: Sequence[Mapping[str, Any]], side: str) -> list[Mapping[str, Any]]:
    """``objects``, each with a uid and resourceVersion if it has none: they do not change during the
    run, so the renderer's memos decode each instancetype and preference once (:mod:`apiserver.render.memo`)
    instead of once per VM."""
    out: list[Mapping[str, Any]] = []
    for n, obj in enumerate(objects):
        meta = obj.get("metadata")
        if isinstance(meta, Mapping) and not (meta.get("uid") and meta.get("resourceVersion")):
            obj = {**obj, "metadata": {**meta, "uid": f"{side}-{n}", "resourceVersion": "1"}}
        out.append(obj)
    return out


class _Fleet:
    """The fleet's objects under both catalogs, the revisions the VMs captured under the first, and the
    cluster's configuration: what every VM's preview reads."""

    def __init__(
        self,
        objects: Sequence[Mapping[str, Any]],
        before: Sequence[Mapping[str, Any]],
        after: Sequence[Mapping[str, Any]],
        kubevirt: Mapping[str, Any] | None,
        *,
        arch: str | None,
        assume_pvcs: bool,
        migratable: bool = True,
    ) -> None:
        self.objects = objects
        self.migratable = migratable
        # the catalog wins over a copy of the same object among the fleet's files
        self.before = ObjectIndex(versioned([*objects, *before], "before"))
        self.after = ObjectIndex(versioned([*objects, *after], "after"))
        self.kubevirt = kubevirt
        self.config = controller_config(kubevirt)
        self.arch = arch or cluster_config(kubevirt).default_architecture or "amd64"
        self.assume_pvcs = assume_pvcs
        self._revisions: dict[tuple[str, ObjectRef], dict[str, Any]] = {}
        self._cluster: dict[str, dict[str, Any]] = {}

    def stored(self, vm: Mapping[str, Any]) -> dict[str, Any]:
        """``vm`` as the VM webhook stores it (the template's architecture defaulted), status dropped."""
        copy: dict[str, Any] = json.loads(json.dumps({k: v for k, v in vm.items() if k != "status"}))
        tspec = ((copy.get("spec") or {}).get("template") or {}).get("spec")
        if isinstance(tspec, dict) and not tspec.get("architecture"):
            tspec["architecture"] = cluster_config(self.kubevirt).default_architecture
        return copy

    def started(
        self, vm: dict[str, Any], namespace: str, recorded: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """``vm`` as the instancetype controller leaves it once started under the first catalog: each
        matcher's object captured (in both indexes: revisions outlive a catalog change) and
        ``status`` pointing at it. ``recorded``: the VM's status as a cluster holds it; a revision it
        points to that the fleet holds is the one the VM runs with (it may predate the catalog), kept."""
        status = vm.setdefault("status", {})
        for member, (namespaced, cluster, status_ref) in _MATCHERS.items():
            matcher = (vm.get("spec") or {}).get(member)
            if not isinstance(matcher, dict) or matcher.get("revisionName") or not matcher.get("name"):
                continue
            held = (recorded or {}).get(status_ref)
            held_name = ((held or {}).get("controllerRevisionRef") or {}).get("name")
            if isinstance(held_name, str) and self.before.get(ObjectRef(_REVISION, namespace, held_name)):
                status[status_ref] = dict(held or {})
                continue
            given = canonical_kind(str(matcher.get("kind") or cluster))
            kind = namespaced if given.lower().rstrip("s") == namespaced.lower() else cluster
            ref = ObjectRef(kind, "" if kind in CLUSTER_SCOPED_KINDS else namespace, matcher["name"])
            obj = self.before.get(ref)
            if obj is None:
                continue
            revision = self._revisions.get((namespace, ref))
            if revision is None:
                revision = captured_revision(namespace, obj)
                revision["metadata"].update(uid=f"captured-{len(self._revisions)}", resourceVersion="1")
                self._revisions[(namespace, ref)] = revision
                self.before.add(revision)
                self.after.add(revision)
            status[status_ref] = {
                "name": matcher["name"],
                "kind": matcher.get("kind", ""),
                "controllerRevisionRef": {"name": revision["metadata"]["name"]},
            }
        return vm

    def cluster(self, namespace: str) -> dict[str, Any]:
        inputs = self._cluster.get(namespace)
        if inputs is None:
            inputs = self._cluster[namespace] = cluster_inputs(self.objects, namespace)
        return inputs

    def pod(
        self, vm: Mapping[str, Any], index: ObjectIndex, namespace: str, written: Mapping[str, Any]
    ) -> Any:
        """The virt-launcher pod's resources of ``vm`` rendered against ``index``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rendered = expand(vm, index, kubevirt=self.kubevirt, exact_names=False)
        return launch(
            rendered.vm,
            self.kubevirt,
            arch=self.arch,
            assume_pvcs=self.assume_pvcs,
            **self.cluster(namespace),
            written=written,
            preference=rendered.preference,
        ).pod.to_json()


def _upgraded(started: Mapping[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """The VM once upgraded as KubeVirt takes an upgrade: its revision references dropped, so the
    instancetype controller captures the objects as they are now."""
    proposed: dict[str, Any] = json.loads(json.dumps(stored))
    status = proposed.setdefault("status", dict(started.get("status") or {}))
    for member, (_, _, status_ref) in _MATCHERS.items():
        status.pop(status_ref, None)
        matcher = (proposed.get("spec") or {}).get(member)
        if isinstance(matcher, dict):
            matcher.pop("revisionName", None)
    return proposed


def _requests(pod: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((pod or {}).get("total") or {}).get("requests") or {})


def _pod(pod: Mapping[str, Any], label: str) -> Pod:
    total = pod.get("total") or {}
    return Pod(label, resource_list(total.get("requests")), resource_list(total.get("limits")))


def _refused(fleet: _Fleet, started: Mapping[str, Any]) -> bool:
    """Whether KubeVirt's VM webhook refuses ``started`` under the first catalog."""
    try:
        expand(started, fleet.before, kubevirt=fleet.kubevirt, exact_names=True, validate=True)
    except AdmissionDenied:
        return True
    except ExpandError:
        return False
    return False


def _preview_vm(fleet: _Fleet, vm: Mapping[str, Any], namespace: str, name: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"namespace": namespace, "name": name, "running": is_running(vm)}
    stored = fleet.stored(vm)
    started = fleet.started(json.loads(json.dumps(stored)), namespace, _status(vm))
    try:
        entry["_before"] = fleet.pod(started, fleet.before, namespace, vm)
        vmi = None
        if entry["running"]:
            rendered = expand(started, fleet.before, kubevirt=fleet.kubevirt, exact_names=True).vm
            vmi = assumed_vmi(rendered, fleet.kubevirt, live_update=fleet.config.live_update)
            if not fleet.migratable:
                for condition in vmi["status"]["conditions"]:
                    if condition["type"] == "LiveMigratable":
                        condition["status"] = "False"
    except ExpandError as err:
        entry.update(verdict=ERROR, message=f"the VM as it is cannot be rendered: {err.message}")
        return entry
    proposed = _upgraded(started, stored)
    result = preview(
        proposed, fleet.after, current=started, vmi=vmi, start_vm=started, kubevirt=fleet.kubevirt
    )
    verdict = result.verdict
    if verdict in ("live", STOPPED) and not result.patch:
        verdict = UNCHANGED
    entry.update(result.as_status())
    entry["verdict"] = verdict
    if verdict == REFUSED and _refused(fleet, started):
        # Not the change's doing: KubeVirt's webhook refuses the VM's next write under the first catalog
        # too (a VM upgraded through its status earlier runs so): said, not held against the change.
        entry["refusedBefore"] = True
    if verdict == REFUSED:
        # KubeVirt takes the upgrade through the VM's status, which its VM webhook does not see: the VM is
        # upgraded all the same (live, or RestartRequired), and it is its next write that is refused.
        taken = preview(
            proposed,
            fleet.after,
            current=started,
            vmi=vmi,
            start_vm=started,
            kubevirt=fleet.kubevirt,
            validate=False,
        )
        upgrade = {k: v for k, v in taken.as_status().items() if k in _UPGRADE_MEMBERS}
        if taken.verdict in ("live", STOPPED) and not taken.patch:
            upgrade["verdict"] = UNCHANGED
        entry["upgrade"] = upgrade
    if verdict != ERROR and entry.get("upgrade", {}).get("verdict") != ERROR:
        try:
            entry["_after"] = fleet.pod(proposed, fleet.after, namespace, vm)
        except ExpandError as err:
            entry.update(verdict=ERROR, message=f"the VM once upgraded cannot be launched: {err.message}")
    if "_after" in entry:
        before, after = _requests(entry["_before"]), _requests(entry["_after"])
        if before != after:
            entry["requests"] = {"before": before, "after": after}
    return entry


def _namespace(
    fleet: _Fleet,
    namespace: str,
    entries: Sequence[dict[str, Any]],
    vms: Mapping[tuple[str, str], Mapping[str, Any]],
) -> dict[str, Any]:
    """The namespace's change in requests, and its quotas once its running VMs restart with new pods."""
    delta_requests: ResourceList = {}
    delta_usage: ResourceList = {}
    changes = 0
    for entry in entries:
        if "_before" not in entry or "_after" not in entry:
            continue
        old, new = _pod(entry["_before"], "before"), _pod(entry["_after"], "after")
        if old.requests == new.requests and old.limits == new.limits:
            continue
        changes += 1
        for key in old.requests.keys() | new.requests.keys():
            moved = sub(new.requests.get(key, zero()), old.requests.get(key, zero()))
            delta_requests[key] = add(delta_requests.get(key, zero()), moved)
        if entry["running"]:
            old_use, new_use = pod_usage(old), pod_usage(new)
            for key in old_use.keys() | new_use.keys():
                moved = sub(new_use.get(key, zero()), old_use.get(key, zero()))
                delta_usage[key] = add(delta_usage.get(key, zero()), moved)
    out: dict[str, Any] = {
        "namespace": namespace,
        "vms": len(entries),
        "affected": sum(1 for e in entries if e["verdict"] != UNAFFECTED),
        "costChanges": changes,
        "requestsChange": {
            k: _signed(k, q) for k, q in sorted(delta_requests.items()) if cmp(q, zero()) != 0
        },
    }
    quotas = fleet.after.of_kind("ResourceQuota", namespace)
    if quotas and changes:
        out["quotas"] = [_quota(fleet, q, namespace, delta_usage, vms) for q in quotas]
    return out


def _signed(name: str, q: Quantity) -> str:
    """``+6Gi``: bytes in the binary units memory is written in, whatever format the sum kept."""
    if "memory" in name or "storage" in name or name.startswith("hugepages-"):
        q = new_quantity(value(q), "BinarySI")
    text = q.canonical()
    return text if text.startswith("-") else f"+{text}"


def _running_usage(
    fleet: _Fleet, namespace: str, vms: Mapping[tuple[str, str], Mapping[str, Any]]
) -> ResourceList:
    """What the running VMs of ``namespace`` use under the first catalog, for a quota that has no
    ``status.used`` (written by hand rather than read from a cluster)."""
    used: ResourceList = {}
    for (ns, _), vm in vms.items():
        if ns != namespace or not is_running(vm):
            continue
        started = fleet.started(fleet.stored(vm), namespace, _status(vm))
        try:
            pod = fleet.pod(started, fleet.before, namespace, vm)
        except ExpandError:
            continue
        for key, q in pod_usage(_pod(pod, "")).items():
            used[key] = add(used.get(key, zero()), q)
    return used


def _quota(
    fleet: _Fleet,
    quota: Mapping[str, Any],
    namespace: str,
    delta: ResourceList,
    vms: Mapping[tuple[str, str], Mapping[str, Any]],
) -> dict[str, Any]:
    hard = resource_list((quota.get("spec") or {}).get("hard"))
    status_used = (quota.get("status") or {}).get("used")
    used = resource_list(status_used) if status_used else _running_usage(fleet, namespace, vms)
    used = {k: v for k, v in used.items() if k in hard}
    after = {k: add(used.get(k, zero()), delta[k]) for k in hard if k in delta}
    over = sorted(k for k, q in after.items() if cmp(q, hard[k]) > 0)
    out: dict[str, Any] = {
        "name": str((quota.get("metadata") or {}).get("name") or ""),
        "hard": resource_text(hard),
        "used": resource_text(used),
        "usedAfter": resource_text({**used, **after}),
        "fits": not over,
    }
    if over:
        out["exceeds"] = over
    return out


def preview_catalog_change(
    vms: Mapping[tuple[str, str], Mapping[str, Any]],
    objects: Sequence[Mapping[str, Any]],
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    kubevirt: Mapping[str, Any] | None,
    *,
    arch: str | None = None,
    assume_pvcs: bool = False,
    migratable: bool = True,
) -> FleetChange:
    """What changing the catalog ``before`` into ``after`` does to each of ``vms`` (by namespace and
    name), given the fleet's other ``objects`` (Namespaces, ResourceQuotas, PVCs, DataSources).
    ``migratable``: whether the running VMs can be live-migrated (KubeVirt hot-plugs memory only into
    those); False for a cluster whose VMs cannot be, such as a control plane without virt-handler."""
    answer = FleetChange(changed=changed_objects(before, after))
    fleet = _Fleet(
        objects, before, after, kubevirt, arch=arch, assume_pvcs=assume_pvcs, migratable=migratable
    )
    touched = set(answer.changed)
    for (namespace, name), vm in sorted(vms.items()):
        used = used_objects(vm, namespace)
        if used is not None and not used & touched:
            answer.entries.append(
                {"namespace": namespace, "name": name, "running": is_running(vm), "verdict": UNAFFECTED}
            )
            continue
        answer.entries.append(_preview_vm(fleet, vm, namespace, name))
    namespaces = sorted({e["namespace"] for e in answer.entries})
    for namespace in namespaces:
        mine = [e for e in answer.entries if e["namespace"] == namespace]
        summary = _namespace(fleet, namespace, mine, vms)
        if summary["affected"]:
            answer.namespaces.append(summary)
    for entry in answer.entries:
        entry.pop("_before", None)
        entry.pop("_after", None)
    return answer
