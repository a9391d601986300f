"""Reading Kubernetes manifests: multi-document YAML or JSON, ``List`` objects, files, folders, stdin.

Shared by the offline command line and the folder source, so both accept exactly what ``kubectl
apply -f`` accepts and report a broken file the same way: file, document and line. The bytes are read
by :mod:`apiserver.documents.reader` (the reader PUT bodies go through too), which says what values,
keys, nesting and aliases are accepted. Duplicate keys are reported per object
(:attr:`Manifest.duplicates`); :func:`parse_manifests` and :func:`read_manifest_paths` refuse them, as
kubectl's strict field validation does. :func:`read_files` reads every input even when some are broken
(the command line reports each broken file and goes on); the others stop at the first.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from apiserver.documents.reader import DocumentError, Duplicate, read_documents

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_SOURCE = "<stdin>"


class ManifestError(Exception):
    """A manifest could not be read or is not a Kubernetes object; ``str()`` says where and why."""

    def __init__(
        self, problem: str, *, source: str, document: int | None = None, line: int | None = None
    ) -> None:
        self.problem = problem
        self.source = source
        self.document = document
        self.line = line
        where = [f"document {document}"] if document is not None else []
        if line is not None:
            where.append(f"line {line}")
        prefix = f"{source}: " + (", ".join(where) + ": " if where else "")
        super().__init__(prefix + problem)


@dataclass(frozen=True, slots=True)
class Manifest:
    """One Kubernetes object of an input, where it came from (``item``: its index in the ``items`` of
    a ``List`` document), and the keys it gave twice (paths relative to the object)."""

    source: str
    document: int
    object: dict[str, Any]
    duplicates: tuple[Duplicate, ...] = ()
    item: int | None = None

    def where(self) -> str:
        """``FILE: document N`` or ``FILE: document N, items[I]``."""
        item = f", items[{self.item}]" if self.item is not None else ""
        return f"{self.source}: document {self.document}{item}"


# A Go template action (Helm, kustomize's helmCharts input, gomplate): ``{{ .Values.x }}``, ``{{- if ...``.
_TEMPLATE_ACTION = re.compile(r"\{\{-?\s*[-.$/\w(\"][^\n]*?\}\}")


def _documents(data: bytes | str, source: str) -> list[tuple[int, Any, tuple[Duplicate, ...]]]:
    try:
        docs = read_documents(data)
    except DocumentError as err:
        problem = f"{err.path}: {err.problem}" if err.path else err.problem
        if err.syntax == "JSON":
            problem = f"not valid JSON: {problem}"
        template = _unrendered_template(data)
        if template:
            # What the parser says of `{{ .Values.x }}` (a flow mapping, JSON's brace) hides the cause.
            problem = (
                f"this looks like an unrendered template ({template}): render it first (helm template, "
                f"or the tool that fills it in) and check its output; {problem}"
            )
        raise ManifestError(problem, source=source, document=err.document, line=err.line) from None
    return [(doc.number, doc.value, doc.duplicates) for doc in docs]


def _unrendered_template(data: bytes | str) -> str:
    """The first template action of a file that does not parse, shortened; "" when it holds none."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    found = _TEMPLATE_ACTION.search(text)
    if found is None:
        return ""
    action = found.group(0)
    return action if len(action) <= 40 else action[:37] + "..."


_TYPE_NAMES = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _check_object(obj: Any, source: str, document: int, what: str = "") -> dict[str, Any]:
    if not isinstance(obj, dict):
        kind = _TYPE_NAMES.get(type(obj), type(obj).__name__)
        raise ManifestError(
            f"{what}not a Kubernetes object (a mapping with a kind), but {kind}",
            source=source,
            document=document,
        )
    kind_value = obj.get("kind")
    if not isinstance(kind_value, str) or not kind_value:
        problem = "kind is missing" if kind_value in (None, "") else "kind must be a string"
        raise ManifestError(f"{what}{problem}", source=source, document=document)
    return obj


@dataclass(frozen=True, slots=True)
class Foreign:
    """A document that is not a Kubernetes object at all (a GitHub workflow, a Helm ``Chart.yaml``, a
    list or a bare string), passed over by a reader that asks for it (``foreign=True``)."""

    source: str
    document: int
    what: str


def foreign_document(doc: Any) -> str | None:
    """What ``doc`` is when it cannot be a Kubernetes object, else None.

    A mapping with a ``kind`` or a ``metadata`` is taken as a Kubernetes object (one without its kind is
    broken, not foreign: a VM that lost its ``kind`` must not pass unseen); any other mapping, and every
    list or scalar, is not one.
    """
    if isinstance(doc, dict):
        if "kind" in doc or "metadata" in doc:
            return None
        return "a mapping without kind or metadata"
    return _TYPE_NAMES.get(type(doc), type(doc).__name__)


def _is_list(obj: dict[str, Any]) -> bool:
    return str(obj["kind"]).endswith("List") and "items" in obj


def load_documents(data: bytes | str, source: str) -> list[tuple[int, Any]]:
    """(1-based document number, value) for every non-empty YAML/JSON document, whatever its shape.

    For inputs that are not Kubernetes objects (a bare ``KubeVirtConfiguration``). Duplicate keys are
    refused. Raises :class:`ManifestError`.
    """
    found = []
    for number, doc, duplicates in _documents(data, source):
        if duplicates:
            _refuse_duplicate(duplicates[0], source, number)
        if doc is not None:
            found.append((number, doc))
    return found


def _refuse_duplicate(duplicate: Duplicate, source: str, document: int) -> None:
    raise ManifestError(duplicate.message, source=source, document=document, line=duplicate.line)


def _item_duplicates(duplicates: Sequence[Duplicate], index: int) -> tuple[Duplicate, ...]:
    prefix = f"items[{index}]."
    return tuple(Duplicate(d.path[len(prefix) :], d.line) for d in duplicates if d.path.startswith(prefix))


def load_manifests(data: bytes | str, source: str, *, foreign: list[Foreign] | None = None) -> list[Manifest]:
    """Every Kubernetes object in ``data`` (YAML or JSON, several documents, ``*List`` kinds flattened),
    each with the keys it gave twice. ``source`` names the input in error messages. With ``foreign``,
    documents that are not Kubernetes objects at all (:func:`foreign_document`) are put there instead of
    refused. Raises :class:`ManifestError`."""
    objects: list[Manifest] = []
    for number, doc, duplicates in _documents(data, source):
        if doc is None:
            continue
        if foreign is not None:
            what = foreign_document(doc)
            if what is not None:
                foreign.append(Foreign(source, number, what))
                continue
        obj = _check_object(doc, source, number)
        if not _is_list(obj):
            objects.append(Manifest(source, number, obj, duplicates))
            continue
        items = obj["items"]
        if items is None:
            continue
        if not isinstance(items, list):
            raise ManifestError(f"{obj['kind']}: items must be a list", source=source, document=number)
        # Keys given twice in the List itself, not in an item, go with its first item.
        outside = tuple(d for d in duplicates if not d.path.startswith("items["))
        for index, item in enumerate(items):
            extra = outside if index == 0 else ()
            item_obj = _check_object(item, source, number, f"items[{index}]: ")
            item_duplicates = extra + _item_duplicates(duplicates, index)
            objects.append(Manifest(source, number, item_obj, item_duplicates, item=index))
    return objects


def parse_manifests(data: bytes | str, source: str) -> list[dict[str, Any]]:
    """Every Kubernetes object in ``data`` (YAML or JSON, several documents, ``*List`` kinds flattened).

    ``source`` names the input in error messages. A key given twice is an error. Raises
    :class:`ManifestError`.
    """
    objects = []
    for manifest in load_manifests(data, source):
        if manifest.duplicates:
            _refuse_duplicate(manifest.duplicates[0], source, manifest.document)
        objects.append(manifest.object)
    return objects


# Whether to pass over a file or folder found (its path as printed, whether it is a folder).
Exclude = Callable[[str, bool], bool]


def _walk(
    directory: Path, visited: set[str], exclude: Exclude | None = None
) -> Iterator[Path | ManifestError]:
    """Manifest files under ``directory``, depth first in name order like ``kubectl apply -R``, and
    the directories that could not be listed (as errors, in their place).

    Hidden entries are skipped, which also skips the ``..data`` indirection of a mounted ConfigMap
    while its visible symlinks are followed; so is what ``exclude`` names (a folder with all it holds).
    """
    real = os.path.realpath(directory)
    if real in visited:
        return
    visited.add(real)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as err:
        yield ManifestError(f"cannot read directory: {err.strerror or err}", source=str(directory))
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir()
        except OSError:  # pragma: no cover - a vanished entry
            continue
        if is_dir:
            if exclude is None or not exclude(str(path), True):
                yield from _walk(path, visited, exclude)
        elif entry.name.endswith(MANIFEST_SUFFIXES) and (exclude is None or not exclude(str(path), False)):
            yield path


@dataclass(frozen=True, slots=True)
class FileRead:
    """One input file and what it gave: its objects, or the one error that made it unusable.

    A file is all or nothing: when one document is broken none of its objects is used, as the folder
    source serves nothing from a broken file, so no VM is ever judged against half a file.
    """

    source: str
    manifests: tuple[Manifest, ...] = ()
    error: ManifestError | None = None
    foreign: tuple[Foreign, ...] = ()  # with read_files(foreign=True): documents passed over
    # The bytes read, kept for what needs the text again: the lines of a refused VM's fields
    # (:class:`apiserver.documents.locate.Locator`).
    data: bytes | None = None


def _read_one(source: str, read: Callable[[], bytes], foreign: bool = False) -> FileRead:
    try:
        data = read()
    except OSError as err:
        return FileRead(source, error=ManifestError(f"cannot read: {err.strerror or err}", source=source))
    passed: list[Foreign] | None = [] if foreign else None
    try:
        manifests = tuple(load_manifests(data, source, foreign=passed))
    except ManifestError as err:
        return FileRead(source, error=err, data=data)
    return FileRead(source, manifests, foreign=tuple(passed or ()), data=data)


def read_files(
    paths: Sequence[str],
    *,
    stdin: BinaryIO | None = None,
    exclude: Exclude | None = None,
    foreign: bool = False,
) -> list[FileRead]:
    """Every file of ``paths`` (files, directories recursively, ``-`` for stdin) with its objects or
    its error, in order; one broken or missing input does not stop the others.

    A file named explicitly is read whatever its suffix; in a directory only ``*.yaml``, ``*.yml``
    and ``*.json`` count. Keys given twice are reported with each object, not refused. ``exclude``
    passes over the files and folders it names (a file named explicitly too, stdin never); with
    ``foreign``, documents that are no Kubernetes object at all are passed over (``FileRead.foreign``)
    instead of making their file unusable.
    """
    found: list[FileRead] = []
    for name in paths:
        if name == STDIN:
            stream = stdin if stdin is not None else sys.stdin.buffer
            found.append(_read_one(STDIN_SOURCE, stream.read, foreign))
            continue
        path = Path(name)
        if path.is_dir():
            if exclude is not None and exclude(name, True):
                continue
            for item in _walk(path, set(), exclude):
                if isinstance(item, ManifestError):
                    found.append(FileRead(item.source, error=item))
                else:
                    found.append(_read_one(str(item), item.read_bytes, foreign))
        elif exclude is not None and exclude(name, False):
            continue
        elif path.exists():
            found.append(_read_one(name, path.read_bytes, foreign))
        else:
            found.append(FileRead(name, error=ManifestError("no such file or directory", source=name)))
    return found


def read_manifests(paths: Sequence[str], *, stdin: BinaryIO | None = None) -> list[Manifest]:
    """Every object in ``paths`` (see :func:`read_files`). Raises :class:`ManifestError` for the first
    input that cannot be read."""
    found: list[Manifest] = []
    for file in read_files(paths, stdin=stdin):
        if file.error is not None:
            raise file.error
        found.extend(file.manifests)
    return found


def read_manifest_paths(
    paths: Sequence[str], *, stdin: BinaryIO | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(source, object) for every object in ``paths`` (see :func:`read_manifests`); a key given twice
    is an error. Raises :class:`ManifestError`."""
    found = []
    for manifest in read_manifests(paths, stdin=stdin):
        if manifest.duplicates:
            _refuse_duplicate(manifest.duplicates[0], manifest.source, manifest.document)
        found.append((manifest.source, manifest.object))
    return found
