"""``kubevirt-expand preview --catalog-before A --catalog-after B -f FLEET``: what a catalog change does to
every VM of a fleet before the catalog is applied.

KubeVirt tells after the fact: a VM keeps the instancetype and preference it captured in
ControllerRevisions when it started, and an edited (or upgraded) catalog shows only when the VM is
upgraded (its revision references dropped) or restarted. This previews that upgrade for every VM at
once: each VM is taken as started under catalog A (its objects captured, as :mod:`.preview` does for one
folder against another), then upgraded to catalog B, with the engine the server's
``VirtualMachineChangePreview`` runs. Only VMs that name an object the change touches (added, removed or
edited) are rendered: the others cannot change, so a large fleet against a small change is quick.

Per VM: the verdict (``unaffected``, ``unchanged``, ``live``, ``restart`` with KubeVirt's
RestartRequired message, ``stopped``: applies at the next start, ``refused`` by KubeVirt's VM webhook,
``error``), the rendered change, and its virt-launcher pod's requests before and after. KubeVirt takes an
upgrade through the VM's status (the revision references dropped), which the VM webhook does not see: a
``refused`` VM is upgraded all the same (its ``upgrade`` member says how: live, restart, ...), and it is
its next write that the webhook refuses (an edit, a start of a halted VM). Per namespace: the
change in requested CPU and memory, and whether its ResourceQuotas still hold once the running VMs
restart with their new pods.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiserver.cli.inputs import (
    DEFAULT_NAMESPACE,
    UsageError,
    is_vm,
    pick_kubevirt,
    read_catalog,
    read_kubevirt,
)
from apiserver.cli.output import json_line, printable, to_yaml
from apiserver.documents.manifests import ManifestError, read_manifest_paths
from apiserver.render import ExpandError, ObjectIndex, expand
from apiserver.render.kubernetes.quantity import cmp
from apiserver.render.kubernetes.quantitymath import (
    ResourceList,
    add,
    resource_list,
    resource_text,
    sub,
    zero,
)
from apiserver.render.kubernetes.quota import Pod, pod_usage
from apiserver.render.launcher import cluster_inputs, launch
from apiserver.render.objects import CLUSTER_SCOPED_KINDS, ObjectRef, canonical_kind, ref_of
from apiserver.render.virtconfig import cluster_config
from apiserver.render.vmcontroller.assumedvmi import assumed_vmi
from apiserver.render.vmcontroller.preview import ERROR, REFUSED, RESTART, STOPPED, preview
from apiserver.render.vmcontroller.sync import controller_config

UNAFFECTED, UNCHANGED = "unaffected", "unchanged"
ADDED, REMOVED, EDITED = "added", "removed", "edited"
EXIT_OK, EXIT_CHANGED, EXIT_UNUSABLE = 0, 1, 2
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
        if counts.get(RESTART, 0) + counts.get(REFUSED, 0) + counts.get(ERROR, 0):
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


def _captured_revision(namespace: str, obj: Mapping[str, Any]) -> dict[str, Any]:
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
        self.before = ObjectIndex([*objects, *before])
        self.after = ObjectIndex([*objects, *after])
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

    def started(self, vm: dict[str, Any], namespace: str) -> dict[str, Any]:
        """``vm`` as the instancetype controller leaves it once started under the first catalog: each
        matcher's object captured (in both indexes: revisions outlive a catalog change) and
        ``status`` pointing at it."""
        status = vm.setdefault("status", {})
        for member, (namespaced, cluster, status_ref) in _MATCHERS.items():
            matcher = (vm.get("spec") or {}).get(member)
            if not isinstance(matcher, dict) or matcher.get("revisionName") or not matcher.get("name"):
                continue
            given = canonical_kind(str(matcher.get("kind") or cluster))
            kind = namespaced if given.lower().rstrip("s") == namespaced.lower() else cluster
            ref = ObjectRef(kind, "" if kind in CLUSTER_SCOPED_KINDS else namespace, matcher["name"])
            obj = self.before.get(ref)
            if obj is None:
                continue
            revision = self._revisions.get((namespace, ref))
            if revision is None:
                revision = self._revisions[(namespace, ref)] = _captured_revision(namespace, obj)
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


def _preview_vm(fleet: _Fleet, vm: Mapping[str, Any], namespace: str, name: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"namespace": namespace, "name": name, "running": is_running(vm)}
    stored = fleet.stored(vm)
    started = fleet.started(json.loads(json.dumps(stored)), namespace)
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
        "requestsChange": {k: _signed(q) for k, q in sorted(delta_requests.items()) if cmp(q, zero()) != 0},
    }
    quotas = fleet.after.of_kind("ResourceQuota", namespace)
    if quotas and changes:
        out["quotas"] = [_quota(fleet, q, namespace, delta_usage, vms) for q in quotas]
    return out


def _signed(q: Any) -> str:
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
        started = fleet.started(fleet.stored(vm), namespace)
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


@dataclass(slots=True)
class _FleetFiles:
    vms: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)
    kubevirts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def read_fleet(paths: Sequence[str], namespace: str) -> _FleetFiles:
    """The fleet's VMs (by namespace and name) and its other objects, an object without a namespace taken
    as ``namespace``'s."""
    fleet = _FleetFiles()
    for source, obj in read_manifest_paths(list(paths)):
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            continue
        if obj.get("kind") not in CLUSTER_SCOPED_KINDS and not meta.get("namespace"):
            meta["namespace"] = namespace
        if obj.get("kind") == "KubeVirt":
            fleet.kubevirts.append((source, obj))
        elif is_vm(obj):
            fleet.vms[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = obj
        else:
            fleet.objects.append(obj)
    return fleet


def _text_lines(entry: Mapping[str, Any]) -> list[str]:
    line = f"{entry['namespace']}/{entry['name']}: {entry['verdict']}"
    if entry.get("message"):
        line += f" ({entry['message']})"
    elif entry.get("refusal"):
        line += f" ({entry['refusal'].get('message', '')})"
    lines = [printable(line)]
    upgrade = entry.get("upgrade")
    if upgrade:
        said = f" ({upgrade['message']})" if upgrade.get("message") else ""
        lines.append(printable(f"  upgraded all the same (its status): {upgrade['verdict']}{said}"))
    for change in entry.get("changes") or (upgrade or {}).get("changes") or ():
        old = json.dumps(change["old"]) if "old" in change else "(none)"
        new = json.dumps(change["new"]) if "new" in change else "(none)"
        lines.append(printable(f"  {change['path']}: {old} -> {new}"))
    requests = entry.get("requests")
    if requests:
        moved = [
            f"{k} {requests['before'].get(k, '0')} -> {requests['after'].get(k, '0')}"
            for k in sorted(requests["before"].keys() | requests["after"].keys())
            if requests["before"].get(k) != requests["after"].get(k)
        ]
        lines.append(printable(f"  pod requests: {', '.join(moved)}"))
    return lines


def _namespace_lines(ns: Mapping[str, Any]) -> list[str]:
    moved = ", ".join(f"{k} {v}" for k, v in ns["requestsChange"].items()) or "no change"
    lines = [f"namespace {ns['namespace']}: {ns['affected']} of {ns['vms']} VMs affected; requests {moved}"]
    for q in ns.get("quotas", ()):
        if q["fits"]:
            lines.append(f"  quota {q['name']}: still fits")
        else:
            over = ", ".join(f"{k} {q['usedAfter'][k]} > {q['hard'][k]}" for k in q["exceeds"])
            lines.append(f"  quota {q['name']}: exceeded once the running VMs restart ({over})")
    return [printable(line) for line in lines]


def _as_json(answer: FleetChange) -> dict[str, Any]:
    return {
        "changedObjects": [
            {"kind": ref.kind, "namespace": ref.namespace, "name": ref.name, "change": how}
            for ref, how in answer.changed.items()
        ],
        "items": answer.entries,
        "namespaces": answer.namespaces,
    }


def write(answer: FleetChange, output: str, *, everything: bool = False) -> None:
    """``text`` leaves out the VMs the change does not touch unless ``everything``."""
    out = sys.stdout
    if output == "jsonl":
        for entry in answer.entries:
            out.write(json_line({"kind": "VirtualMachine", **entry}) + "\n")
        for ns in answer.namespaces:
            out.write(json_line({"kind": "Namespace", **ns}) + "\n")
    elif output == "json":
        out.write(json.dumps(_as_json(answer), indent=2) + "\n")
    elif output == "yaml":
        out.write(to_yaml(_as_json(answer)))
    else:
        for ref, how in answer.changed.items():
            where = f"{ref.namespace}/" if ref.namespace else ""
            out.write(printable(f"{how}: {ref.kind} {where}{ref.name}") + "\n")
        for entry in answer.entries:
            if everything or entry["verdict"] != UNAFFECTED:
                out.write("\n".join(_text_lines(entry)) + "\n")
        for ns in answer.namespaces:
            out.write("\n".join(_namespace_lines(ns)) + "\n")
    out.flush()


def summary(answer: FleetChange, seconds: float) -> str:
    """The line a reviewer reads in a pull request."""
    how: dict[str, int] = {}
    for kind in answer.changed.values():
        how[kind] = how.get(kind, 0) + 1
    objects = ", ".join(f"{n} {k}" for k, n in sorted(how.items())) or "none"
    counts = ", ".join(f"{n} {v}" for v, n in sorted(answer.counts().items()))
    broken = sum(1 for ns in answer.namespaces for q in ns.get("quotas", ()) if not q["fits"])
    vms = "1 VM" if len(answer.entries) == 1 else f"{len(answer.entries)} VMs"
    quotas = f"; {broken} quota{'s' if broken != 1 else ''} exceeded" if broken else ""
    return f"catalog change: objects {objects}; {vms}: {counts}{quotas} ({seconds:.2f} s)"


def run(args: argparse.Namespace) -> int:
    """``preview --catalog-before/--catalog-after -f``: exit 0 when nothing needs a look, 1 when a VM
    needs a restart, is refused or fails, or a quota breaks; 2 for unusable input."""
    started = time.perf_counter()
    if args.before or args.after:
        raise UsageError(
            "--catalog-before/--catalog-after preview a catalog change: leave out --before/--after"
        )
    if not (args.catalog_before and args.catalog_after):
        raise UsageError("give both --catalog-before and --catalog-after")
    if not args.filename:
        raise UsageError("give the fleet with -f FILE|DIR (its VirtualMachines, Namespaces, ResourceQuotas)")
    namespace = args.namespace or DEFAULT_NAMESPACE
    try:
        fleet = read_fleet(args.filename, namespace)
        before = read_catalog(args.catalog_before, namespace=namespace)
        after = read_catalog(args.catalog_after, namespace=namespace)
        kubevirt = (
            read_kubevirt(args.kubevirt, sys.stdin)
            if args.kubevirt
            else pick_kubevirt([*fleet.kubevirts, *after.kubevirts])
        )
    except ManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    if not fleet.vms:
        print(f"error: no VirtualMachine in {', '.join(args.filename)}", file=sys.stderr)
        return EXIT_UNUSABLE
    answer = preview_catalog_change(
        fleet.vms,
        fleet.objects,
        before.objects,
        after.objects,
        kubevirt,
        arch=args.arch,
        assume_pvcs=args.assume_pvcs,
    )
    try:
        write(answer, args.output, everything=args.all)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    print(summary(answer, time.perf_counter() - started), file=sys.stderr)
    return EXIT_CHANGED if answer.failing() else EXIT_OK
