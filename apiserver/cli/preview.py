"""``kubevirt-expand preview``: what changing one folder of manifests into another does to each VM.

Two checkouts of a repository (or ``git worktree``): every VM of ``--before`` is taken as running as
KubeVirt would run it from those files (started from them: its instancetype and preference captured as
ControllerRevisions, its VMI as KubeVirt's VMI webhook makes it, see
:mod:`apiserver.render.vmcontroller.assumedvmi`), and every VM of ``--after`` is previewed against it
with the engine the server's ``VirtualMachineChangePreview`` runs (:mod:`apiserver.render.vmcontroller`).
As in a cluster, a VM keeps the instancetype and preference revisions it captured: an edited
instancetype changes no running VM unless ``--upgrade`` previews taking the new one.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.cli.catalogchange import report_flag
from apiserver.cli.clusterread import ClusterReadError, add_connection_flags
from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.cli.inputs import (
    DEFAULT_NAMESPACE,
    UsageError,
    add_catalog_argument,
    is_vm,
    pick_kubevirt,
    read_catalog,
    read_kubevirt,
)
from apiserver.cli.output import change_lines, json_line, printable, to_yaml
from apiserver.documents.manifests import ManifestError, read_manifest_paths
from apiserver.render import ExpandError, ObjectIndex, expand
from apiserver.render.catalogchange import captured_revision
from apiserver.render.objects import CLUSTER_SCOPED_KINDS, ref_of
from apiserver.render.virtconfig import cluster_config
from apiserver.render.vmcontroller.assumedvmi import assumed_vmi
from apiserver.render.vmcontroller.preview import ERROR, REFUSED, RESTART, preview
from apiserver.render.vmcontroller.sync import controller_config

TEXT, JSONL, YAML, JSON = "text", "jsonl", "yaml", "json"
FORMATS = (TEXT, JSONL, YAML, JSON)
EXIT_OK, EXIT_RESTART, EXIT_UNUSABLE = 0, 1, 2
ADDED, REMOVED, UNCHANGED = "added", "removed", "unchanged"
_SPEC_KINDS = {
    "instancetype": ("VirtualMachineInstancetype", "VirtualMachineClusterInstancetype"),
    "preference": ("VirtualMachinePreference", "VirtualMachineClusterPreference"),
}

EXAMPLES = """\
examples:
  # What a pull request does to the VMs: the base branch's checkout against the PR's
  git worktree add ../base origin/main
  kubevirt-expand preview --before ../base/vms --after vms

  # One JSON line per VM, for a bot's comment ("this change restarts 3 VMs")
  kubevirt-expand preview --before ../base/vms --after vms -o jsonl > preview.jsonl

  # Also take the edited instancetypes and preferences (the latest revisions)
  kubevirt-expand preview --before ../base/vms --after vms --upgrade

  # What upgrading the catalog does to every VM of a fleet, before it is applied
  kubectl get vm,namespace,resourcequota -A -o yaml > fleet.yaml
  kubevirt-expand preview --catalog-before catalog-v1.6.0/ --catalog-after catalog-v1.7.0/ -f fleet.yaml

exit status:
  0  no VM needs a restart (each is unchanged, live, added, removed, or stopped)
  1  some VM needs a restart, or is refused by KubeVirt's VM webhook, or its reconcile fails; with
     --catalog-before/--catalog-after also a ResourceQuota the restarted VMs would exceed
  2  unusable input: a file that cannot be read, no VirtualMachine, or a usage error
"""


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "preview",
        help="preview what changing one folder of manifests into another does to each VM (offline)",
        description=(
            "For every VirtualMachine of --after, the rendered change from --before (the VM taken as "
            "running as KubeVirt runs it from those files) and KubeVirt's verdict: live, restart (with "
            "KubeVirt's RestartRequired message), refused, error or unchanged; added and removed VMs are "
            "listed too."
        ),
        epilog=EXAMPLES,
        formatter_class=KubeHelpFormatter,
    )
    parser.add_argument(
        "--before",
        action="append",
        metavar="FILE|DIR",
        help="manifests as they are (repeatable)",
    )
    parser.add_argument(
        "--after",
        action="append",
        metavar="FILE|DIR",
        help="manifests as proposed (repeatable)",
    )
    catalog = parser.add_argument_group(
        "a catalog change across a fleet",
        "instead of --before/--after: every VM of -f taken as started under --catalog-before, then "
        "upgraded to --catalog-after (its revisions dropped); its pod's requests before and after, and "
        "each namespace's quotas once its running VMs restart",
    )
    catalog.add_argument(
        "--catalog-before",
        action="append",
        metavar="CATALOG",
        help="the catalog as the cluster holds it: a file or folder of instancetypes and preferences, or "
        "a 'catalog snapshot' (repeatable)",
    )
    catalog.add_argument(
        "--catalog-after", action="append", metavar="CATALOG", help="the catalog as proposed (repeatable)"
    )
    catalog.add_argument(
        "-f",
        "--filename",
        action="append",
        metavar="FILE|DIR",
        help="the fleet: VirtualMachines (as written, or as 'kubectl get vm -o yaml' prints them), "
        "Namespaces, ResourceQuotas, PVCs and DataSources (repeatable)",
    )
    catalog.add_argument(
        "--arch", help="the architecture virt-controller runs on (default: the KubeVirt CR's, else amd64)"
    )
    catalog.add_argument(
        "--assume-pvcs",
        action="store_true",
        help="take a PVC a volume names and the fleet does not hold as an existing filesystem claim",
    )
    catalog.add_argument(
        "--all", action="store_true", help="text: list the VMs the change does not touch too"
    )
    catalog.add_argument(
        "--report",
        action="append",
        type=report_flag,
        metavar="FORMAT=FILE",
        help="also write a CI report, each VM at its file and line: junit, sarif or codequality "
        "(repeatable); a restart or a refusal is a failure, a live change a warning",
    )
    catalog.add_argument(
        "--cluster",
        action="store_true",
        help="read the fleet and the catalog from the current cluster (kubeconfig, as kubectl; with your "
        "rights) instead of -f and --catalog-before: each VM as it runs (its captured revisions), "
        "--catalog-after's objects applied over the cluster's catalog",
    )
    catalog.add_argument(
        "-A", "--all-namespaces", action="store_true", help="with --cluster: the VMs of every namespace"
    )
    add_connection_flags(parser)
    parser.add_argument(
        "--kubevirt",
        metavar="FILE",
        help="KubeVirt CR or KubeVirtConfiguration (its vmRolloutStrategy and live-update limits); "
        "without it a KubeVirt CR among --after, else in --catalog, else a freshly deployed KubeVirt's "
        "defaults",
    )
    add_catalog_argument(parser)
    parser.add_argument(
        "-n",
        "--namespace",
        help=f"namespace of objects that have none (default {DEFAULT_NAMESPACE}); with --cluster, the "
        "namespace read (default: the kubeconfig context's, else default)",
    )
    parser.add_argument(
        "--upgrade",
        action="store_true",
        help="take the latest instancetypes and preferences, not the revisions the VMs captured",
    )
    parser.add_argument(
        "--stopped",
        action="store_true",
        help="take every VM of --before as stopped (no VMI): changes apply at the next start",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default=TEXT,
        help="text (one line per VM and its changed fields), jsonl, yaml or json",
    )
    parser.set_defaults(func=run)


@dataclass
class Side:
    vms: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)
    kubevirts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _read(paths: list[str], namespace: str) -> Side:
    side = Side()
    for source, obj in read_manifest_paths(paths):
        meta = (
            obj.setdefault("metadata", {})
            if isinstance(obj.get("metadata"), dict) or "metadata" not in obj
            else obj["metadata"]
        )
        if (
            obj.get("kind") not in CLUSTER_SCOPED_KINDS
            and isinstance(meta, dict)
            and not meta.get("namespace")
        ):
            meta["namespace"] = namespace
        if obj.get("kind") == "KubeVirt":
            side.kubevirts.append((source, obj))
        elif is_vm(obj):
            side.vms[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = obj
        else:
            side.objects.append(obj)
    return side


def _under(side: Side, catalog: list[dict[str, Any]]) -> None:
    """``--catalog``'s objects beneath the side's own: an object of the same kind, namespace and name in
    the folder replaces the catalog's, as applying it would."""
    given = {ref_of(o) for o in side.objects}
    side.objects = [o for o in catalog if ref_of(o) not in given] + side.objects


def _stored(vm: dict[str, Any], architecture: str) -> dict[str, Any]:
    """``vm`` as KubeVirt's VM mutating webhook stores it, in what the live-update rules read: the
    template's architecture defaulted to the cluster's (memory hotplug is only for amd64)."""
    vm = json.loads(json.dumps(vm))
    tspec = ((vm.get("spec") or {}).get("template") or {}).get("spec")
    if isinstance(tspec, dict) and not tspec.get("architecture"):
        tspec["architecture"] = architecture
    return vm


def _captured(
    vm: dict[str, Any],
    before: ObjectIndex,
    namespace: str,
    made: dict[tuple[str, str, str], dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``vm`` as the instancetype controller leaves it once started: each matcher's object captured in a
    ControllerRevision of the VM's namespace, and ``status`` pointing at it."""
    vm = json.loads(json.dumps(vm))
    status = vm.setdefault("status", {})
    revisions = []
    for member, status_ref in (("instancetype", "instancetypeRef"), ("preference", "preferenceRef")):
        matcher = (vm.get("spec") or {}).get(member)
        if not isinstance(matcher, dict) or matcher.get("revisionName") or not matcher.get("name"):
            continue
        namespaced, cluster = _SPEC_KINDS[member]
        given = str(matcher.get("kind") or cluster)
        kind = namespaced if given.lower().rstrip("s") == namespaced.lower() else cluster
        object_ref = ref_of({"kind": kind, "metadata": {"name": matcher["name"], "namespace": namespace}})
        obj = before.get(object_ref) if object_ref is not None else None
        if obj is None:
            continue
        key = (namespace, kind, str(matcher["name"]))
        revision = made.get(key)
        if revision is None:
            revision = made[key] = captured_revision(namespace, obj)
        revisions.append(revision)
        status[status_ref] = {
            "name": matcher["name"],
            "kind": matcher.get("kind", ""),
            "controllerRevisionRef": {"name": revision["metadata"]["name"]},
        }
    return vm, revisions


def _verdict_of(entry: dict[str, Any]) -> str:
    return str(entry["verdict"])


def preview_folders(
    before: Side,
    after: Side,
    kubevirt: Mapping[str, Any] | None,
    *,
    upgrade: bool = False,
    stopped: bool = False,
) -> list[dict[str, Any]]:
    """One entry per VM of either side: namespace, name, verdict, message, changes, patch (and what else
    the preview answered)."""
    before_index = ObjectIndex(before.objects)
    config = controller_config(kubevirt)
    architecture = cluster_config(kubevirt).default_architecture
    made: dict[tuple[str, str, str], dict[str, Any]] = {}
    entries: list[dict[str, Any]] = []
    for key in sorted(before.vms.keys() | after.vms.keys()):
        namespace, name = key
        entry: dict[str, Any] = {"namespace": namespace, "name": name}
        old, new = before.vms.get(key), after.vms.get(key)
        if old is None or new is None:
            entry["verdict"] = ADDED if old is None else REMOVED
            entries.append(entry)
            continue
        started, revisions = _captured(_stored(old, architecture), before_index, namespace, made)
        lookup = ObjectIndex([*after.objects, *revisions])
        vmi = None
        if not stopped:
            try:
                rendered = expand(started, ObjectIndex([*before.objects, *revisions]), kubevirt=kubevirt).vm
                vmi = assumed_vmi(rendered, kubevirt, live_update=config.live_update)
            except ExpandError as err:
                entry.update(verdict=ERROR, message=f"the VM as it is cannot be rendered: {err.message}")
                entries.append(entry)
                continue
        proposed = _stored(new, architecture)
        status = proposed.setdefault("status", {})
        for member, status_ref in (("instancetype", "instancetypeRef"), ("preference", "preferenceRef")):
            # The running VM keeps the revision it captured while its matcher names the same object
            # (KubeVirt's Store); --upgrade takes the live object instead.
            ref = (started.get("status") or {}).get(status_ref)
            matcher = (proposed.get("spec") or {}).get(member)
            same = isinstance(matcher, dict) and ref and matcher.get("name") == ref["name"]
            if same and not upgrade:
                status[status_ref] = ref
            else:
                status.pop(status_ref, None)
                if upgrade and isinstance(matcher, dict):
                    matcher.pop("revisionName", None)
        result = preview(proposed, lookup, current=started, vmi=vmi, start_vm=started, kubevirt=kubevirt)
        verdict = result.verdict
        if verdict in ("live", "stopped") and not result.patch:
            verdict = UNCHANGED
        entry.update(result.as_status())
        entry["verdict"] = verdict
        entries.append(entry)
    return entries


def _text(entry: Mapping[str, Any]) -> list[str]:
    line = f"{entry['namespace']}/{entry['name']}: {entry['verdict']}"
    if entry.get("message"):
        line += f" ({entry['message']})"
    elif entry.get("refusal"):
        line += f" ({entry['refusal'].get('message', '')})"
    return [printable(line), *change_lines(entry.get("changes") or ())]


def _write(entries: list[dict[str, Any]], output: str) -> None:
    out = sys.stdout
    if output == JSONL:
        for entry in entries:
            out.write(json_line(entry) + "\n")
    elif output == JSON:
        out.write(json.dumps({"items": entries}, indent=2) + "\n")
    elif output == YAML:
        out.write(to_yaml({"items": entries}))
    else:
        for entry in entries:
            out.write("\n".join(_text(entry)) + "\n")
    out.flush()


def run(args: argparse.Namespace) -> int:
    if args.catalog_before or args.catalog_after or args.filename or args.cluster:
        from apiserver.cli import catalogchange

        try:
            return catalogchange.run(args)
        except (UsageError, ClusterReadError) as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_UNUSABLE
    if not args.before or not args.after:
        print("error: give --before and --after (or --catalog-before/--catalog-after -f)", file=sys.stderr)
        return EXIT_UNUSABLE
    started = time.perf_counter()
    try:
        before = _read(args.before, args.namespace or DEFAULT_NAMESPACE)
        after = _read(args.after, args.namespace or DEFAULT_NAMESPACE)
        kubevirt = (
            read_kubevirt(args.kubevirt, sys.stdin) if args.kubevirt else pick_kubevirt(after.kubevirts)
        )
        if args.catalog:
            catalog = read_catalog(args.catalog, namespace=args.namespace, stdin=sys.stdin.buffer)
            print(catalog.describe(), file=sys.stderr)
            for side in (before, after):
                _under(side, copy.deepcopy(catalog.objects))
            if kubevirt is None:
                kubevirt = pick_kubevirt(catalog.kubevirts)
    except ManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    except Exception as err:  # a --kubevirt file that cannot be read: a usage error
        print(f"error: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    if not before.vms and not after.vms:
        print("error: no VirtualMachine in --before or --after", file=sys.stderr)
        return EXIT_UNUSABLE
    entries = preview_folders(before, after, kubevirt, upgrade=args.upgrade, stopped=args.stopped)
    try:
        _write(entries, args.output)
    except BrokenPipeError:  # the reader stopped (| head): nothing more to say
        sys.stderr.close()
        return EXIT_OK
    counts: dict[str, int] = {}
    for entry in entries:
        counts[_verdict_of(entry)] = counts.get(_verdict_of(entry), 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    seconds = time.perf_counter() - started
    vms = "1 VM" if len(entries) == 1 else f"{len(entries)} VMs"
    print(f"{vms}: {summary} ({seconds:.2f} s)", file=sys.stderr)
    failing = counts.get(RESTART, 0) + counts.get(REFUSED, 0) + counts.get(ERROR, 0)
    return EXIT_RESTART if failing else EXIT_OK
