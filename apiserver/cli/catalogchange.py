"""``kubevirt-expand preview --catalog-before A --catalog-after B -f FLEET``: what a catalog change does to
every VM of a fleet before the catalog is applied (:mod:`apiserver.render.catalogchange`), read from
files and written for a person or a CI job.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiserver.cli import ciformats
from apiserver.cli.inputs import (
    CATALOG_KINDS,
    DEFAULT_NAMESPACE,
    UsageError,
    is_vm,
    pick_kubevirt,
    read_catalog,
    read_kubevirt,
)
from apiserver.cli.output import change_lines, json_line, printable, to_yaml
from apiserver.cli.report import ADMITTED, VM_KIND, Result
from apiserver.cli.report import ERROR as ERROR_OUTCOME
from apiserver.cli.report import REFUSED as REFUSED_OUTCOME
from apiserver.documents.locate import Locator
from apiserver.documents.manifests import Manifest, ManifestError, read_files
from apiserver.render.catalogchange import (
    UNAFFECTED,
    UNCHANGED,
    FleetChange,
    preview_catalog_change,
    used_objects,
)
from apiserver.render.kubernetes.quantitymath import must_parse, value
from apiserver.render.objects import CLUSTER_SCOPED_KINDS, ref_of
from apiserver.render.vmcontroller.preview import LIVE, REFUSED, RESTART, STOPPED
from apiserver.version import package_version

EXIT_OK, EXIT_CHANGED, EXIT_UNUSABLE = 0, 1, 2


@dataclass(slots=True)
class _FleetFiles:
    vms: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)
    kubevirts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # where each VM was read (for the CI reports' file and line), and each file's text
    placed: dict[tuple[str, str], Manifest] = field(default_factory=dict)
    locators: dict[str, Locator] = field(default_factory=dict)


def read_fleet(paths: Sequence[str], namespace: str) -> _FleetFiles:
    """The fleet's VMs (by namespace and name) and its other objects, an object without a namespace taken
    as ``namespace``'s. Raises :class:`UsageError` for a file that cannot be read: a fleet half read
    would hide the VMs a change breaks."""
    fleet = _FleetFiles()
    for file in read_files(list(paths), stdin=sys.stdin.buffer):
        if file.error is not None:
            raise UsageError(f"-f {file.error}")
        if file.data is not None:
            fleet.locators[file.source] = Locator(file.data)
        for manifest in file.manifests:
            obj = manifest.object
            meta = obj.get("metadata")
            if meta is None:
                meta = obj["metadata"] = {}
            if not isinstance(meta, dict):
                continue
            if obj.get("kind") not in CLUSTER_SCOPED_KINDS and not meta.get("namespace"):
                meta["namespace"] = namespace
            if obj.get("kind") == "KubeVirt":
                fleet.kubevirts.append((manifest.source, obj))
            elif is_vm(obj):
                key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
                fleet.vms[key] = obj
                fleet.placed[key] = manifest
            else:
                fleet.objects.append(obj)
    return fleet


_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def readable(name: str, text: str) -> str:
    """A quantity as a person reads it in a log: memory in binary units (``2.32Gi``, not ``2492862144``);
    the JSON forms keep the exact text."""
    if not ("memory" in name or "storage" in name or name.startswith("hugepages-")):
        return text
    try:
        amount = value(must_parse(text))
    except ValueError:
        return text
    for unit, size in _BINARY:
        if abs(amount) >= size:
            shown = f"{amount / size:.2f}".rstrip("0").rstrip(".")
            return f"{shown}{unit}"
    return text


def _text_lines(entry: Mapping[str, Any]) -> list[str]:
    line = f"{entry['namespace']}/{entry['name']}: {entry['verdict']}"
    if entry.get("message"):
        line += f" ({entry['message']})"
    elif entry.get("refusal"):
        line += f" ({entry['refusal'].get('message', '')})"
    if entry.get("refusedBefore"):
        line += " [refused under the current catalog too: not the change's doing]"
    lines = [printable(line)]
    upgrade = entry.get("upgrade")
    if upgrade:
        said = f" ({upgrade['message']})" if upgrade.get("message") else ""
        lines.append(printable(f"  upgraded all the same (its status): {upgrade['verdict']}{said}"))
    lines += change_lines(entry.get("changes") or (upgrade or {}).get("changes") or ())
    requests = entry.get("requests")
    if requests:
        moved = [
            f"{k} {readable(k, requests['before'].get(k, '0'))} -> {readable(k, requests['after'].get(k, '0'))}"
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
            over = ", ".join(
                f"{k} {readable(k, q['usedAfter'][k])} > {readable(k, q['hard'][k])}" for k in q["exceeds"]
            )
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


_PASSING = (UNAFFECTED, UNCHANGED, LIVE, STOPPED)


def _matcher_fields(vm: Mapping[str, Any], namespace: str, answer: FleetChange) -> str:
    """The VM's fields that name an object the change touches (``spec.instancetype.name``), for the
    report's line; the matchers as a whole where the name is inferred."""
    used = used_objects(vm, namespace)
    fields = []
    for member in ("instancetype", "preference"):
        matcher = (vm.get("spec") or {}).get(member)
        if not isinstance(matcher, Mapping):
            continue
        if used is None or any(ref.name == matcher.get("name") for ref in answer.changed):
            fields.append(f"spec.{member}.name" if matcher.get("name") else f"spec.{member}")
    return ", ".join(fields) or "spec"


def results(answer: FleetChange, fleet: _FleetFiles) -> list[Result]:
    """The CI reports' results (:mod:`apiserver.cli.ciformats`), one per VM read from a file, at its file
    and line: a VM the change does not break is ``Admitted`` (a live or stopped change a warning naming
    the changed paths), a refusal or a restart is ``Refused`` (at the fields KubeVirt's webhook names, or
    at the matcher naming the changed object), a VM that cannot be rendered is an ``Error``."""
    out = []
    for entry in answer.entries:
        key = (entry["namespace"], entry["name"])
        manifest = fleet.placed.get(key)
        if manifest is None:
            continue
        result = Result.of(manifest, ADMITTED, kind=VM_KIND, namespace=key[0], name=key[1])
        verdict = entry["verdict"]
        matchers = _matcher_fields(fleet.vms[key], key[0], answer)
        changed = ", ".join(c["path"] for c in entry.get("changes") or ())
        if verdict in (LIVE, STOPPED) and changed:
            when = "live" if verdict == LIVE else "at its next start"
            result.warnings.append(f"the catalog change applies {when}: {changed}")
        elif verdict == REFUSED and entry.get("refusedBefore"):
            message = str((entry.get("refusal") or {}).get("message") or "")
            result.warnings.append(
                f"refused under the current catalog too (not the change's doing): {message}"
            )
        elif verdict == REFUSED:
            result.outcome = REFUSED_OUTCOME
            result.status = dict(entry.get("refusal") or {})
        elif verdict == RESTART:
            result.outcome = REFUSED_OUTCOME
            message = f"the catalog change needs a restart: {entry.get('message', '')} ({changed})"
            cause = {"reason": "RestartRequired", "message": message, "field": matchers}
            result.status = {"message": message, "reason": "RestartRequired", "details": {"causes": [cause]}}
        elif verdict not in _PASSING:
            result.outcome = ERROR_OUTCOME
            message = str(entry.get("message") or (entry.get("refusal") or {}).get("message") or verdict)
            cause = {"reason": "Error", "message": message, "field": matchers}
            result.status = {"message": message, "reason": "Error", "details": {"causes": [cause]}}
        result.locate(fleet.locators.get(manifest.source))
        out.append(result)
    # in input order, as the gate's reports are
    return sorted(out, key=lambda r: (r.file, r.document or 0, r.item if r.item is not None else -1))


def write_reports(reports: Sequence[tuple[str, str]], answer: FleetChange, fleet: _FleetFiles) -> None:
    """``--report FORMAT=FILE``: JUnit, SARIF or Code Quality, written whole."""
    made = results(answer, fleet)
    for fmt, path in reports:
        text = ciformats.write(fmt, made, package_version())
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as err:
            raise UsageError(f"--report {fmt}={path}: cannot write: {err.strerror or err}") from None


def report_flag(value: str) -> tuple[str, str]:
    """``FORMAT=FILE`` for ``--report``."""
    fmt, sep, path = value.partition("=")
    if not sep or fmt not in ciformats.REPORT_FORMATS or not path:
        formats = ", ".join(ciformats.REPORT_FORMATS)
        raise argparse.ArgumentTypeError(f"expected FORMAT=FILE with FORMAT one of {formats}")
    return fmt, path


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


def _from_cluster(args: argparse.Namespace) -> tuple[_FleetFiles, list[dict[str, Any]], list[dict[str, Any]]]:
    """The live fleet (its VMs with their captured revisions, Namespaces, ResourceQuotas with their
    ``status.used``, PVCs), the live catalog (before) and the live catalog with ``--catalog-after``'s
    objects applied over it (after), read with the caller's own rights as ``resources --cluster`` reads."""
    from apiserver.cli.clusterread import context_namespace, kubeconfig_path, read_cluster
    from apiserver.cli.resources import read_cluster_fleet

    if not args.all_namespaces and not args.namespace:
        args.namespace = (
            context_namespace(kubeconfig_path(args.kubeconfig), args.context) or DEFAULT_NAMESPACE
        )
    objects, notes = read_cluster(args, lambda client: read_cluster_fleet(client, args, want_kubevirt=True))
    for note in notes:
        print(note, file=sys.stderr)
    fleet, before = _FleetFiles(), []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") in CATALOG_KINDS:
            before.append(obj)
        elif obj.get("kind") == "KubeVirt":
            fleet.kubevirts.append(("cluster", obj))
        elif is_vm(obj):
            fleet.vms[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = obj
        else:
            fleet.objects.append(obj)
    proposed = read_catalog(args.catalog_after, namespace=args.namespace or DEFAULT_NAMESPACE)
    applied = {ref_of(o): o for o in before}
    applied.update({ref_of(o): o for o in proposed.objects})
    return fleet, before, [o for ref, o in applied.items() if ref is not None]


def run(args: argparse.Namespace) -> int:
    """``preview --catalog-before/--catalog-after -f`` (or ``--cluster --catalog-after``): exit 0 when
    nothing needs a look, 1 when a VM needs a restart, is refused or fails, or a quota breaks; 2 for
    unusable input."""
    started = time.perf_counter()
    if args.before or args.after:
        raise UsageError(
            "--catalog-before/--catalog-after preview a catalog change: leave out --before/--after"
        )
    if args.all_namespaces and not args.cluster:
        raise UsageError("-A/--all-namespaces reads a cluster: give --cluster")
    if args.cluster:
        if args.catalog_before or args.filename:
            raise UsageError(
                "--cluster reads the fleet and the catalog as they are: leave out --catalog-before and -f"
            )
        if not args.catalog_after:
            raise UsageError("give --catalog-after: the objects to apply over the cluster's catalog")
        try:
            fleet, before_objects, after_objects = _from_cluster(args)
            kubevirt = (
                read_kubevirt(args.kubevirt, sys.stdin) if args.kubevirt else pick_kubevirt(fleet.kubevirts)
            )
        except ManifestError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_UNUSABLE
        where = "every namespace of the cluster" if args.all_namespaces else f"namespace {args.namespace}"
    else:
        if not (args.catalog_before and args.catalog_after):
            raise UsageError("give both --catalog-before and --catalog-after")
        if not args.filename:
            raise UsageError(
                "give the fleet with -f FILE|DIR (its VirtualMachines, Namespaces, ResourceQuotas)"
            )
        namespace = args.namespace or DEFAULT_NAMESPACE
        try:
            fleet = read_fleet(args.filename, namespace)
            before_objects = read_catalog(args.catalog_before, namespace=namespace).objects
            after = read_catalog(args.catalog_after, namespace=namespace)
            after_objects = after.objects
            kubevirt = (
                read_kubevirt(args.kubevirt, sys.stdin)
                if args.kubevirt
                else pick_kubevirt([*fleet.kubevirts, *after.kubevirts])
            )
        except ManifestError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_UNUSABLE
        where = ", ".join(args.filename)
    if not fleet.vms:
        print(f"error: no VirtualMachine in {where}", file=sys.stderr)
        return EXIT_UNUSABLE
    answer = preview_catalog_change(
        fleet.vms,
        fleet.objects,
        before_objects,
        after_objects,
        kubevirt,
        arch=args.arch,
        assume_pvcs=args.assume_pvcs,
    )
    if args.report and not fleet.placed:
        raise UsageError("--report places each VM in its file: give the fleet with -f, not --cluster")
    write_reports(args.report or (), answer, fleet)
    try:
        write(answer, args.output, everything=args.all)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    print(summary(answer, time.perf_counter() - started), file=sys.stderr)
    return EXIT_CHANGED if answer.failing() else EXIT_OK
