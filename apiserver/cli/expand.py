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
from dataclasses import dataclass
from typing import Any, TextIO

from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.cli.inputs import (
    CONFIG_FILENAME,
    DEFAULT_NAMESPACE,
    Catalog,
    Prepared,
    Skipped,
    UsageError,
    WatchedLookup,
    add_catalog_argument,
    excluder,
    find_config,
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
    EXIT_RANK,
    EXIT_REFUSED,
    EXIT_UNUSABLE,
    MISSING,
    REFUSED,
    UNRESOLVED,
    VM_KIND,
    Result,
    Tally,
)
from apiserver.cli.suggest import Names
from apiserver.documents.locate import Locator
from apiserver.documents.manifests import FileRead, Manifest, read_files
from apiserver.render import Cause, ExpandError, ObjectIndex, ObjectRef, expand
from apiserver.render.golang.gotext import go_lower
from apiserver.render.instancetype.find import (
    INSTANCETYPE_FAMILY,
    PREFERENCE_FAMILY,
    holds_object,
    named_revision,
)
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

  # A GitOps repository against common-instancetypes (shipped with the command: catalog list), a name
  # it lacks refused with the closest one, charts' sources excluded
  kubevirt-expand expand -f . --catalog common-instancetypes --catalog-complete \\
      --exclude 'charts/*/templates' --validate --check

  # The same against a snapshot of the cluster's catalog
  kubevirt-expand catalog snapshot -n team-a -o catalog.yaml
  kubevirt-expand expand -f . --catalog catalog.yaml --exclude 'charts/*/templates' --validate --check

  # What .kubevirt-expand.yaml says (paths, or clusters each with its own catalog and options)
  kubevirt-expand expand --check -o junit > junit.xml

exit status:
  0  every VM admitted (rendered; with --validate, also passed the admission checks)
  1  some VM refused, the input otherwise sound (each refusal: a line and its Status on stderr)
  2  unusable input: a file or document that cannot be read (nothing from that file is used), an
     object defined twice in the inputs, a VM that uses such an object, a kind KubeVirt does not
     serve in its own API groups (kind: VirtualMachne), no VirtualMachine at all, or a usage error;
     every other VM is still judged and reported
  3  no VM refused and the input sound, but some VM unresolved: an instancetype, preference or
     ControllerRevision it names is neither among the inputs nor in a --catalog (KubeVirt admits
     such a VM; it cannot be rendered from what was given); its line gives the closest name
  4  with --catalog-complete: some VM names an instancetype or preference that is neither among the
     inputs nor in the catalog (a typo: KubeVirt would admit the VM, which never starts); codes rank
     2, 4, 1, 3
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
        metavar="FILE|DIR|-",
        help="manifest file, folder (*.yaml, *.yml, *.json, recursively) or - for stdin; repeatable; "
        f"without it, the paths (or clusters) of {CONFIG_FILENAME}",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"the configuration file: paths, or clusters each with its paths, catalog and options; "
        f"without it, {CONFIG_FILENAME} in the current folder or above it up to the repository's root; "
        "flags override it",
    )
    add_catalog_argument(parser)
    parser.add_argument(
        "--catalog-complete",
        action="store_true",
        help="the inputs and --catalog hold every instancetype and preference the cluster has: a VM that "
        "names one found in neither is Missing (exit 4), with the closest names, instead of unresolved",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="skip files and folders: a GLOB without / matches a file or folder name anywhere "
        "('*.tmpl.yaml', 'templates'), one with / the end of the path ('charts/*/templates'); "
        "repeatable",
    )
    parser.add_argument(
        "--skip-kind",
        action="append",
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
        "--presets",
        action="store_true",
        default=None,
        help="also apply the VirtualMachineInstancePresets that match",
    )
    parser.add_argument(
        "--validate",
        action="store_true",
        default=None,
        help="also run KubeVirt's VM admission webhook as for a CREATE: a VM it would refuse is refused "
        "(exit 1) with its causes",
    )
    parser.add_argument(
        "--field-validation",
        type=_level,
        metavar="|".join(LEVELS),
        help="unknown, case-mismatched, duplicate and missing required fields: Strict refuses the VM "
        "(exit 1), Warn expands it and prints warnings, Ignore expands it silently as KubeVirt does "
        f'(default "{DEFAULT}")',
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


@dataclass(slots=True)
class _Run:
    """One judging pass: a cluster of the configuration file (``cluster`` its name), or the whole run."""

    cluster: str | None
    args: argparse.Namespace
    files: list[FileRead]
    prepared: Prepared
    catalog: Catalog | None
    kubevirt: Mapping[str, Any] | None


def _runs(args: argparse.Namespace) -> list[argparse.Namespace]:
    """Each pass's options: the flags given, over the configuration file's cluster, over its defaults
    (:mod:`apiserver.cli.config`). With ``-f``, one pass over those paths (the file's clusters unused)."""
    flags = {
        "paths": _given(args.filename),
        "exclude": _given(args.exclude),
        "catalog": _given(args.catalog),
        "kubevirt": args.kubevirt,
        "namespace": args.namespace,
        "skip_kinds": _given(args.skip_kind),
        "validate": args.validate,
        "presets": args.presets,
        "field_validation": args.field_validation,
        "catalog_complete": args.catalog_complete or None,
    }
    path = args.config if args.config is not None else find_config()
    passes: list[tuple[str | None, dict[str, Any]]] = [(None, flags)]
    if path:
        from apiserver.cli import config  # only for a run with a file (its module docstring)

        loaded = config.load(path)
        given = config.Options(**flags)
        if args.filename or not loaded.clusters:
            passes = [(None, _vars_of(given.under(loaded.defaults)))]
        else:
            passes = [(c.name, _vars_of(given.under(c.options))) for c in loaded.clusters]
    out = []
    for name, options in passes:
        if not options["paths"]:
            raise UsageError(
                f"no input: give -f FILE|DIR|- or write the paths to judge in {path or CONFIG_FILENAME} "
                "(see docs/ci-automation.md)"
            )
        one = argparse.Namespace(**vars(args))
        one.cluster = name
        one.filename = list(options["paths"])
        one.exclude = list(options["exclude"] or ())
        one.catalog = list(options["catalog"] or ())
        one.kubevirt = options["kubevirt"]
        one.namespace = options["namespace"]
        one.skip_kind = list(options["skip_kinds"] or ())
        one.validate = bool(options["validate"])
        one.presets = bool(options["presets"])
        one.field_validation = options["field_validation"] or DEFAULT
        one.catalog_complete = bool(options["catalog_complete"])
        out.append(one)
    return out


def _vars_of(options: Any) -> dict[str, Any]:
    """A dataclass's members by name (:class:`apiserver.cli.config.Options`: slots, no ``__dict__``)."""
    return {name: getattr(options, name) for name in options.__slots__}


def _given(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values else None


def _prepare(args: argparse.Namespace) -> _Run:
    """Read one pass's catalog, KubeVirt CR and files, and sort them out."""
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
    return _Run(args.cluster, args, files, prepared, catalog, kubevirt)


def _run_reporting(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    runs = [_prepare(one) for one in _runs(args)]
    reports = _open_reports(args.report, stack)

    writer = Writer(
        args.output,
        check=args.check,
        vms=sum(run.prepared.vms for run in runs),
        stdout=sys.stdout,
        stderr=sys.stderr,
        progress=sys.stderr.isatty(),
        quiet=args.quiet,
        version=package_version(),
        reports=reports,
    )
    total = Tally()
    codes = []
    for run in runs:
        tally = _judge_run(run, writer)
        codes.append(tally.exit_code())
        total.merge(tally)
        if run.cluster is not None and not args.quiet:
            writer.note(f"cluster {run.cluster}: {tally.summary().removeprefix('summary: ')}")
    if runs[0].cluster is not None:
        total.clusters = len(runs)
    writer.finish(total)
    return max(codes, key=EXIT_RANK.index)


def _judge_run(run: _Run, writer: Writer) -> Tally:
    """Judge one pass's VMs, writing each result; its tally."""
    args, prepared, catalog = run.args, run.prepared, run.catalog
    if run.cluster is not None and not args.quiet:
        writer.note(f"cluster {run.cluster}: {', '.join(args.filename)}")
    if catalog is not None:
        writer.remark(catalog.describe())
    for warning in prepared.warnings:
        writer.warning(warning)
    tally = Tally(files=len(run.files), skipped=prepared.skipped.total)
    names = Names(prepared.index)
    # The text of each file, composed for its lines only when a result there needs them.
    locators = {file.source: Locator(file.data) for file in run.files if file.data is not None}
    for entry in prepared.entries:
        if isinstance(entry, Manifest):
            result = _judge(entry, prepared.index, prepared.conflicts, run.kubevirt, args, names)
        else:
            result = entry
        result.cluster = run.cluster
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
    return tally


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
        "--catalog (the bundled common-instancetypes: kubevirt-expand catalog list; or a kubevirt-expand "
        "catalog snapshot), and --catalog-complete to make a name the catalog lacks an error"
    )


def _judge(
    manifest: Manifest,
    index: ObjectIndex,
    conflicts: Mapping[ObjectRef, str],
    kubevirt: Mapping[str, Any] | None,
    args: argparse.Namespace,
    names: Names,
) -> Result:
    """The verdict on one VM: rendered (and validated), refused, unresolved or missing (what it names
    is not given), or no verdict (a conflict, a bug)."""
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
    placed = False  # in its namespace: what it names can be looked for
    try:
        _set_vm_namespace(vm, args.namespace)
        placed = True
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
        if args.validate and result.outcome == REFUSED:
            from apiserver.cli.webhookfields import placed_causes  # for a refusal only

            result.causes = placed_causes(vm, result.status)
        missing = _missing_names(vm, index) if placed else []
        if missing or result.outcome == UNRESOLVED:
            namespace = result.namespace or DEFAULT_NAMESPACE
            hinted = [(ref, where, names.hint(ref, namespace, bool(args.catalog))) for ref, where in missing]
            body = result.status
            if result.causes:  # the webhook's field-less causes given their fields (webhookfields)
                body = {**body, "details": {**(body.get("details") or {}), "causes": result.causes}}
            result.headline, result.findings = _name_first(body, hinted, lookup, names, namespace, args)
            if missing and args.catalog_complete and result.outcome in (UNRESOLVED, REFUSED):
                result.outcome = MISSING
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
        result.headline = result.findings = None
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


def _missing_names(vm: Mapping[str, Any], index: ObjectIndex) -> list[tuple[ObjectRef, str]]:
    """The instancetype and preference the VM names as live objects (no revision pinned) that the run
    does not hold, each with its field: what a typo leaves behind, whatever else fails."""
    meta = vm.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    namespace = namespace if isinstance(namespace, str) else ""
    spec = vm.get("spec")
    found: list[tuple[ObjectRef, str]] = []
    for family in (INSTANCETYPE_FAMILY, PREFERENCE_FAMILY):
        matcher = spec.get(family.matcher) if isinstance(spec, Mapping) else None
        name = matcher.get("name") if isinstance(matcher, Mapping) else None
        if not isinstance(matcher, Mapping) or not isinstance(name, str) or not name:
            continue
        revision, _ = named_revision(family, vm)
        pinned = index.get(ObjectRef(CONTROLLER_REVISION, namespace, revision)) if revision else None
        if revision and (matcher.get("revisionName") or pinned is None or holds_object(pinned, name)):
            continue  # the revision is what is read (a missing one is KubeVirt's own not-found)
        kind = matcher.get("kind")
        kind = kind if isinstance(kind, str) else ""
        canonical = family.kinds.get(kind) or family.kinds.get(go_lower(kind))
        if canonical is None:
            continue  # an unknown kind: KubeVirt's own refusal says so
        ref = ObjectRef(
            canonical, "" if canonical in (CLUSTER_INSTANCETYPE, CLUSTER_PREFERENCE) else namespace, name
        )
        if index.get(ref) is None:
            found.append((ref, family.name_field))
    return found


def _name_first(
    body: Mapping[str, Any],
    missing: list[tuple[ObjectRef, str, str]],
    lookup: WatchedLookup,
    names: Names,
    namespace: str,
    args: argparse.Namespace,
) -> tuple[str, list[dict[str, Any]]]:
    """What the reports say of a VM whose instancetype or preference is missing (the Status itself
    stays the one KubeVirt's code answers): a first line naming each missing object first, with the
    closest names, then the Status's message; and the causes to report, those not-found causes first,
    then the Status's (another not-found cause, of a pinned revision, with its suggestion in place)."""
    details = body.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    hints = {ref.not_found_message(): hint for ref, _, hint in missing}
    for ref in lookup.missed:
        hints.setdefault(ref.not_found_message(), names.hint(ref, namespace, bool(args.catalog)))
    lead = [
        {"reason": CAUSE_NOT_FOUND, "message": ref.not_found_message() + hint, "field": where}
        for ref, where, hint in missing
    ]
    named = {ref.not_found_message() for ref, _, _ in missing}
    rest = []
    for cause in causes if isinstance(causes, list) else []:
        if not isinstance(cause, Mapping):
            continue
        text = cause.get("message")
        if cause.get("reason") == CAUSE_NOT_FOUND and text in named:
            continue  # led with already
        if cause.get("reason") == CAUSE_NOT_FOUND and isinstance(text, str) and hints.get(text):
            cause = {**cause, "message": text + hints[text]}
        rest.append(dict(cause))
    message = str(body.get("message", ""))
    parts = [str(c["message"]) for c in lead]
    if message not in named:
        parts.append(message + hints.get(message, ""))
    return "; ".join(parts), [*lead, *rest]


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
