"""``.kubevirt-expand.yaml``: what ``kubevirt-expand expand`` judges in a repository, in one file.

kubeconform and kube-linter users keep their gate's settings beside the manifests; a repository of many
clusters needs more than flags can say: each cluster folder judged against its own catalog and options,
so that the same ``shop/db`` in ``clusters/east`` and ``clusters/west`` is two VMs, not one defined twice::

    exclude: [templates]          # defaults for every cluster
    validate: true
    clusters:
      - name: east
        paths: [clusters/east, base]
        catalog: [catalogs/east.yaml]
      - name: west
        paths: [clusters/west, base]
        catalog: [common-instancetypes@v1.6.0]   # a bundled catalog, by name
        catalogComplete: true                     # a name the catalog lacks is Missing (a typo)
        fieldValidation: Warn

Without ``clusters``, top-level ``paths`` make one run. Paths are relative to the file's folder; a
``catalog`` entry that names a bundled catalog (and no file there) is that catalog. The file
is found in the current folder or, in a git repository, the nearest one above it up to the repository's
root (:func:`apiserver.cli.inputs.find_config`), or given with ``--config``. A file that is not what this
module expects is a usage error naming its line (:class:`~apiserver.cli.inputs.UsageError`): a gate must
not run on half its settings. Imported only when there is a file to read: a run without one starts
without it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

import yaml
from yaml import nodes

from apiserver.cli import bundled
from apiserver.cli.inputs import UsageError
from apiserver.render.kubernetes.fieldvalidation import LEVELS

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class Options:
    """What a cluster is judged with; ``None``: not said here (a default, or the flag's)."""

    paths: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    catalog: tuple[str, ...] | None = None
    kubevirt: str | None = None
    namespace: str | None = None
    skip_kinds: tuple[str, ...] | None = None
    validate: bool | None = None
    presets: bool | None = None
    field_validation: str | None = None
    catalog_complete: bool | None = None

    def under(self, defaults: Options) -> Options:
        """These options, each one not said taken from ``defaults``."""
        return replace(
            self,
            **{f.name: getattr(defaults, f.name) for f in fields(self) if getattr(self, f.name) is None},
        )


@dataclass(frozen=True, slots=True)
class Cluster:
    name: str
    options: Options


@dataclass(frozen=True, slots=True)
class Config:
    """The file read: its path, the options for every cluster, the clusters (none: one run of the
    top-level ``paths``)."""

    path: str
    defaults: Options
    clusters: list[Cluster] = field(default_factory=list)


# Keys as written in the file -> Options' members, and what each holds.
_LISTS = {"paths": "paths", "exclude": "exclude", "catalog": "catalog", "skipKinds": "skip_kinds"}
_STRINGS = {"kubevirt": "kubevirt", "namespace": "namespace", "fieldValidation": "field_validation"}
_BOOLS = {"validate": "validate", "presets": "presets", "catalogComplete": "catalog_complete"}
_OPTION_KEYS = [*_LISTS, *_STRINGS, *_BOOLS]
_RELATIVE = ("paths", "catalog", "kubevirt")  # paths of files, relative to the file's folder


class _Problem(UsageError):
    def __init__(self, source: str, node: nodes.Node | None, message: str) -> None:
        line = f": line {node.start_mark.line + 1}" if node is not None else ""
        super().__init__(f"{source}{line}: {message}")


def load(path: str) -> Config:
    """Read and check ``path``. Raises :class:`UsageError` naming the line of the first problem."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        root = yaml.compose(data, Loader=_Loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f": line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: {getattr(err, 'problem', None) or err}") from None
    if root is None:
        raise _Problem(path, None, "is empty; it should say which paths to judge (paths: or clusters:)")
    top = _mapping(path, root, "the file")
    folder = os.path.dirname(path)
    defaults = _options(path, top, folder, "the file", allowed=[*_OPTION_KEYS, "clusters"])
    clusters: list[Cluster] = []
    if "clusters" in top:
        value = top["clusters"][1]
        if defaults.paths is not None:
            raise _Problem(path, top["paths"][0], "paths: give them per cluster when clusters: is set")
        if not isinstance(value, nodes.SequenceNode) or not value.value:
            raise _Problem(path, value, "clusters: should be a list of clusters, each with a name and paths")
        seen: dict[str, nodes.Node] = {}
        for i, item in enumerate(value.value):
            what = f"clusters[{i}]"
            members = _mapping(path, item, what)
            name = _string(path, members, "name", what)
            if name is None:
                raise _Problem(path, item, f"{what}: name is missing")
            if name in seen:
                first = seen[name].start_mark.line + 1
                raise _Problem(
                    path,
                    members["name"][1],
                    f"{what}: cluster {name!r} is named twice (first on line {first})",
                )
            seen[name] = members["name"][1]
            options = _options(path, members, folder, f"cluster {name}", allowed=["name", *_OPTION_KEYS])
            if not options.paths:
                raise _Problem(
                    path, item, f"cluster {name}: paths is missing: say which files and folders it holds"
                )
            clusters.append(Cluster(name, options.under(defaults)))
    elif not defaults.paths:
        raise _Problem(
            path, root, "says no paths to judge: give paths: (one run) or clusters: (one per cluster)"
        )
    return Config(path, defaults, clusters)


def _mapping(source: str, node: nodes.Node, what: str) -> dict[str, tuple[nodes.Node, nodes.Node]]:
    if not isinstance(node, nodes.MappingNode):
        raise _Problem(source, node, f"{what} should be a mapping of keys to values")
    out: dict[str, tuple[nodes.Node, nodes.Node]] = {}
    for key, value in node.value:
        if not isinstance(key, nodes.ScalarNode) or key.tag != "tag:yaml.org,2002:str":
            raise _Problem(source, key, f"{what}: keys should be names")
        if key.value in out:
            raise _Problem(source, key, f"{what}: {key.value} is given twice")
        out[key.value] = (key, value)
    return out


def _options(
    source: str,
    members: Mapping[str, tuple[nodes.Node, nodes.Node]],
    folder: str,
    what: str,
    *,
    allowed: list[str],
) -> Options:
    for name, (key, _) in members.items():
        if name not in allowed:
            import difflib  # only for a wrong file: a run that reads a right one starts without it

            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(sorted(allowed))})"
            raise _Problem(source, key, f"{what}: unknown key {name!r}{hint}")
    said: dict[str, object] = {}
    for name, member in _LISTS.items():
        values = _strings(source, members, name, what)
        if values is not None:
            if name == "catalog":
                said[member] = tuple(_catalog_entry(folder, v) for v in values)
            elif name in _RELATIVE:
                said[member] = tuple(_relative(folder, v) for v in values)
            else:
                said[member] = tuple(values)
    for name, member in _STRINGS.items():
        value = _string(source, members, name, what)
        if value is not None:
            said[member] = _relative(folder, value) if name in _RELATIVE else value
    for name, member in _BOOLS.items():
        if name in members:
            node = members[name][1]
            if not isinstance(node, nodes.ScalarNode) or node.tag != "tag:yaml.org,2002:bool":
                raise _Problem(source, node, f"{what}: {name} should be true or false")
            said[member] = yaml.safe_load(node.value) is True
    level = said.get("field_validation")
    if level is not None:
        matched = [one for one in LEVELS if str(level).lower() == one.lower()]
        if not matched:
            node = members["fieldValidation"][1]
            raise _Problem(
                source, node, f"{what}: fieldValidation should be one of {', '.join(LEVELS)}, not {level!r}"
            )
        said["field_validation"] = matched[0]
    if said.get("namespace") == "":
        raise _Problem(source, members["namespace"][1], f"{what}: namespace must not be empty")
    return Options(**said)  # type: ignore[arg-type]


def _string(
    source: str, members: Mapping[str, tuple[nodes.Node, nodes.Node]], name: str, what: str
) -> str | None:
    if name not in members:
        return None
    node = members[name][1]
    if not isinstance(node, nodes.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
        raise _Problem(source, node, f"{what}: {name} should be a string")
    return str(node.value)


def _strings(
    source: str, members: Mapping[str, tuple[nodes.Node, nodes.Node]], name: str, what: str
) -> list[str] | None:
    """A list of strings (a single string reads as a list of one)."""
    if name not in members:
        return None
    node = members[name][1]
    items = (
        [node]
        if isinstance(node, nodes.ScalarNode)
        else node.value
        if isinstance(node, nodes.SequenceNode)
        else None
    )
    if items is None or not all(
        isinstance(i, nodes.ScalarNode) and i.tag == "tag:yaml.org,2002:str" for i in items
    ):
        raise _Problem(source, node, f"{what}: {name} should be a list of strings")
    return [str(i.value) for i in items]


def _catalog_entry(folder: str, value: str) -> str:
    """A ``catalog:`` entry: a path relative to the file's folder, or the name of a bundled catalog
    (``common-instancetypes@v1.7.0``) where no file of that name is there."""
    path = _relative(folder, value)
    if value.partition("@")[0] == bundled.NAME and not os.path.exists(path):
        return value
    return path


def _relative(folder: str, path: str) -> str:
    """A path of the file, as the run names it: relative to the file's folder."""
    if not folder or os.path.isabs(path) or path == "-":
        return path
    return os.path.join(folder, path)
