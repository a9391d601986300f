"""The inputs of one ``kubevirt-expand expand`` run sorted out before any VM is rendered.

From the files read (:func:`apiserver.documents.manifests.read_files`): the VMs to judge, in input order,
the index of what they may use, the KubeVirt CRs found, and every problem that is not a VM's own, each
as an ``Error`` :class:`~apiserver.cli.report.Result` in its place among the VMs:

- a file that cannot be read, or holds a broken document (nothing from that file is used);
- an object defined twice (same kind, namespace and name) anywhere in the inputs: ``kubectl apply``
  would keep whichever copy it applied last, so the copy found later is an error naming both places;
  only the first copy goes into the index;
- an object other than a VM with a key given twice, at ``--field-validation Strict``.

An object behind such a problem is a *conflict*: a VM whose rendering reads it gets an ``Error``
instead of a verdict (:class:`WatchedLookup` notices), since its verdict would rest on a guess.

What is not KubeVirt's is passed over and counted (:class:`Skipped`), never judged: objects of kinds
the renderer never reads (Deployments, ConfigMaps, Kustomizations, a Helm chart's Services), kinds
given to ``--skip-kind``, documents that are no Kubernetes object at all (a GitHub workflow) and files
``--exclude`` names. A *catalog* (``--catalog``, :func:`read_catalog`) adds what a cluster already
holds (instancetypes, preferences, a KubeVirt CR) under the inputs: an input object of the same kind,
namespace and name replaces the catalog's, as applying it would.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiserver.cli import bundled
from apiserver.cli.report import ERROR, Result
from apiserver.cli.suggest import unknown_kind
from apiserver.documents.manifests import (
    Exclude,
    FileRead,
    Foreign,
    Manifest,
    ManifestError,
    load_documents,
    load_manifests,
    read_files,
)
from apiserver.render import ObjectIndex, ObjectRef
from apiserver.render.kubernetes.errors import CAUSE_NOT_SUPPORTED, MAX_CAUSES, more_text, status
from apiserver.render.kubernetes.fieldvalidation import STRICT, WARN
from apiserver.render.objects import (
    CLUSTER_INSTANCETYPE,
    CLUSTER_PREFERENCE,
    CLUSTER_SCOPED_KINDS,
    CONTROLLER_REVISION,
    INSTANCETYPE,
    KIND_ALIASES,
    KUBEVIRT,
    PREFERENCE,
    PRESET,
    RESOURCE_NAMES,
    VIRTUAL_MACHINE,
    canonical_kind,
    ref_of,
)

DEFAULT_NAMESPACE = "default"
CONFIG_FILENAME = ".kubevirt-expand.yaml"
KUBEVIRT_CONFIGURATION = "KubeVirtConfiguration"
KUBEVIRT_GROUP = "kubevirt.io"


# The kinds a run reads: the VMs, what their rendering may look up, the cluster's configuration.
KUBEVIRT_KINDS = frozenset({*RESOURCE_NAMES, *KIND_ALIASES, KUBEVIRT})
# What a catalog contributes: what a cluster holds that VMs name, and its configuration.
CATALOG_KINDS = frozenset(
    {
        INSTANCETYPE,
        CLUSTER_INSTANCETYPE,
        PREFERENCE,
        CLUSTER_PREFERENCE,
        CONTROLLER_REVISION,
        PRESET,
        *KIND_ALIASES,
    }
)
# ControllerRevisions and VMIs the inputs read are KubeVirt's (apps/v1 ones too: KubeVirt keeps its
# revisions as apps/v1); a Deployment's or StatefulSet's revision is read as well and never matches.


def find_config(start: str = ".") -> str | None:
    """The configuration file (:mod:`apiserver.cli.config`) of the current folder, else (inside a git repository) of the nearest
    folder above it up to the repository's root, as a path relative to the current folder (so the run
    names files as the file's paths say). Outside a repository only the current folder counts: a file
    in some folder above must not steer runs it was not written for."""
    here = Path(start).resolve()
    above: Path | None = None
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILENAME
        if candidate.is_file():
            if folder == here:
                return os.path.relpath(candidate)
            above = above or candidate
        if (folder / ".git").exists():
            return os.path.relpath(above) if above is not None else None
    return None


class UsageError(Exception):
    """A problem with the command line or its inputs as a whole: exit 2 with a one-line message."""


@dataclass(slots=True)
class Skipped:
    """What a run passed over, counted for the summary: objects by kind (not KubeVirt's, or given to
    ``--skip-kind``), documents that are no Kubernetes object, files and folders ``--exclude`` named."""

    kinds: dict[str, int] = field(default_factory=dict)
    foreign: list[Foreign] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.kinds.values()) + len(self.foreign) + len(self.excluded)

    def describe(self) -> str:
        """``skipped: 2 ConfigMap, 1 Deployment; 1 document that is no Kubernetes object (ci.yaml);
        1 file or folder excluded``; ``""`` when nothing was."""
        parts = []
        if self.kinds:
            parts.append(", ".join(f"{n} {kind}" for kind, n in sorted(self.kinds.items())))
        if self.foreign:
            n = len(self.foreign)
            sources = list(dict.fromkeys(f.source for f in self.foreign))
            shown = ", ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
            noun = (
                "document that is no Kubernetes object"
                if n == 1
                else "documents that are no Kubernetes objects"
            )
            parts.append(f"{n} {noun} ({shown})")
        if self.excluded:
            n = len(self.excluded)
            parts.append(f"{n} {'file or folder' if n == 1 else 'files and folders'} excluded")
        return "skipped: " + "; ".join(parts) if parts else ""


def excluder(patterns: Sequence[str], skipped: Skipped) -> Exclude:
    """``--exclude``: a GLOB without ``/`` matches the name of a file or folder anywhere; one with ``/``
    matches the end of the path as printed (``*`` crosses ``/``). What matches is noted in ``skipped``."""
    stripped = [p.rstrip("/") or p for p in patterns]
    names = [p for p in stripped if "/" not in p]
    paths = [p for p in stripped if "/" in p]

    def exclude(path: str, is_dir: bool) -> bool:
        clean = path.rstrip("/") or path
        name = clean.rsplit("/", 1)[-1]
        hit = any(fnmatch.fnmatchcase(name, p) for p in names) or any(
            fnmatch.fnmatchcase(clean, p) or fnmatch.fnmatchcase(clean, "*/" + p) for p in paths
        )
        if hit:
            skipped.excluded.append(clean + ("/" if is_dir else ""))
        return hit

    return exclude


def skip_kinds(values: Iterable[str]) -> frozenset[str]:
    """``--skip-kind``: kinds, comma-separated or repeated."""
    return frozenset(k.strip() for v in values for k in v.split(",") if k.strip())


@dataclass(slots=True)
class Catalog:
    """``--catalog``: the objects a cluster holds already, the KubeVirt CRs found, and what was read."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    kubevirts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)
    files: int = 0
    ignored: int = 0
    bundled: list[str] = field(
        default_factory=list
    )  # the bundled releases read (common-instancetypes@v1.7.0)

    def describe(self) -> str:
        """``catalog: 2 files: 45 VirtualMachineClusterInstancetype, 20 VirtualMachineClusterPreference,
        1 KubeVirt``; a bundled release is named first (``catalog: common-instancetypes@v1.7.0 (bundled)
        and 1 file: ...``)."""
        counts = dict(self.kinds)
        if self.kubevirts:
            counts[KUBEVIRT] = len(self.kubevirts)
        listed = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "nothing a VM uses"
        parts = [f"{label} (bundled)" for label in self.bundled]
        if self.files or not parts:
            parts.append(f"{self.files} file" if self.files == 1 else f"{self.files} files")
        ignored = (
            f" ({self.ignored} other {'object' if self.ignored == 1 else 'objects'} ignored)"
            if self.ignored
            else ""
        )
        return f"catalog: {' and '.join(parts)}: {listed}{ignored}"


def add_catalog_argument(parser: Any) -> None:
    """``--catalog``, the same on every command that reads one."""
    parser.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="FILE|DIR|NAME",
        help="instancetypes, preferences (and a KubeVirt CR) the cluster holds already: a 'catalog "
        "snapshot', common-instancetypes' release bundle, or a bundled catalog by NAME "
        f"('{bundled.NAME}' for its newest release, '{bundled.NAME}@v1.6.0'; 'catalog list'); VMs use "
        "them where the inputs hold none of the same kind, namespace and name; repeatable (the first "
        "copy of an object wins)",
    )


def read_catalog(paths: Sequence[str], *, namespace: str, stdin: Any = None) -> Catalog:
    """The objects of ``--catalog`` files, folders and bundled releases (``common-instancetypes[@V]``,
    :mod:`apiserver.cli.bundled`; a file or folder of that name wins), VMs and other kinds ignored,
    documents that are no Kubernetes object passed over. The first copy of an object wins. Raises
    :class:`UsageError` for a file that cannot be read: a catalog decides verdicts, so it must be whole."""
    catalog = Catalog()
    seen: set[ObjectRef] = set()
    for path in paths:
        for manifests in _catalog_manifests(path, catalog, stdin):
            _add_to_catalog(catalog, manifests, seen, namespace)
    return catalog


def _catalog_manifests(path: str, catalog: Catalog, stdin: Any) -> Iterator[Sequence[Manifest]]:
    """The manifests of one ``--catalog``, file by file."""
    if path != "-" and not os.path.lexists(path):
        try:
            release = bundled.find(path)
        except bundled.UnknownCatalog as err:
            raise UsageError(f"--catalog {err}") from None
        if release is not None:
            catalog.bundled.append(release.label)
            yield load_manifests(bundled.read(release), release.label, foreign=[])
            return
        close = bundled.suggestion(path)
        if close is not None:
            raise UsageError(
                f"--catalog {path}: no such file or directory, nor a bundled catalog; did you mean {close}? "
                "(kubevirt-expand catalog list)"
            )
    for file in read_files([path], stdin=stdin, foreign=True):
        if file.error is not None:
            raise UsageError(f"--catalog {file.error}")
        catalog.files += 1
        yield file.manifests


def _add_to_catalog(
    catalog: Catalog, manifests: Sequence[Manifest], seen: set[ObjectRef], namespace: str
) -> None:
    for manifest in manifests:
        obj = manifest.object
        kind = obj["kind"]
        if kind == KUBEVIRT:
            catalog.kubevirts.append((manifest.source, obj))
            continue
        if kind not in CATALOG_KINDS:
            catalog.ignored += 1
            continue
        _default_namespace(obj, namespace)
        ref = ref_of(obj)
        if ref is None or ref in seen:
            continue
        seen.add(ref)
        catalog.objects.append(obj)
        catalog.kinds[kind] = catalog.kinds.get(kind, 0) + 1


@dataclass(slots=True)
class Prepared:
    """What the run judges: ``entries`` are VMs to render and ready results, in input order."""

    entries: list[Manifest | Result] = field(default_factory=list)
    index: ObjectIndex = field(default_factory=ObjectIndex)
    kubevirts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    conflicts: dict[ObjectRef, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    vms: int = 0
    skipped: Skipped = field(default_factory=Skipped)


def is_vm(obj: Mapping[str, Any]) -> bool:
    if obj["kind"] != VIRTUAL_MACHINE:
        return False
    api_version = obj.get("apiVersion")
    # Other projects have VirtualMachine kinds too; an apiVersion-less VM is taken as KubeVirt's.
    return not isinstance(api_version, str) or api_version.partition("/")[0] in ("", KUBEVIRT_GROUP)


def vm_namespace(vm: Mapping[str, Any], explicit: str | None) -> str:
    """The namespace a VM is judged in: its own, else ``-n``, else ``default``."""
    meta = vm.get("metadata")
    current = meta.get("namespace") if isinstance(meta, Mapping) else None
    return current if isinstance(current, str) and current else explicit or DEFAULT_NAMESPACE


def _name(obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else None


def file_error(error: ManifestError) -> Result:
    problem = error.problem
    return Result(
        error.source,
        error.document,
        ERROR,
        line=error.line,
        status=status(400, "BadRequest", problem),
    )


def _default_namespace(obj: dict[str, Any], namespace: str) -> None:
    if canonical_kind(obj["kind"]) in CLUSTER_SCOPED_KINDS:
        return
    meta = obj.get("metadata")
    if meta is None:
        obj["metadata"] = meta = {}
    if isinstance(meta, dict) and not meta.get("namespace"):
        meta["namespace"] = namespace


# What identifies an object across the inputs: (API group, kind, namespace, name). The kinds the
# renderer reads are found by kind alone (a flavor.kubevirt.io VirtualMachineFlavor is the
# instancetype of that name), so their group is left out.
Identity = tuple[str, str, str, str]


def _identity(manifest: Manifest, explicit: str | None, vm: bool) -> tuple[Identity, ObjectRef | None] | None:
    obj = manifest.object
    if vm:
        name = _name(obj)
        if not name:
            return None
        return ("", VIRTUAL_MACHINE, vm_namespace(obj, explicit), name), None
    ref = ref_of(obj)
    if ref is None:
        return None
    api_version = obj.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    if ref.kind in RESOURCE_NAMES:
        group = ""
    return (group, ref.kind, ref.namespace, ref.name), ref


def _places(manifests: Sequence[Manifest]) -> str:
    where = [f"in {m.where()}" for m in manifests]
    listed = ", ".join(where[:-1]) + f" and {where[-1]}"
    count = "twice" if len(manifests) == 2 else f"{len(manifests)} times"
    return f"defined {count}: {listed}"


def _object_label(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def prepare(
    files: Sequence[FileRead],
    *,
    explicit_namespace: str | None,
    field_validation: str,
    skip: frozenset[str] = frozenset(),
    catalog: Catalog | None = None,
    skipped: Skipped | None = None,
    read_also: frozenset[str] = frozenset(),
) -> Prepared:
    """Sort the files' objects out (see the module docstring). ``skip``: kinds to pass over;
    ``skipped``: where the run's count of what it passed over is kept (files excluded already);
    ``read_also``: kinds beyond KubeVirt's that the command reads (``resources``: Namespaces and
    ResourceQuotas), kept rather than passed over."""
    namespace = explicit_namespace or DEFAULT_NAMESPACE
    out = Prepared()
    if skipped is not None:
        out.skipped = skipped
    seen: dict[Identity, list[Manifest]] = {}
    refs: dict[Identity, ObjectRef] = {}
    objects: list[dict[str, Any]] = []
    for file in files:
        if file.error is not None:
            out.entries.append(file_error(file.error))
            continue
        out.skipped.foreign.extend(file.foreign)
        for manifest in file.manifests:
            obj = manifest.object
            vm = is_vm(obj)
            kind = obj["kind"]
            known = vm or (kind in KUBEVIRT_KINDS and kind != VIRTUAL_MACHINE) or kind in read_also
            if kind in skip or not known:
                unknown = None if kind in skip else unknown_kind(obj)
                if unknown is not None:  # kind: VirtualMachne in kubevirt.io/v1: a typo, not another's
                    out.entries.append(_unknown_kind(manifest, explicit_namespace, *unknown))
                    continue
                if kind == VIRTUAL_MACHINE and not vm:  # another project's VirtualMachine
                    kind = f"{kind} ({str(obj.get('apiVersion')).partition('/')[0]})"
                out.skipped.kinds[kind] = out.skipped.kinds.get(kind, 0) + 1
                continue
            if vm:
                out.vms += 1
            elif obj["kind"] == KUBEVIRT:
                _kubevirt_duplicate_keys(manifest, field_validation, out.warnings)
                out.kubevirts.append((manifest.source, obj))
                continue
            else:
                _default_namespace(obj, namespace)
            found = _identity(manifest, explicit_namespace, vm)
            if found is not None:
                key, ref = found
                copies = seen.setdefault(key, [])
                copies.append(manifest)
                if ref is not None:
                    refs[key] = ref
                if len(copies) > 1:
                    out.entries.append(_duplicate(manifest, copies[0], key))
                    continue
            if vm:
                out.entries.append(manifest)
                continue
            refused = _judge_duplicate_keys(manifest, field_validation, out.warnings)
            if refused is not None:
                out.entries.append(refused)
                ref = ref_of(obj)
                if ref is not None and refused.status is not None:
                    out.conflicts[ref] = f"{refused.label()}, which is refused in {refused.where()}: " + str(
                        refused.status["message"]
                    )
            objects.append(obj)
    for key, copies in seen.items():
        if len(copies) > 1 and key in refs:
            out.conflicts[refs[key]] = f"{_object_label(*key[1:])}, which is {_places(copies)}"
    if catalog is not None:
        given = set(refs.values())
        objects = [o for o in catalog.objects if ref_of(o) not in given] + objects
    out.index = ObjectIndex(objects)
    return out


def _unknown_kind(manifest: Manifest, explicit: str | None, message: str, group: str) -> Result:
    """An object of a KubeVirt API group whose kind KubeVirt does not serve: an error at its ``kind``
    (the line reports point at), as kube-apiserver would refuse to map it."""
    obj = manifest.object
    kind, name = str(obj["kind"]), _name(obj)
    cause = {"reason": CAUSE_NOT_SUPPORTED, "message": message, "field": "kind"}
    details = {"name": name or "", "group": group, "kind": kind, "causes": [cause]}
    return Result.of(
        manifest,
        ERROR,
        kind=kind,
        namespace=vm_namespace(obj, explicit),
        name=name,
        status=status(400, "BadRequest", message, details=details),
    )


def _duplicate(manifest: Manifest, first: Manifest, key: Identity) -> Result:
    _, kind, namespace, name = key
    result = Result.of(manifest, ERROR, kind=kind, namespace=namespace or None, name=name)
    message = (
        f"{result.label()} is {_places([first, manifest])}; "
        "applied together, whichever is applied last replaces the other"
    )
    result.status = status(409, "AlreadyExists", message, details={"name": name, "kind": kind})
    return result


def _warn_duplicate_keys(manifest: Manifest, warnings: list[str]) -> None:
    where = manifest.where()
    warnings.extend(f"{where}: {d.message}" for d in manifest.duplicates[:MAX_CAUSES])
    if len(manifest.duplicates) > MAX_CAUSES:
        warnings.append(f"{where}: {more_text(len(manifest.duplicates) - MAX_CAUSES)}")


def _kubevirt_duplicate_keys(manifest: Manifest, level: str, warnings: list[str]) -> None:
    """A KubeVirt CR configures every verdict: a key given twice in it at Strict stops the run."""
    if not manifest.duplicates:
        return
    if level == STRICT:
        first = manifest.duplicates[0]
        error = ManifestError(
            first.message, source=manifest.source, document=manifest.document, line=first.line
        )
        raise UsageError(f"{error} (--field-validation=Ignore or Warn lets it through)")
    if level == WARN:
        _warn_duplicate_keys(manifest, warnings)


def _judge_duplicate_keys(manifest: Manifest, level: str, warnings: list[str]) -> Result | None:
    """Keys an object other than a VM gave twice: an error (Strict), warnings (Warn), or nothing."""
    if not manifest.duplicates or level not in (STRICT, WARN):
        return None
    if level == WARN:
        _warn_duplicate_keys(manifest, warnings)
        return None
    first = manifest.duplicates[0]
    ref = ref_of(manifest.object)
    message = f"{first.message} (--field-validation=Ignore or Warn lets it through)"
    return Result.of(
        manifest,
        ERROR,
        kind=str(manifest.object["kind"]),
        namespace=(ref.namespace or None) if ref else None,
        name=_name(manifest.object),
        line=first.line,
        status=status(400, "BadRequest", message),
    )


class WatchedLookup:
    """The run's index, noting each conflict a rendering read (see the module docstring)."""

    __slots__ = ("_conflicts", "index", "missed", "touched")

    def __init__(self, index: ObjectIndex, conflicts: Mapping[ObjectRef, str]) -> None:
        self.index = index
        self._conflicts = conflicts
        self.touched: list[str] = []
        self.missed: list[ObjectRef] = []  # what the rendering asked for and nothing given holds

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        if ref in self._conflicts:
            self.touched.append(self._conflicts[ref])
        found = self.index.get(ref)
        if found is None:
            self.missed.append(ref)
        return found

    def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        for ref, why in self._conflicts.items():
            if ref.kind == PRESET and ref.namespace == namespace:
                self.touched.append(why)
        return self.index.presets(namespace)


def read_kubevirt(path: str, stdin: Any) -> dict[str, Any]:
    """``--kubevirt``: a KubeVirt CR (also in a List, as ``kubectl get kubevirt -o yaml`` prints it) or
    its configuration. Raises :class:`UsageError`."""
    source = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = stdin.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as err:
        raise UsageError(f"{source}: cannot read: {err.strerror or err}") from None
    try:
        documents = load_documents(data, source)
    except ManifestError as err:
        raise UsageError(str(err)) from None
    candidates: list[Any] = []
    for _, doc in documents:
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


def pick_kubevirt(found: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The KubeVirt CR among the inputs, if one. Raises :class:`UsageError` for several."""
    if len(found) > 1:
        where = ", ".join(sorted({source for source, _ in found}))
        raise UsageError(f"{len(found)} KubeVirt CRs found ({where}); choose one with --kubevirt FILE")
    return found[0][1] if found else None
