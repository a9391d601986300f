"""``kubevirt-expand resources``: what the VMs of some manifests will cost, and whether they fit the
ResourceQuotas beside them, before anything is applied.

Each VM is expanded as ``kubevirt-expand expand`` expands it, then run through KubeVirt's VM controller,
VMI webhook and template service (:func:`apiserver.render.launcher.launch`): the virt-launcher pod's
requests and limits. The Namespace objects and ResourceQuotas among the inputs are used as the cluster
would use them (``AutoResourceLimits``, the auto memory-limits ratio label), and the pods are admitted
against the quotas of their namespace in input order, as kube-apiserver's quota admission would admit
them at start; a VM whose VMI exists (``status.created``) is counted as running, its pod already in the
quotas' ``status.used``.

The inputs are files (``-f``, ``List`` documents as ``kubectl get -o yaml`` prints them included) or, with
``--cluster``, a namespace of the current cluster read through the kubeconfig
(:mod:`apiserver.cli.clusterread`, shared with ``catalog snapshot``): its VMs, the instancetypes,
preferences and ControllerRevisions they use, the KubeVirt CR, the Namespace and its ResourceQuotas with
their live ``status.used``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from apiserver.cli.catalog import read_catalog_objects
from apiserver.cli.clusterread import (
    add_connection_flags,
    context_namespace,
    exits_unusable,
    get_object,
    kubeconfig_path,
    list_objects,
    read_cluster,
)
from apiserver.cli.expand import _set_vm_namespace, _unresolved
from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.cli.inputs import (
    DEFAULT_NAMESPACE,
    UsageError,
    WatchedLookup,
    add_catalog_argument,
    pick_kubevirt,
    prepare,
    read_catalog,
    read_kubevirt,
    vm_namespace,
)
from apiserver.cli.output import to_yaml
from apiserver.cli.report import EXIT_ADMITTED, EXIT_REFUSED, EXIT_UNRESOLVED, EXIT_UNUSABLE
from apiserver.documents.manifests import FileRead, Manifest, read_files
from apiserver.render import ExpandError, ObjectIndex, expand
from apiserver.render.aaq import CALCULATORS, DEFAULT_CALCULATOR, calculator_of, gates, launcher_usage
from apiserver.render.instancetype.find import INSTANCETYPE_FAMILY, PREFERENCE_FAMILY, named_revision
from apiserver.render.kubernetes.quantity import parse_quantity
from apiserver.render.kubernetes.quantitymath import (
    ResourceList,
    add,
    readable_bytes,
    resource_list,
    resource_text,
)
from apiserver.render.kubernetes.quota import Pod, QuotaUse, admit
from apiserver.render.launcher import ARCHITECTURES, cluster_inputs, launch, launch_vmi
from apiserver.render.objects import CONTROLLER_REVISION, VIRTUAL_MACHINE, VIRTUAL_MACHINE_INSTANCE
from apiserver.render.virtconfig import cluster_config

TEXT, JSON, JSONL, YAML = "text", "json", "jsonl", "yaml"
AAQ_GROUP_VERSION = "aaq.kubevirt.io/v1alpha1"
ARQ = "ApplicationAwareResourceQuota"
AAQ_KIND = "AAQ"
NAD = "NetworkAttachmentDefinition"
FORMATS = (TEXT, JSON, JSONL, YAML)

EXAMPLES = """\
examples:
  # What each VM of a folder will request and limit, and each namespace's total
  kubevirt-expand resources -f examples/

  # Check the VMs against the ResourceQuotas of another folder (exit 1 when one would be refused)
  kubevirt-expand resources -f vms/ -f quotas/ -o jsonl

  # A namespace of the current cluster: its VMs against its ResourceQuotas' live usage
  kubevirt-expand resources --cluster -n team-a

  # A VirtualMachineInstance created on its own, with the PVCs its volumes name taken as existing
  kubevirt-expand resources -f vmi.yaml --assume-pvcs

  # What kubectl prints works too (List documents)
  { kubectl get namespace team-a -o yaml; echo ---; kubectl get vm,virtualmachineinstancetypes,resourcequotas \
      -n team-a -o yaml; } | kubevirt-expand resources -

exit status:
  0  every VM renders and its pod fits the ResourceQuotas of its namespace
  1  some VM does not render, or its pod would be refused at start by a quota (named, with the amounts)
  2  unusable input (a file that cannot be read, no VirtualMachine at all), a cluster that cannot be
     read, or a usage error
  3  some VM is unresolved: it names an instancetype, preference or ControllerRevision that was not
     given (as kubevirt-expand expand), and nothing else failed
"""


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "resources",
        help="the virt-launcher pod each VM will cost, per namespace, against its ResourceQuotas (offline)",
        description=(
            "Render every VirtualMachine of the given manifests as KubeVirt would start it: the "
            "VirtualMachineInstance and its virt-launcher pod's requests and limits (the memory overhead "
            "included), sum them per namespace and admit them against the ResourceQuota objects found "
            "beside them."
        ),
        epilog=EXAMPLES,
        formatter_class=KubeHelpFormatter,
    )
    parser.add_argument(
        "-f", "--filename", action="append", metavar="FILE|DIR|-", help="manifests to read (or --cluster)"
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE|DIR|-",
        help="manifests to read, as -f (`kubectl get vm,... -o yaml | kubevirt-expand resources -`)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="read the VMs of a namespace of the current cluster (kubeconfig, as kubectl), with their "
        "instancetypes and preferences, the KubeVirt CR, the Namespace and its ResourceQuotas (their "
        "live status.used), instead of files (needs the cluster extra: pip install "
        "'kubevirt-expand-apiserver[cluster]')",
    )
    parser.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="with --cluster: the VMs of every namespace",
    )
    parser.add_argument("--kubevirt", metavar="FILE", help="KubeVirt CR or KubeVirtConfiguration")
    add_catalog_argument(parser)
    parser.add_argument(
        "-n",
        "--namespace",
        help="namespace of the VMs and objects that have none; with --cluster, the namespace read "
        "(default: the kubeconfig context's, else default)",
    )
    parser.add_argument(
        "--arch",
        choices=ARCHITECTURES,
        help="the architecture virt-controller runs on (default: the KubeVirt CR's default architecture)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default=TEXT,
        help=f"{TEXT} (a table per VM, then per namespace), {JSON} or {YAML} (one document: vms, "
        f"namespaces), {JSONL} (one line per VM, then one per namespace)",
    )
    parser.add_argument(
        "--assume-pvcs",
        action="store_true",
        help="take a PersistentVolumeClaim a volume names but the inputs do not hold as an existing "
        "filesystem claim (said in assumed); without it such a VM gets no pod, as in KubeVirt",
    )
    parser.add_argument(
        "--aaq-calculator",
        choices=CALCULATORS,
        help="how application-aware-quota charges a VM's pod (default: as the AAQ CR among the inputs or "
        f"in the cluster says, else {DEFAULT_CALCULATOR}; docs/cost.md)",
    )
    add_connection_flags(parser)
    parser.set_defaults(func=run)


def _from_cluster(args: argparse.Namespace, want_kubevirt: bool) -> tuple[list[FileRead], str]:
    """The cluster's objects as one input: the VMs of the namespace (or all), what they use, the
    Namespaces and their ResourceQuotas with ``status``. Warnings go to stderr."""
    objects, notes = read_cluster(args, lambda client: read_cluster_fleet(client, args, want_kubevirt))
    for note in notes:
        print(note, file=sys.stderr)
    where = "every namespace of the cluster" if args.all_namespaces else f"namespace {args.namespace}"
    source = "cluster"
    manifests = tuple(Manifest(source, number, obj) for number, obj in enumerate(objects, 1))
    return [FileRead(source, manifests)], where


async def read_cluster_fleet(
    client: Any, args: argparse.Namespace, want_kubevirt: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """What a namespace (``args.namespace``) or the cluster (``args.all_namespaces``) holds of a fleet, as
    the caller may read it: its VMs with their status, the instancetypes and preferences, the KubeVirt
    CR, the Namespaces, ResourceQuotas (with ``status``), PVCs, application-aware quotas and the
    ControllerRevisions the VMs captured; and the warnings to print."""
    from apiserver.sources.cluster.client import ApiError

    vm_path = (
        "/apis/kubevirt.io/v1/virtualmachines"
        if args.all_namespaces
        else f"/apis/kubevirt.io/v1/namespaces/{args.namespace}/virtualmachines"
    )
    vms = await list_objects(client, vm_path, "kubevirt.io/v1", VIRTUAL_MACHINE, keep_status=True)
    namespaces = sorted({str(vm["metadata"].get("namespace") or "") for vm in vms} - {""})
    if not args.all_namespaces and args.namespace not in namespaces:
        namespaces.append(args.namespace)
    objects, notes = await read_catalog_objects(
        client, namespaces, kubevirt=want_kubevirt, what="the run", need_instancetypes=False
    )
    for ns in namespaces:
        try:
            found = await get_object(client, f"/api/v1/namespaces/{ns}", "v1", "Namespace")
        except ApiError as err:
            if err.code != 403:
                raise
            found = None
            notes.append(f"Warning: namespace {ns} not read ({err.code}): its labels are taken as none")
        if found is not None:
            objects.append(found)
        path = f"/api/v1/namespaces/{ns}/resourcequotas"
        objects.extend(await list_objects(client, path, "v1", "ResourceQuota", keep_status=True))
        try:
            path = f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
            objects.extend(await list_objects(client, path, "v1", "PersistentVolumeClaim"))
        except ApiError as err:
            if err.code != 403:
                raise
            args.assume_pvcs = True
            notes.append(
                f"Warning: PersistentVolumeClaims of {ns} not read ({err.code}): the claims VMs name are "
                "taken as existing"
            )
        path = f"/apis/{AAQ_GROUP_VERSION}/namespaces/{ns}/applicationawareresourcequotas"
        objects.extend(await _optional(client, path, ARQ, notes))
    objects.extend((await _optional(client, f"/apis/{AAQ_GROUP_VERSION}/aaqs", AAQ_KIND, notes))[:1])
    # Once each: VMs may name the same revision (a user's revisionName naming another VM's).
    wanted = sorted(
        {(str(vm["metadata"].get("namespace") or ""), n) for vm in vms for n in _revision_names(vm)}
    )
    for ns, name in wanted:
        path = f"/apis/apps/v1/namespaces/{ns}/controllerrevisions/{name}"
        try:
            revision = await get_object(client, path, "apps/v1", CONTROLLER_REVISION)
        except ApiError as err:
            if err.code != 403:
                raise
            notes.append(f"Warning: ControllerRevision {ns}/{name} not read ({err.code})")
            continue
        if revision is not None:
            objects.append(revision)
    return [*objects, *vms], notes


async def _optional(client: Any, path: str, kind: str, notes: list[str]) -> list[dict[str, Any]]:
    """A list of application-aware-quota's kinds: none, silently, where its CRD is not installed."""
    from apiserver.sources.cluster.client import ApiError

    try:
        return await list_objects(client, path, AAQ_GROUP_VERSION, kind, keep_status=True)
    except ApiError as err:
        if err.code == 404:
            return []
        if err.code != 403:
            raise
        notes.append(f"Warning: {kind} objects not read ({err.code}): not compared")
        return []


def _revision_names(vm: Mapping[str, Any]) -> set[str]:
    """The ControllerRevisions the finders read for a VM (:func:`~apiserver.render.instancetype.find.named_revision`:
    ``spec.<matcher>.revisionName``, else the status ref's ``controllerRevisionRef``, where virt-controller
    writes it)."""
    found = (named_revision(family, vm)[0] for family in (INSTANCETYPE_FAMILY, PREFERENCE_FAMILY))
    return {name for name in found if name}


def running(vm: Mapping[str, Any]) -> bool:
    """Whether the VM's VMI exists (``status.created``), so that its pod is counted already in its
    namespace's ResourceQuotas' ``status.used``: it is not admitted a second time."""
    status = vm.get("status")
    return isinstance(status, Mapping) and status.get("created") is True


def _charged(calculator: str, reports: Mapping[str, Mapping[str, Any]]) -> Callable[[Pod], ResourceList]:
    """What application-aware-quota's calculator charges for each VM's pod (by the pod's label)."""

    def charged(pod: Pod) -> ResourceList:
        v = reports[pod.label]
        overhead = parse_quantity(v["pod"].get("memoryOverhead") or "0")
        return launcher_usage(calculator, v["_vmi"], pod, overhead)

    return charged


def _requests_limits(report: Mapping[str, Any]) -> tuple[ResourceList, ResourceList]:
    """What quota admission charges: the pod's requests and ``PodLimits``' sum of the limits set (the
    report's ``_limits``; the pod's ``total.limits`` leaves out a CPU or memory limit some container
    lacks, as Kubernetes bounds the pod)."""
    total = report["pod"].get("total") or {}
    return resource_list(total.get("requests")), resource_list(report.get("_limits"))


def _standalone_vmis(files: Sequence[FileRead]) -> list[Manifest]:
    """The VirtualMachineInstances of the inputs that no VirtualMachine owns (a VM's own VMI is its
    running instance: the VM is judged, not it twice)."""
    found = []
    for file in files:
        if file.error is not None:
            continue
        for manifest in file.manifests:
            obj = manifest.object
            if obj.get("kind") != VIRTUAL_MACHINE_INSTANCE:
                continue
            owners = (obj.get("metadata") or {}).get("ownerReferences") or ()
            if any(isinstance(o, Mapping) and o.get("kind") == VIRTUAL_MACHINE for o in owners):
                continue
            found.append(manifest)
    return found


def _vmi_report(
    manifest: Manifest, index: ObjectIndex, kubevirt: Mapping[str, Any] | None, args: argparse.Namespace
) -> dict[str, Any]:
    """:func:`_vm_report` for a VirtualMachineInstance given on its own."""
    vmi = manifest.object
    namespace = vm_namespace(vmi, args.namespace)
    name = str((vmi.get("metadata") or {}).get("name") or "")
    out: dict[str, Any] = {
        "kind": VIRTUAL_MACHINE_INSTANCE,
        "namespace": namespace,
        "name": name,
        "source": manifest.source,
    }
    status = vmi.get("status")
    if isinstance(status, Mapping) and status.get("phase"):
        out["running"] = True  # it was created: its pod is in the quotas' status.used
    try:
        meta = vmi.get("metadata")
        vmi = {**vmi, "metadata": {**(meta if isinstance(meta, Mapping) else {}), "namespace": namespace}}
        arch = args.arch or cluster_config(kubevirt).default_architecture or "amd64"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            launched = launch_vmi(
                vmi,
                kubevirt,
                arch=arch,
                assume_pvcs=args.assume_pvcs,
                **cluster_inputs(_cluster_objects(index, namespace), namespace),
            )
    except ExpandError as err:
        out["status"] = err.status
        return out
    out["pod"] = launched.pod.to_json()
    out["_limits"] = resource_text(launched.pod.limits)  # what quota charges; not written
    out["_vmi"] = launched.vmi
    out["assumed"] = list(launched.assumed)
    return out


def _cluster_objects(index: ObjectIndex, namespace: str) -> list[Mapping[str, Any]]:
    """What virt-controller reads of the cluster for a VM of ``namespace``, among the inputs."""
    return [
        *index.of_kind("Namespace", None),
        *index.of_kind("ResourceQuota", namespace),
        *index.of_kind(NAD, None),
        *index.of_kind("PersistentVolumeClaim", None),
    ]


def _vm_report(
    manifest: Manifest, index: ObjectIndex, kubevirt: Mapping[str, Any] | None, args: argparse.Namespace
) -> dict[str, Any]:
    vm = manifest.object
    namespace = vm_namespace(vm, args.namespace)
    name = str((vm.get("metadata") or {}).get("name") or "")
    out: dict[str, Any] = {"namespace": namespace, "name": name, "source": manifest.source}
    if running(vm):
        out["running"] = True
    lookup = WatchedLookup(index, {})
    try:
        _set_vm_namespace(vm, args.namespace)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                rendered = expand(vm, lookup, kubevirt=kubevirt, exact_names=False)
            except ExpandError as err:
                if _unresolved(err, lookup):
                    # As expand says it: what it names was not given; no verdict on its cost.
                    out["unresolved"] = True
                raise
        arch = args.arch or cluster_config(kubevirt).default_architecture or "amd64"
        launched = launch(
            rendered.vm,
            kubevirt,
            arch=arch,
            assume_pvcs=args.assume_pvcs,
            **cluster_inputs(_cluster_objects(index, namespace), namespace),
            written=vm,
            preference=rendered.preference,
        )
    except ExpandError as err:
        out["status"] = err.status
        return out
    out["pod"] = launched.pod.to_json()
    out["_limits"] = resource_text(launched.pod.limits)  # what quota charges; not written
    out["_vmi"] = launched.vmi  # for AAQ's calculators; not written
    out["assumed"] = list(launched.assumed)
    return out


def _run(args: argparse.Namespace) -> int:
    args.filename = [*(args.filename or ()), *args.inputs]
    if args.cluster == bool(args.filename):
        raise UsageError("give either -f FILE|DIR|- or --cluster")
    if args.all_namespaces and not args.cluster:
        raise UsageError("-A/--all-namespaces reads a cluster: give --cluster")
    if args.all_namespaces and args.namespace:
        raise UsageError("-A/--all-namespaces and -n/--namespace exclude each other")
    explicit = read_kubevirt(args.kubevirt, sys.stdin.buffer) if args.kubevirt else None
    if args.cluster:
        if not args.all_namespaces and not args.namespace:
            path = kubeconfig_path(args.kubeconfig)
            args.namespace = context_namespace(path, args.context) or DEFAULT_NAMESPACE
        files, where = _from_cluster(args, explicit is None)
    else:
        files, where = read_files(args.filename, stdin=sys.stdin.buffer), ", ".join(args.filename)
    catalog = None
    if args.catalog:
        namespace = args.namespace or DEFAULT_NAMESPACE
        catalog = read_catalog(args.catalog, namespace=namespace, stdin=sys.stdin.buffer)
        print(catalog.describe(), file=sys.stderr)
    prepared = prepare(
        files,
        explicit_namespace=args.namespace,
        field_validation="Ignore",
        catalog=catalog,
        read_also=frozenset({"Namespace", "ResourceQuota", ARQ, AAQ_KIND, NAD}),
    )
    kubevirt = explicit if explicit is not None else pick_kubevirt(prepared.kubevirts)
    if kubevirt is None and catalog is not None:
        kubevirt = pick_kubevirt(catalog.kubevirts)
    aaq_crs = prepared.index.of_kind(AAQ_KIND, None)
    aaq_cr = aaq_crs[0] if aaq_crs else None
    calculator = args.aaq_calculator or calculator_of(aaq_cr)
    unusable = [e for e in prepared.entries if not isinstance(e, Manifest)]
    for entry in unusable:
        print(f"error: {entry.label()}: {(entry.status or {}).get('message', '')}", file=sys.stderr)
    vms = [_vm_report(e, prepared.index, kubevirt, args) for e in prepared.entries if isinstance(e, Manifest)]
    vms.extend(_vmi_report(m, prepared.index, kubevirt, args) for m in _standalone_vmis(files))
    if not vms:
        # --cluster reads VirtualMachines only; files are judged for VMIs too
        what = "VirtualMachine" if args.cluster else "VirtualMachine or VirtualMachineInstance"
        print(f"error: no {what} found in {where}", file=sys.stderr)
        return EXIT_UNUSABLE

    namespaces: dict[str, dict[str, Any]] = {}
    for ns in sorted({v["namespace"] for v in vms}):
        rendered = [v for v in vms if v["namespace"] == ns and "pod" in v]
        pods, to_admit = [], []
        for v in rendered:
            requests, limits = _requests_limits(v)
            containers = [
                (
                    c["name"],
                    resource_list(c["resources"].get("requests")),
                    resource_list(c["resources"].get("limits")),
                )
                for c in v["pod"]["containers"] + [i for i in v["pod"]["initContainers"]]
            ]
            pods.append(Pod(f"{ns}/{v['name']}", requests, limits, containers))
            if v.get("running"):
                v["fits"] = True  # its pod runs: the quotas' status.used counts it
            else:
                to_admit.append(v)
        starting = [p for p, v in zip(pods, rendered, strict=True) if not v.get("running")]
        verdicts, uses = admit(starting, prepared.index.of_kind("ResourceQuota", ns))
        for v, verdict in zip(to_admit, verdicts, strict=True):
            v["fits"] = verdict.fits
            if verdict.reasons:
                v["refusedBy"] = verdict.reasons
        arqs = prepared.index.of_kind(ARQ, ns)
        ns_obj = next(
            (
                n
                for n in prepared.index.of_kind("Namespace", None)
                if (n.get("metadata") or {}).get("name") == ns
            ),
            None,
        )
        gated = gates(aaq_cr, ns_obj)
        aaq_uses: list[QuotaUse] = []
        if arqs and gated is not False:
            charged = _charged(calculator, {f"{ns}/{v['name']}": v for v in to_admit})
            aaq_verdicts, aaq_uses = admit(starting, arqs, usage_of=charged, constraints=False)
            for v, verdict in zip(to_admit, aaq_verdicts, strict=True):
                if not verdict.fits:
                    v["fits"] = False
                    v["gatedBy"] = verdict.reasons
        total_requests: ResourceList = {}
        total_limits: ResourceList = {}
        for pod, v in zip(pods, rendered, strict=True):
            # each pod's limits as Kubernetes bounds it: a namespace's total has a CPU or memory limit
            # only where every pod has one
            effective = resource_list(v["pod"]["total"].get("limits"))
            for total, part in ((total_requests, pod.requests), (total_limits, effective)):
                for key, q in part.items():
                    total[key] = add(total[key], q) if key in total else q
        for name in ("cpu", "memory"):
            if not all(limited(v["pod"], name) for v in rendered):
                total_limits.pop(name, None)
        namespaces[ns] = {
            "namespace": ns,
            "vms": len([v for v in vms if v["namespace"] == ns]),
            "requests": resource_text(total_requests),
            "limits": resource_text(total_limits),
            # whether every pod has a limit of it (else the namespace's total is not a limit)
            "limited": {r: all(limited(v["pod"], r) for v in rendered) for r in ("cpu", "memory")},
            "quotas": [
                {"name": u.name, "hard": resource_text(u.hard), "usedAfterAdmitted": resource_text(u.used)}
                for u in uses
            ],
        }
        if arqs:
            namespaces[ns]["applicationAwareQuotas"] = {
                "calculator": calculator,
                # None: the Namespace was not among the inputs; taken as gated
                "gated": gated,
                "quotas": [
                    {
                        "name": u.name,
                        "hard": resource_text(u.hard),
                        "usedAfterAdmitted": resource_text(u.used),
                    }
                    for u in aaq_uses
                ],
            }
    for v in vms:
        v.pop("_vmi", None)
        v.pop("_limits", None)
    _write(args.output, vms, list(namespaces.values()))
    unresolved = sum(1 for v in vms if v.get("unresolved"))
    if unresolved:
        print(_unresolved_note(unresolved, "the cluster" if args.cluster else "the inputs"), file=sys.stderr)
    refused = any(("status" in v and not v.get("unresolved")) or not v.get("fits", True) for v in vms)
    if unusable:
        return EXIT_UNUSABLE
    if refused:
        return EXIT_REFUSED
    return EXIT_UNRESOLVED if unresolved else EXIT_ADMITTED


def _unresolved_note(count: int, where: str) -> str:
    vms = "1 VM is unresolved: it names" if count == 1 else f"{count} VMs are unresolved: they name"
    return (
        f"note: {vms} an instancetype, preference or ControllerRevision not found in {where}; its pod "
        "cannot be computed until it is given (kubevirt-expand catalog snapshot writes the cluster's)"
    )


def _cell(resources: Mapping[str, str], name: str) -> str:
    """A table's cell: memory in binary units as people read it (the reports keep Kubernetes' text)."""
    got = resources.get(name)
    if got is None:
        return "-"
    return readable_bytes(got) if name == "memory" else got


def limited(pod: Mapping[str, Any], name: str) -> bool:
    """Whether every container of the pod sets a limit of ``name``: otherwise the pod has none (a
    container without one may use what the node has) and the total's figure is not a limit."""
    return all(
        name in (c["resources"].get("limits") or {}) for c in [*pod["containers"], *pod["initContainers"]]
    )


def _write(output: str, vms: list[dict[str, Any]], namespaces: list[dict[str, Any]]) -> None:
    if output == JSONL:
        for v in vms:
            print(json.dumps({"kind": VIRTUAL_MACHINE, **v}, separators=(",", ":")))
        for n in namespaces:
            print(json.dumps({"kind": "Namespace", **n}, separators=(",", ":")))
        return
    if output in (JSON, YAML):
        doc = {"vms": vms, "namespaces": namespaces}
        print(
            json.dumps(doc, indent=2) if output == JSON else to_yaml(doc), end="\n" if output == JSON else ""
        )
        return
    rows = [("NAMESPACE", "NAME", "CPU-REQUEST", "MEMORY-REQUEST", "CPU-LIMIT", "MEMORY-LIMIT", "FITS")]
    for v in vms:
        shown = f"vmi/{v['name']}" if v.get("kind") == VIRTUAL_MACHINE_INSTANCE else v["name"]
        if "pod" not in v:
            verdict = "unresolved: " if v.get("unresolved") else "no: "
            rows.append(
                (
                    v["namespace"],
                    shown,
                    "-",
                    "-",
                    "-",
                    "-",
                    verdict + str(v["status"].get("message", ""))[:80],
                )
            )
            continue
        total = v["pod"]["total"]
        rows.append(
            (
                v["namespace"],
                shown,
                _cell(total["requests"], "cpu"),
                _cell(total["requests"], "memory"),
                _cell(total["limits"], "cpu") if limited(v["pod"], "cpu") else "none",
                _cell(total["limits"], "memory") if limited(v["pod"], "memory") else "none",
                "running" if v.get("running") else "yes" if v.get("fits", True) else "no",
            )
        )
    _table(rows)
    print()
    ns_rows = [("NAMESPACE", "VMS", "CPU-REQUEST", "MEMORY-REQUEST", "CPU-LIMIT", "MEMORY-LIMIT", "QUOTAS")]
    for n in namespaces:
        ns_rows.append(
            (
                n["namespace"],
                str(n["vms"]),
                _cell(n["requests"], "cpu"),
                _cell(n["requests"], "memory"),
                _cell(n["limits"], "cpu") if n["limited"]["cpu"] else "none",
                _cell(n["limits"], "memory") if n["limited"]["memory"] else "none",
                ",".join(
                    [q["name"] for q in n["quotas"]]
                    + [f"{q['name']}(aaq)" for q in (n.get("applicationAwareQuotas") or {}).get("quotas", ())]
                )
                or "<none>",
            )
        )
    _table(ns_rows)
    for v in vms:
        for reason in v.get("refusedBy", ()):
            print(f"{v['namespace']}/{v['name']} would be refused at start: {reason}", file=sys.stderr)
        for reason in v.get("gatedBy", ()):
            print(
                f"{v['namespace']}/{v['name']} would stay gated at start (application-aware quota): {reason}",
                file=sys.stderr,
            )


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


run = exits_unusable(_run)
