"""Reading Kubernetes manifests: multi-document YAML or JSON, ``List`` objects, files, folders, stdin.

Shared by the offline command line and the folder source, so both accept exactly what ``kubectl
apply -f`` accepts and report a broken file the same way: file, document and line.

Values stay JSON-compatible, because everything downstream compares against Go's JSON: YAML
timestamps load as the strings they were written as (a Go ``string`` field would get the text too),
``!!binary`` stays base64 text (what a Go ``[]byte`` field holds in JSON), and non-string keys become
strings as ``sigs.k8s.io/yaml`` makes them. YAML 1.1 booleans (``on``, ``yes``) stay booleans, as in
kubectl. Duplicate keys are an error, as in kubectl.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import yaml

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_SOURCE = "<stdin>"

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_BINARY_TAG = "tag:yaml.org,2002:binary"
_MERGE_TAG = "tag:yaml.org,2002:merge"

try:  # libyaml's parser is several times faster; the constructors stay Python either way
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]


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


class _Loader(_BaseLoader):
    """A safe loader that yields JSON-compatible values and rejects duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        if not isinstance(node, yaml.MappingNode):  # pragma: no cover - the composer never does this
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping node, but found {node.id}", node.start_mark
            )
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = _json_key(self.construct_object(key_node, deep=True))
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f'mapping key "{key}" already defined',
                    key_node.start_mark,
                )
            seen.add(key)
        self.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = _json_key(self.construct_object(key_node, deep=True))
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_as_text(self, node: yaml.Node) -> str:
        return str(self.construct_scalar(node))  # type: ignore[arg-type]


# Timestamps are plain scalars to us: drop the implicit resolver, and read explicit tags as text.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
_Loader.add_constructor(_TIMESTAMP_TAG, _Loader.construct_as_text)
_Loader.add_constructor(_BINARY_TAG, _Loader.construct_as_text)


def _json_key(key: Any) -> str:
    """A mapping key as JSON spells it (``sigs.k8s.io/yaml`` turns ``1:`` and ``true:`` into strings)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int | float):
        return json.dumps(key)
    raise yaml.constructor.ConstructorError(None, None, f"a mapping key must be a scalar, not {key!r}", None)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _json_documents(text: str) -> list[Any]:
    """Parse a JSON value or a stream of them (what ``kubectl`` accepts); raise ValueError otherwise."""
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    docs: list[Any] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return docs
        doc, pos = decoder.raw_decode(text, pos)
        docs.append(doc)


def _yaml_documents(data: bytes | str, source: str) -> Iterator[tuple[int, Any]]:
    """Yield (1-based document number, value) for every document, empty ones included as None."""
    loader = _Loader(data)
    number = 0
    try:
        while True:
            # A document that fails to parse is the one after the last complete one.
            current = number + 1
            if not loader.check_data():  # type: ignore[no-untyped-call]
                return
            number = current
            yield number, loader.get_data()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
        if err.context and err.problem:
            context_line = f", line {err.context_mark.line + 1}" if err.context_mark else ""
            problem = f"{err.problem} ({err.context}{context_line})"
        raise ManifestError(
            problem, source=source, document=current, line=mark.line + 1 if mark else None
        ) from None
    except yaml.reader.ReaderError as err:
        # Bad encoding or control characters: the reader knows a character position, not a line.
        first = str(err).split("\n", 1)[0]
        raise ManifestError(f"{first} (character {err.position})", source=source, document=current) from None
    except yaml.YAMLError as err:  # pragma: no cover - every PyYAML error is one of the above
        raise ManifestError(f"not valid YAML: {err}", source=source, document=current) from None
    finally:
        loader.dispose()


def _documents(data: bytes | str, source: str) -> Iterator[tuple[int, Any]]:
    text: str | None
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = None  # UTF-16 with a BOM, or garbage: the YAML reader sorts it out and says where
    else:
        text = data
    if text is not None and _looks_like_json(text):
        try:
            yield from enumerate(_json_documents(text), start=1)
            return
        except ValueError as json_err:
            # Flow-style YAML (``{a: 1}``) starts like JSON; try YAML, but report the JSON error.
            try:
                docs = list(_yaml_documents(text, source))
            except ManifestError:
                lineno = getattr(json_err, "lineno", None)
                msg = getattr(json_err, "msg", str(json_err))
                raise ManifestError(f"not valid JSON: {msg}", source=source, line=lineno) from None
            yield from docs
            return
    yield from _yaml_documents(text if text is not None else data, source)


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


def _is_list(obj: dict[str, Any]) -> bool:
    return str(obj["kind"]).endswith("List") and "items" in obj


def load_documents(data: bytes | str, source: str) -> list[tuple[int, Any]]:
    """(1-based document number, value) for every non-empty YAML/JSON document, whatever its shape.

    For inputs that are not Kubernetes objects (a bare ``KubeVirtConfiguration``). Raises
    :class:`ManifestError`.
    """
    return [(number, doc) for number, doc in _documents(data, source) if doc is not None]


def parse_manifests(data: bytes | str, source: str) -> list[dict[str, Any]]:
    """Every Kubernetes object in ``data`` (YAML or JSON, several documents, ``*List`` kinds flattened).

    ``source`` names the input in error messages. Raises :class:`ManifestError`.
    """
    objects: list[dict[str, Any]] = []
    for number, doc in load_documents(data, source):
        obj = _check_object(doc, source, number)
        if not _is_list(obj):
            objects.append(obj)
            continue
        items = obj["items"]
        if items is None:
            continue
        if not isinstance(items, list):
            raise ManifestError(f"{obj['kind']}: items must be a list", source=source, document=number)
        for index, item in enumerate(items):
            objects.append(_check_object(item, source, number, f"items[{index}]: "))
    return objects


def _walk(directory: Path, visited: set[str]) -> Iterator[Path]:
    """Manifest files under ``directory``, depth first in name order like ``kubectl apply -R``.

    Hidden entries are skipped, which also skips the ``..data`` indirection of a mounted ConfigMap
    while its visible symlinks are followed.
    """
    real = os.path.realpath(directory)
    if real in visited:
        return
    visited.add(real)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as err:
        raise ManifestError(f"cannot read directory: {err.strerror or err}", source=str(directory)) from None
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir()
        except OSError:  # pragma: no cover - a vanished entry
            continue
        if is_dir:
            yield from _walk(path, visited)
        elif entry.name.endswith(MANIFEST_SUFFIXES):
            yield path


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise ManifestError(f"cannot read: {err.strerror or err}", source=str(path)) from None


def read_manifest_paths(
    paths: Sequence[str], *, stdin: BinaryIO | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(source, object) for every object in ``paths``: files, directories (recursively), ``-`` for stdin.

    A file named explicitly is read whatever its suffix; in a directory only ``*.yaml``, ``*.yml``
    and ``*.json`` count. Raises :class:`ManifestError`.
    """
    found: list[tuple[str, dict[str, Any]]] = []
    for name in paths:
        if name == STDIN:
            stream = stdin if stdin is not None else sys.stdin.buffer
            try:
                data = stream.read()
            except OSError as err:
                raise ManifestError(f"cannot read: {err.strerror or err}", source=STDIN_SOURCE) from None
            found.extend((STDIN_SOURCE, obj) for obj in parse_manifests(data, STDIN_SOURCE))
            continue
        path = Path(name)
        if path.is_dir():
            files = list(_walk(path, set()))
        elif path.exists():
            files = [path]
        else:
            raise ManifestError("no such file or directory", source=name)
        for file in files:
            source = str(file)
            found.extend((source, obj) for obj in parse_manifests(_read_file(file), source))
    return found
