"""``kubevirt-expand expand``: render VirtualMachines from manifests, no cluster and no server needed.

Everything the VMs reference is taken from the same inputs, the way ``kubectl apply -f`` would have
put it into a cluster; the renderer is the one the server runs, so the output equals what the
``expand-spec`` endpoint (and KubeVirt) would answer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from apiserver.cli.helpformat import KubeHelpFormatter
from apiserver.render import Cause, ExpandError, ObjectIndex, expand
from apiserver.render.errors import (
    MAX_CAUSE_TEXT,
    MAX_CAUSES,
    MAX_MESSAGE,
    bound_status,
    invalid_status,
    more_text,
    shorten,
    status,
)
from apiserver.render.fieldvalidation import DEFAULT, IGNORE, LEVELS, STRICT
from apiserver.render.objects import CLUSTER_SCOPED_KINDS, KUBEVIRT, VIRTUAL_MACHINE, canonical_kind
from apiserver.sources.documents import KubeDumper, reads_back_as_text
from apiserver.sources.manifests import Manifest, ManifestError, load_documents, read_manifests

DEFAULT_NAMESPACE = "default"
KUBEVIRT_CONFIGURATION = "KubeVirtConfiguration"
KUBEVIRT_GROUP = "kubevirt.io"

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

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

exit status: 0 every VM expanded, 1 some VM failed (its Status is on stderr), 2 usage error
"""


class UsageError(Exception):
    """A problem with the command line or its inputs as a whole: exit 2 with a one-line message."""


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "expand",
        help="expand VirtualMachines from manifests (offline)",
        description=(
            "Expand every VirtualMachine found in the given manifests (multi-document YAML or JSON, List "
            "objects, folders read recursively) against the instancetypes, preferences, "
            "ControllerRevisions and VirtualMachineInstancePresets found beside it, and print the "
            "expanded VMs. Failures are printed to stderr as Kubernetes Status objects."
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
        "--kubevirt",
        metavar="FILE",
        help="KubeVirt CR or KubeVirtConfiguration for the cluster defaults"
        "; without it a KubeVirt CR among the inputs, else a freshly deployed KubeVirt's defaults",
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
        choices=("yaml", "json"),
        default="yaml",
        help="output format: yaml (one document per VM) or json (a List when there are several)",
    )
    parser.add_argument(
        "--presets", action="store_true", help="also apply the VirtualMachineInstancePresets that match"
    )
    parser.add_argument(
        "--validate",
        action="store_true",
        help="also run KubeVirt's admission checks on the instancetype and preference",
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


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UsageError as err:
        print(f"error: {_printable(shorten(str(err), MAX_MESSAGE))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (``| head``): point stdout at /dev/null so the flush at exit is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED


def _run(args: argparse.Namespace) -> int:
    if args.namespace == "":
        raise UsageError("--namespace must not be empty")
    try:
        found = read_manifests(args.filename, stdin=sys.stdin.buffer)
        explicit_kubevirt = _read_kubevirt(args.kubevirt) if args.kubevirt else None
    except ManifestError as err:
        raise UsageError(str(err)) from None

    namespace = args.namespace or DEFAULT_NAMESPACE
    vms: list[Manifest] = []
    objects: list[dict[str, Any]] = []
    kubevirts: list[tuple[str, dict[str, Any]]] = []
    for manifest in found:
        source, obj = manifest.source, manifest.object
        if _is_vm(obj):
            vms.append(manifest)
            continue
        _judge_duplicates(manifest, args.field_validation)
        if obj["kind"] == KUBEVIRT:
            kubevirts.append((source, obj))
        else:
            _default_namespace(obj, namespace)
            objects.append(obj)
    if not vms:
        raise UsageError(f"no VirtualMachine found in {', '.join(args.filename)}")
    kubevirt = explicit_kubevirt if explicit_kubevirt is not None else _pick_kubevirt(kubevirts)

    index = ObjectIndex(objects)
    expanded: list[dict[str, Any]] = []
    failed = 0
    for manifest in vms:
        result = _expand_one(manifest, index, kubevirt, args)
        if result is None:
            failed += 1
            continue
        expanded.append(result)
        if args.output == "yaml":
            _write_yaml(result, first=len(expanded) == 1)
    if args.output == "json" and expanded:
        _write_json(expanded, single=len(vms) == 1)
    sys.stdout.flush()
    return EXIT_FAILED if failed else EXIT_OK


def _judge_duplicates(manifest: Manifest, level: str) -> None:
    """Keys an object other than a VM gave twice: refused (exit 2), warned about, or ignored."""
    if not manifest.duplicates or level == IGNORE:
        return
    first = manifest.duplicates[0]
    if level == STRICT:
        error = ManifestError(
            first.message, source=manifest.source, document=manifest.document, line=first.line
        )
        raise UsageError(f"{error} (--field-validation=Ignore or Warn lets it through)")
    where = f"{manifest.source}: document {manifest.document}"
    for duplicate in manifest.duplicates[:MAX_CAUSES]:
        print(
            f"Warning: {_printable(where)}: {_printable(shorten(duplicate.message, MAX_CAUSE_TEXT))}",
            file=sys.stderr,
        )
    if len(manifest.duplicates) > MAX_CAUSES:
        print(
            f"Warning: {_printable(where)}: {more_text(len(manifest.duplicates) - MAX_CAUSES)}",
            file=sys.stderr,
        )


def _is_vm(obj: Mapping[str, Any]) -> bool:
    if obj["kind"] != VIRTUAL_MACHINE:
        return False
    api_version = obj.get("apiVersion")
    # Other projects have VirtualMachine kinds too; an apiVersion-less VM is taken as KubeVirt's.
    return not isinstance(api_version, str) or api_version.partition("/")[0] in ("", KUBEVIRT_GROUP)


def _default_namespace(obj: dict[str, Any], namespace: str) -> None:
    if canonical_kind(obj["kind"]) in CLUSTER_SCOPED_KINDS:
        return
    meta = obj.get("metadata")
    if meta is None:
        obj["metadata"] = meta = {}
    if isinstance(meta, dict) and not meta.get("namespace"):
        meta["namespace"] = namespace


def _read_kubevirt(path: str) -> dict[str, Any]:
    """A KubeVirt CR (also in a List, as ``kubectl get kubevirt -o yaml`` prints it) or its configuration."""
    source = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as err:
        raise UsageError(f"{source}: cannot read: {err.strerror or err}") from None
    candidates: list[Any] = []
    for _, doc in load_documents(data, source):
        if isinstance(doc, dict) and isinstance(doc.get("items"), list) and doc.get("kind") == "List":
            candidates.extend(doc["items"])
        else:
            candidates.append(doc)
    expected = f"{source}: expected one KubeVirt CR or KubeVirtConfiguration"
    if len(candidates) != 1:
        raise UsageError(f"{expected}, found {len(candidates)} documents")
    (doc,) = candidates
    if not isinstance(doc, dict):
        raise UsageError(f"{expected}, found a {type(doc).__name__}")
    kind = doc.get("kind")
    if kind == KUBEVIRT:
        return doc
    if kind in (None, KUBEVIRT_CONFIGURATION):
        return {k: v for k, v in doc.items() if k not in ("kind", "apiVersion")}
    raise UsageError(f"{expected}, found kind {kind}")


def _pick_kubevirt(found: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
    if len(found) > 1:
        where = ", ".join(sorted({source for source, _ in found}))
        raise UsageError(f"{len(found)} KubeVirt CRs found ({where}); choose one with --kubevirt FILE")
    return found[0][1] if found else None


def _vm_label(vm: Mapping[str, Any]) -> str:
    meta = vm.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    label = name if isinstance(name, str) and name else "(unnamed)"
    return shorten(
        f"{namespace}/{label}" if isinstance(namespace, str) and namespace else label, MAX_CAUSE_TEXT
    )


def _expand_one(
    manifest: Manifest, index: ObjectIndex, kubevirt: Mapping[str, Any] | None, args: argparse.Namespace
) -> dict[str, Any] | None:
    """The expanded VM, or None after reporting the failure on stderr."""
    vm = manifest.object
    try:
        _set_vm_namespace(vm, args.namespace)
        result = expand(
            vm,
            index,
            kubevirt=kubevirt,
            presets=args.presets,
            validate=args.validate,
            exact_names=False,
            field_validation=args.field_validation,
            duplicates=[d.path for d in manifest.duplicates],
        )
    except ExpandError as err:
        _report(vm, err.status)
        return None
    except Exception as err:  # a bug must not end the run for the other VMs, nor show a traceback
        message = f"Internal error occurred: {type(err).__name__}: {err}"
        _report(vm, status(500, "InternalError", message))
        return None
    for warning in result.warnings:
        print(f"Warning: {_printable(_vm_label(vm))}: {_printable(warning)}", file=sys.stderr)
    return result.vm


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


def _report(vm: Mapping[str, Any], status_body: Mapping[str, Any]) -> None:
    """The failure on stderr, bounded as the server bounds its answers."""
    status_body = bound_status(status_body)
    message = str(status_body.get("message", "")).replace("\n", " ")
    print(f"error: {_printable(_vm_label(vm))}: {_printable(message)}", file=sys.stderr)
    line = json.dumps(status_body, separators=(",", ":"), ensure_ascii=False)  # escapes C0 itself
    print(_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", line), file=sys.stderr)


# What a line on the terminal must not hold as is (names and fields come from the input): control
# characters could forge lines or send terminal escape sequences.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _printable(text: str) -> str:
    """``text`` with its control characters written as ``\\xNN`` / ``\\uNNNN``."""
    if text.isprintable():
        return text
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if m.group() < "\u0100" else f"\\u{ord(m.group()):04x}", text
    )


class _Dumper(KubeDumper):
    """Block style, members in the renderer's order, multi-line text (cloud-init) as literal blocks,
    strings kubectl would read as something else quoted."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None if reads_back_as_text(value) else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def _write_yaml(vm: Mapping[str, Any], *, first: bool) -> None:
    text = yaml.dump(
        vm, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16
    )
    sys.stdout.write(text if first else "---\n" + text)


def _write_json(vms: Sequence[Mapping[str, Any]], *, single: bool) -> None:
    body: Any = vms[0] if single else {"apiVersion": "v1", "kind": "List", "items": list(vms)}
    sys.stdout.write(json.dumps(body, indent=4, ensure_ascii=False) + "\n")
