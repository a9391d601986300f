"""``kubevirt-expand expand``: render VirtualMachines from manifests, no cluster and no server needed.

Everything the VMs reference is taken from the same inputs, the way ``kubectl apply -f`` would have
put it into a cluster; the renderer is the one the server runs, so the output equals what the
``expand-spec`` endpoint (and KubeVirt) would answer. Made to gate CI as well: every file is read and
every VM judged even when some input is broken, and the exit code tells a refused VM (1) from input
that needs fixing (2); see :mod:`apiserver.cli.report` for the report and :mod:`apiserver.cli.inputs`
for what counts as broken input.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.cli.inputs import (
    DEFAULT_NAMESPACE,
    Catalog,
    Skipped,
    UsageError,
    WatchedLookup,
    excluder,
    pick_kubevirt,
    prepare,
    read_catalog,
    read_kubevirt,
    skip_kinds,
    vm_namespace,
)
from apiserver.cli.output import FORMATS, JSON, JSONL, REPORTS, YAML, Writer, printable
from apiserver.cli.report import (
    ADMITTED,
    ERROR,
    EXIT_REFUSED,
    EXIT_UNUSABLE,
    REFUSED,
    UNRESOLVED,
    VM_KIND,
    Result,
    Tally,
)
from apiserver.documents.locate import Locator
from apiserver.documents.manifests import Manifest, read_files
from apiserver.render import Cause, ExpandError, ObjectIndex, ObjectRef, expand
from apiserver.render.kubernetes.errors import (
    CAUSE_NOT_FOUND,
    MAX_MESSAGE,
    bound_status,
    invalid_status,
    shorten,
    status,
)
from apiserver.render.kubernetes.fieldvalidation import DEFAULT, LEVELS
from apiserver.render.objects import (
    CLUSTER_INSTANCETYPE,
    CLUSTER_PREFERENCE,
    CONTROLLER_REVISION,
    INSTANCETYPE,
    PREFERENCE,
)
from apiserver.version import package_version

EXAMPLES = """\
examples:
  # Expand the VMs of a folder against the instancetypes and preferences in it
  kubevirt-expand expand -f examples/

  # One VM, its objects from elsewhere, as JSON
  kubevirt-expand expand -f vm.yaml -f instancetypes/ -o json

  # From a pipe, with the cluster's KubeVirt configuration
  kubectl get vm fedora -o yaml | kubevirt-expand expand -f - -f objects.yaml \\
      --kubevirt <(kubectl get kubevirt -n kubevirt -o yaml)

  # Also apply VirtualMachineInstancePresets and run the admission checks
  kubevirt-expand expand -f examples/ --presets --validate

  # Expand a VM with unknown fields, warning about them instead of refusing it
  kubevirt-expand expand -f vm.yaml -f examples/instancetypes.yaml -f examples/preferences.yaml \\
      --field-validation Warn

  # Gate CI: judge every VM of a folder, print verdicts only, keep a report of one JSON line per VM
  kubevirt-expand expand -f vms/ --validate --check -o jsonl > report.jsonl

  # A GitOps repository against the cluster's instancetypes and preferences, charts' sources excluded
  kubevirt-expand catalog snapshot -n team-a -o catalog.yaml
  kubevirt-expand expand -f . --catalog catalog.yaml --exclude 'charts/*/templates' --validate --check

exit status:
  0  every VM admitted (rendered; with --validate, also passed the admission checks)
  1  some VM refused, the input otherwise sound (each refusal: a line and its Status on stderr)
  2  unusable input: a file or document that cannot be read (nothing from that file is used), an
     object defined twice in the inputs, a VM that uses such an object, no VirtualMachine at all, or
     a usage error; every other VM is still judged and reported
  3  no VM refused and the input sound, but some VM unresolved: an instancetype, preference or
     ControllerRevision it names is neither among the inputs nor in a --catalog (KubeVirt admits
     such a VM; it cannot be rendered from what was given)
"""


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "expand",
        help="expand VirtualMachines from manifests (offline)",
        description=(
            "Expand every VirtualMachine found in the given manifests (multi-document YAML or JSON, List "
            "objects, folders read recursively) against the instancetypes, preferences, "
            "ControllerRevisions and VirtualMachineInstancePresets found beside it (and in --catalog), "
            "and print the expanded VMs. Objects of other kinds (Deployments, ConfigMaps, "
            "Kustomizations) and documents that are no Kubernetes object (CI workflows) are skipped "
            "and counted. Failures are printed to stderr as Kubernetes Status objects, each named by "
            "file and document, and a summary line ends the run."
        ),
        epilog=EXAMPLES,
        formatter_class=KubeHelpFormatter,
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE|DIR|-",
        help="manifest file, folder (*.yaml, *.yml, *.json, recursively) or - for stdin; repeatable",
    )
    parser.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="FILE|DIR",
        help="instancetypes, preferences (and a KubeVirt CR) the cluster holds already, such as a "
        "'catalog snapshot' or common-instancetypes' release bundle; VMs use them where the inputs "
        "hold none of the same kind, namespace and name; repeatable (the first copy of an object wins)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip files and folders: a GLOB without / matches a file or folder name anywhere "
        "('*.tmpl.yaml', 'templates'), one with / the end of the path ('charts/*/templates'); "
        "repeatable",
    )
    parser.add_argument(
        "--skip-kind",
        action="append",
        default=[],
        metavar="KIND[,KIND...]",
        help="skip objects of these kinds, counted like those that are not KubeVirt's; repeatable",
    )
    parser.add_argument(
        "--kubevirt",
        metavar="FILE",
        help="KubeVirt CR or KubeVirtConfiguration for the cluster defaults"
        "; without it a KubeVirt CR among the inputs, else in --catalog, else a freshly deployed "
        "KubeVirt's defaults",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        help="namespace of the VMs and objects that have none; if given, a VM in another namespace is "
        f'an error (default "{DEFAULT_NAMESPACE}")',
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default=YAML,
        help=f"output format: {YAML} (one document per admitted VM), {JSON} (the VM when the inputs hold "
        f"one, else a List of the admitted VMs), {JSONL} (one JSON object per VM and per input problem: "
        "file, document, item, line, kind, namespace, name, outcome, status, causes, warnings, object), "
        "or a report for CI: junit (JUnit XML), sarif (SARIF 2.1.0), codequality (GitLab Code Quality)",
    )
    parser.add_argument(
        "--report",
        action="append",
        default=[],
        type=_report,
        metavar="FORMAT=FILE",
        help=f"also write a report to FILE, beside what -o prints; FORMAT is one of {', '.join(REPORTS)}; "
        "repeatable (e.g. --report junit=junit.xml --report codequality=quality.json)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="on stderr, only the failures (no admitted VM, warning, catalog:, skipped: or note: line, or "
        "summary); their Status JSON too "
        "unless stdout is a report (jsonl, junit, sarif, codequality)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="print verdicts only, no VM: each admitted VM is named on stderr, -o jsonl lines carry no "
        "object",
    )
    parser.add_argument(
        "--presets", action="store_true", help="also apply the VirtualMachineInstancePresets that match"
    )
    parser.add_argument(
        "--validate",
        action="store_true",
        help="also run KubeVirt's VM admission webhook as for a CREATE: a VM it would refuse is refused "
        "(exit 1) with its causes",
    )
    parser.add_argument(
        "--field-validation",
        type=_level,
        default=DEFAULT,
        metavar="|".join(LEVELS),
        help="unknown, case-mismatched, duplicate and missing required fields: Strict refuses the VM "
        "(exit 1), Warn expands it and prints warnings, Ignore expands it silently as KubeVirt does",
    )
    parser.set_defaults(func=run)


def _level(value: str) -> str:
    """kube-apiserver's fieldValidation names, in any case (kubectl's --validate takes lower case)."""
    for level in LEVELS:
        if value.lower() == level.lower():
            return level
    raise argparse.ArgumentTypeError(f"must be one of {', '.join(LEVELS)}, not {value!r}")


def _report(value: str) -> tuple[str, str]:
    fmt, sep, path = value.partition("=")
    if not sep or fmt not in REPORTS or not path:
        raise argparse.ArgumentTypeError(f"expected FORMAT=FILE with FORMAT one of {', '.join(REPORTS)}")
    return fmt, path


def _open_reports(reports: list[tuple[str, str]], stack: contextlib.ExitStack) -> list[tuple[str, TextIO]]:
    opened: list[tuple[str, TextIO]] = []
    for fmt, path in reports:
        try:
            stream = stack.enter_context(open(path, "w", encoding="utf-8"))  # noqa: SIM115
        except OSError as err:
            raise UsageError(f"--report {fmt}={path}: cannot write: {err.strerror or err}") from None
        opened.append((fmt, stream))
    return opened


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UsageError as err:
        print(f"error: {printable(shorten(str(err), MAX_MESSAGE))}", file=sys.stderr)
        return EXIT_UNUSABLE
    except BrokenPipeError:
        # The reader went away (``| head``): point stdout at /dev/null so the flush at exit is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_REFUSED


def _run(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        return _run_reporting(args, stack)


def _run_reporting(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    if args.namespace == "":
        raise UsageError("--namespace must not be empty")
    explicit_kubevirt = read_kubevirt(args.kubevirt, sys.stdin.buffer) if args.kubevirt else None
    catalog = (
        read_catalog(args.catalog, namespace=args.namespace or DEFAULT_NAMESPACE, stdin=sys.stdin.buffer)
        if args.catalog
        else None
    )
    skipped = Skipped()
    exclude = excluder(args.exclude, skipped) if args.exclude else None
    files = read_files(args.filename, stdin=sys.stdin.buffer, exclude=exclude, foreign=True)
    prepared = prepare(
        files,
        explicit_namespace=args.namespace,
        field_validation=args.field_validation,
        skip=skip_kinds(args.skip_kind),
        catalog=catalog,
        skipped=skipped,
    )
    kubevirt = explicit_kubevirt
    if kubevirt is None:
        kubevirt = pick_kubevirt(prepared.kubevirts)
    if kubevirt is None and catalog is not None:
        kubevirt = pick_kubevirt(catalog.kubevirts)
    reports = _open_reports(args.report, stack)

    writer = Writer(
        args.output,
        check=args.check,
        vms=prepared.vms,
        stdout=sys.stdout,
        stderr=sys.stderr,
        progress=sys.stderr.isatty(),
        quiet=args.quiet,
        version=package_version(),
        reports=reports,
    )
    if catalog is not None:
        writer.remark(catalog.describe())
    for warning in prepared.warnings:
        writer.warning(warning)
    tally = Tally(files=len(files), skipped=prepared.skipped.total)
    # The text of each file, composed for its lines only when a result there needs them.
    locators = {file.source: Locator(file.data) for file in files if file.data is not None}
    for entry in prepared.entries:
        if isinstance(entry, Manifest):
            result = _judge(entry, prepared.index, prepared.conflicts, kubevirt, args)
        else:
            result = entry
        if result.outcome != ADMITTED or result.warnings:
            result.locate(locators.get(result.file))
        tally.add(result)
        writer.result(result)
    if not tally.vms and not tally.errors:
        writer.note(f"error: no VirtualMachine found in {', '.join(args.filename)}")
    if prepared.skipped.total:
        writer.remark(prepared.skipped.describe())
    if tally.unresolved:
        writer.remark(_unresolved_hint(tally.unresolved, catalog))
    writer.finish(tally)
    return tally.exit_code()


def _unresolved_hint(count: int, catalog: Catalog | None) -> str:
    vms = "1 VM is unresolved: it names" if count == 1 else f"{count} VMs are unresolved: they name"
    where = (
        "found in neither the inputs nor the catalog"
        if catalog is not None
        else "not found in the inputs (no --catalog was given)"
    )
    return (
        f"note: {vms} an instancetype, preference or ControllerRevision {where}; "
        "KubeVirt admits such a VM, but it cannot be rendered here: give the cluster's objects with "
        "--catalog (kubevirt-expand catalog snapshot, or common-instancetypes' bundle)"
    )


def _judge(
    manifest: Manifest,
    index: ObjectIndex,
    conflicts: Mapping[ObjectRef, str],
    kubevirt: Mapping[str, Any] | None,
    args: argparse.Namespace,
) -> Result:
    """The verdict on one VM: rendered (and validated), refused, or no verdict (a conflict, a bug)."""
    vm = manifest.object
    meta = vm.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    result = Result.of(
        manifest,
        ADMITTED,
        kind=VM_KIND,
        namespace=vm_namespace(vm, args.namespace),
        name=name if isinstance(name, str) else None,
    )
    lookup = WatchedLookup(index, conflicts)
    try:
        _set_vm_namespace(vm, args.namespace)
        rendered = expand(
            vm,
            lookup,
            kubevirt=kubevirt,
            presets=args.presets,
            validate=args.validate,
            exact_names=False,
            field_validation=args.field_validation,
            duplicates=[d.path for d in manifest.duplicates],
        )
    except ExpandError as err:
        result.outcome = ERROR if err.code >= 500 else UNRESOLVED if _unresolved(err, lookup) else REFUSED
        result.status = bound_status(err.status)
    except Exception as err:  # a bug must not end the run for the other VMs, nor show a traceback
        message = f"Internal error occurred: {type(err).__name__}: {err}"
        result.outcome, result.status = ERROR, bound_status(status(500, "InternalError", message))
    else:
        result.warnings = list(rendered.warnings)
        result.object = None if args.check else rendered.vm
    if lookup.touched:
        uses = "; it also uses ".join(dict.fromkeys(lookup.touched))  # each conflict once
        message = f"{result.label()} uses {uses}"
        details = {"name": result.name or "", "kind": VM_KIND}
        result.outcome, result.object = ERROR, None
        result.status = bound_status(status(409, "Conflict", message, details=details))
    return result


# What a VM names by reference that a cluster may hold though the inputs do not (spec.instancetype,
# spec.preference, the ControllerRevisions they or the status pin).
_REFERENCED_KINDS = frozenset(
    {INSTANCETYPE, CLUSTER_INSTANCETYPE, PREFERENCE, CLUSTER_PREFERENCE, CONTROLLER_REVISION}
)


def _unresolved(err: ExpandError, lookup: WatchedLookup) -> bool:
    """Whether the rendering failed only because an object the VM references was not given: every
    cause is a not-found of such an object that the lookup was asked for and did not hold."""
    details = err.status.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    if err.code != 422 or not causes:
        return False
    missing = {ref.not_found_message() for ref in lookup.missed if ref.kind in _REFERENCED_KINDS}
    return all(
        isinstance(c, Mapping) and c.get("reason") == CAUSE_NOT_FOUND and c.get("message") in missing
        for c in causes
    )


def _set_vm_namespace(vm: dict[str, Any], explicit: str | None) -> None:
    """Default the namespace like the PUT endpoint's path does, and refuse a mismatch as it does."""
    meta = vm.get("metadata")
    if meta is None:
        vm["metadata"] = meta = {}
    if not isinstance(meta, dict):
        return  # the renderer reports the broken metadata
    current = meta.get("namespace")
    if not current:
        meta["namespace"] = explicit or DEFAULT_NAMESPACE
    elif explicit and current != explicit:
        message = f"VM namespace must be empty or {explicit}"
        cause = Cause("metadata.namespace", f"{current!r} differs from --namespace {explicit!r}")
        name = meta.get("name")
        raise ExpandError(invalid_status(message, [cause], name=name if isinstance(name, str) else ""))
