"""Where in a file a field is: the line of ``spec.template.spec.domain.cpu.cores`` in document 2.

A refused VM's Status names its fields by path (``status.details.causes[].field``, as kube-apiserver and
KubeVirt write them: ``a.b[0].c``, ``metadata.labels[app.kubernetes.io/name]``); CI reports (SARIF regions,
annotations) want a line. :class:`Locator` maps a path back to the line of the key that holds it in the
input's text, YAML or JSON alike, for the object found at a document (and an item of a ``List``) as
:class:`~apiserver.documents.manifests.Manifest` numbers them.

Only asked about input that :mod:`apiserver.documents.reader` has read already (so within its limits),
and only when a result needs a line: the text is composed into PyYAML's node tree (lines kept, aliases
shared, not copied) on the first question and kept for the next. JSON is composed the same way (a JSON
value is YAML in flow style); a stream of JSON values is split where the values end. A field the text
does not hold (a missing required field, a member the instancetype brought) is placed at its nearest
ancestor the text does hold. Anything the composer cannot follow gives ``None``: a line is a help, never a
reason to fail.
"""

from __future__ import annotations

import json
import re

import yaml
from yaml import nodes

from apiserver.documents.reader import looks_like_json

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")
_MERGE = "tag:yaml.org,2002:merge"


def path_segments(field: str) -> list[str] | None:
    """``a.b[0].c[x.y]`` -> ``["a", "b", "0", "c", "x.y"]``; ``None`` when it is no such path."""
    segments: list[str] = []
    pos = 0
    for found in _SEGMENT.finditer(field):
        between = field[pos : found.start()]
        if between not in ("", "."):
            return None
        segments.append(found.group(1) if found.group(1) is not None else found.group(2))
        pos = found.end()
    if pos != len(field) or not segments:
        return None
    return segments


def _line(node: nodes.Node) -> int:
    return int(node.start_mark.line) + 1


def _member(node: nodes.Node, segment: str) -> tuple[nodes.Node, nodes.Node] | None:
    """The (key, value) nodes of ``segment`` in ``node``: a mapping's key (merged keys too), a
    sequence's index."""
    if isinstance(node, nodes.MappingNode):
        merged: list[nodes.Node] = []
        for key, value in node.value:
            if isinstance(key, nodes.ScalarNode):
                if key.tag == _MERGE or (key.value == "<<" and key.style is None):
                    merged.extend(value.value if isinstance(value, nodes.SequenceNode) else [value])
                elif key.value == segment:
                    return key, value
        for source in merged:
            found = _member(source, segment)
            if found is not None:
                return found
        return None
    if isinstance(node, nodes.SequenceNode) and segment.isdigit():
        index = int(segment)
        if index < len(node.value):
            item = node.value[index]
            return item, item
    return None


def _json_spans(text: str) -> list[tuple[int, str]]:
    """(first line offset, text) of each value of a JSON stream."""
    decoder = json.JSONDecoder()
    spans: list[tuple[int, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return spans
        _, stop = decoder.raw_decode(text, pos)
        spans.append((text.count("\n", 0, pos), text[pos:stop]))
        pos = stop


class Locator:
    """The lines of one input's text (see the module docstring)."""

    __slots__ = ("_documents", "_text")

    def __init__(self, data: bytes | str) -> None:
        self._text = data
        self._documents: list[tuple[int, nodes.Node | None]] | None = None

    def _compose(self) -> list[tuple[int, nodes.Node | None]]:
        if self._documents is None:
            try:
                self._documents = self._read()
            except (yaml.YAMLError, ValueError, RecursionError):
                self._documents = []
        return self._documents

    def _read(self) -> list[tuple[int, nodes.Node | None]]:
        data = self._text
        if looks_like_json(data):
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            # Tabs are JSON whitespace, not always YAML's; a space keeps every line where it is.
            return [
                (offset, yaml.compose(part.replace("\t", " "), Loader=_Loader))
                for offset, part in _json_spans(text)
            ]
        return [(0, node) for node in yaml.compose_all(data, Loader=_Loader)]

    def _object(self, document: int, item: int | None) -> tuple[int, nodes.Node] | None:
        documents = self._compose()
        if not 1 <= document <= len(documents):
            return None
        offset, node = documents[document - 1]
        if node is None:
            return None
        if item is not None:
            items = _member(node, "items")
            if items is None:
                return None
            found = _member(items[1], str(item))
            if found is None:
                return None
            node = found[1]
        return offset, node

    def start(self, document: int, item: int | None = None) -> int | None:
        """The first line of the object at ``document`` (``items[item]`` of a List)."""
        found = self._object(document, item)
        return None if found is None else found[0] + _line(found[1])

    def line(self, document: int, item: int | None, field: str) -> int | None:
        """The line of ``field`` (a path into the object; several may be given, ``a.b, c.d``: the
        first one found), else of its nearest ancestor in the text, else of the object itself."""
        found = self._object(document, item)
        if found is None:
            return None
        offset, root = found
        best: tuple[int, int] | None = None  # (depth reached, line)
        for one in field.split(", "):
            segments = path_segments(one.strip())
            if segments is None:
                continue
            node, line, depth = root, _line(root), 0
            for segment in segments:
                member = _member(node, segment)
                if member is None:
                    break
                key, node = member
                line, depth = _line(key), depth + 1
            if depth == len(segments):
                return offset + line
            if best is None or depth > best[0]:
                best = (depth, line)
        return offset + (best[1] if best is not None else _line(root))
