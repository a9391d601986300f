"""The Python API: expand a VM given beside the objects it references.

:func:`expand` returns the VM and the warnings (field-validation findings under ``Warn``, preset
conflicts); :func:`expand_vm` returns the VM alone and issues each warning through Python's
:mod:`warnings` machinery as an :class:`ExpandWarning`.

Both check every object on every call (a dict may have been edited in place since), so a call costs in
proportion to all the objects passed, referenced or not: with a catalog of 150 instancetypes and
preferences, ~7x a call with the two a VM references (docs/performance.md). :class:`Expander` checks and copies its objects
once and then costs what the VM and the objects it references cost, however many it holds.
"""

from __future__ import annotations

import copy
import warnings as _warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from apiserver.render import ObjectIndex
from apiserver.render import expand as _expand
from apiserver.render.golang.values import check_json
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.kubernetes.fieldvalidation import DEFAULT, LEVELS

__all__ = ["ExpandWarning", "Expanded", "Expander", "expand", "expand_vm", "launch_vm"]


class ExpandWarning(UserWarning):
    """A warning of :func:`expand_vm`: what the server sends as a ``Warning`` header."""


@dataclass(frozen=True, slots=True)
class Expanded:
    """An expanded VM and the warnings the server would send beside it (``Warning`` headers)."""

    vm: dict[str, Any]
    warnings: tuple[str, ...] = ()


def _json_kind(value: Any) -> str:
    """What a value is, in JSON's words (``null``, not Python's ``NoneType``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _checked_objects(objects: Iterable[Any], fingerprints: dict[int, bytes]) -> list[Mapping[str, Any]]:
    """The objects as a list, each checked; their fingerprints are added to ``fingerprints``."""
    listed = []
    for index, obj in enumerate(objects):
        if type(obj) is not dict and not isinstance(obj, Mapping):  # type() first: the ABC check is slow
            raise ExpandError.bad_request(
                f"objects[{index}]: expected an object (a mapping), got {_json_kind(obj)}"
            )
        printed = check_json(obj, f"objects[{index}]")
        if printed is not None:
            fingerprints[id(obj)] = printed
        listed.append(obj)
    return listed


def _checked_kubevirt(kubevirt: Any, fingerprints: dict[int, bytes]) -> Mapping[str, Any] | None:
    if kubevirt is None:
        return None
    if not isinstance(kubevirt, Mapping):
        raise ExpandError.bad_request("kubevirt: expected a KubeVirt CR or its configuration (a mapping)")
    printed = check_json(kubevirt, "kubevirt")
    if printed is not None:
        fingerprints[id(kubevirt)] = printed
    return kubevirt


def _inputs(
    vm: Any, objects: Iterable[Any], kubevirt: Any
) -> tuple[list[Mapping[str, Any]], Mapping[str, Any] | None, dict[int, bytes]]:
    """The objects as a list, the configuration, and the inputs' fingerprints by identity (what the
    renderer memoises under, see apiserver.render.memo)."""
    fingerprints: dict[int, bytes] = {}
    printed = check_json(vm)
    if printed is not None:
        fingerprints[id(vm)] = printed
    listed = _checked_objects(objects, fingerprints)
    return listed, _checked_kubevirt(kubevirt, fingerprints), fingerprints


def _check_level(field_validation: str) -> None:
    if field_validation not in LEVELS:
        raise ValueError(f"field_validation must be one of {', '.join(LEVELS)}, not {field_validation!r}")


def expand(
    vm: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    presets: bool = False,
    validate: bool = False,
    field_validation: str = DEFAULT,
) -> Expanded:
    """``vm`` expanded against ``objects``, with its warnings; :class:`ExpandError` with the Status
    the server would send otherwise.

    ``objects`` may hold instancetypes, preferences (all four kinds, any API version, legacy flavor
    kinds too), ControllerRevisions and VirtualMachineInstancePresets; ``kubevirt`` is a KubeVirt CR
    or its ``spec.configuration``. Every argument must hold JSON values only (dicts with string keys,
    lists, strings, numbers, booleans, None). ``field_validation`` is kube-apiserver's level:
    ``"Strict"`` (the default) refuses unknown, case-mismatched and missing required fields with a
    422, ``"Warn"`` expands and returns them as warnings, ``"Ignore"`` expands as KubeVirt does. A VM
    that is not an object, has another ``kind`` or no ``spec`` is refused at every level. An unknown
    level is a ValueError.
    """
    _check_level(field_validation)
    listed, config, fingerprints = _inputs(vm, objects, kubevirt)
    return _expanded(vm, ObjectIndex(listed), config, fingerprints, presets, validate, field_validation)


def _expanded(
    vm: Mapping[str, Any],
    index: ObjectIndex,
    kubevirt: Mapping[str, Any] | None,
    fingerprints: Mapping[int, bytes],
    presets: bool,
    validate: bool,
    field_validation: str,
) -> Expanded:
    result = _expand(
        vm,
        index,
        kubevirt=kubevirt,
        presets=presets,
        validate=validate,
        field_validation=field_validation,
        fingerprints=fingerprints,
    )
    return Expanded(result.vm, tuple(result.warnings))


def _issued(result: Expanded) -> dict[str, Any]:
    """The VM, each warning issued as an :class:`ExpandWarning` from the caller of ``expand_vm``."""
    for text in result.warnings:
        _warnings.warn(text, ExpandWarning, stacklevel=3)
    return result.vm


def expand_vm(
    vm: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    presets: bool = False,
    validate: bool = False,
    field_validation: str = DEFAULT,
) -> dict[str, Any]:
    """Return ``vm`` expanded against ``objects``; raise :class:`ExpandError` with the Status otherwise.

    The arguments are :func:`expand`'s. Each warning (a ``Warn`` finding, a preset conflict) is issued
    as an :class:`ExpandWarning` (``warnings.warn``); call :func:`expand` to get them as a list.
    """
    return _issued(
        expand(vm, objects, kubevirt, presets=presets, validate=validate, field_validation=field_validation)
    )


def _copy(value: Mapping[str, Any], printed: bytes | None) -> Any:
    """A private copy of a checked value: from its JSON text when it has one (one native call)."""
    return orjson.loads(printed) if printed is not None else copy.deepcopy(value)


class _PlusVM(Mapping[int, bytes]):
    """An :class:`Expander`'s fingerprints and one VM's, without copying the Expander's."""

    __slots__ = ("_base", "_vm_id", "_vm_print")

    def __init__(self, base: Mapping[int, bytes], vm_id: int, vm_print: bytes) -> None:
        self._base, self._vm_id, self._vm_print = base, vm_id, vm_print

    def get(self, key: int, default: Any = None) -> Any:
        return self._vm_print if key == self._vm_id else self._base.get(key, default)

    def __getitem__(self, key: int) -> bytes:
        return self._vm_print if key == self._vm_id else self._base[key]

    def __iter__(self) -> Iterator[int]:
        yield self._vm_id
        yield from (key for key in self._base if key != self._vm_id)

    def __len__(self) -> int:
        return len(self._base) + (self._vm_id not in self._base)


class Expander:
    """Expands VMs against a fixed set of objects, checked and copied once.

    For a caller that renders many VMs against the same objects (a UI backend holding the cluster's
    instancetypes and preferences): :func:`expand` checks every object on every call, this checks
    them here, so a call costs what the VM and the objects it references cost. The objects are
    copied: editing your dicts afterwards changes nothing here; make a new Expander for new objects.
    Errors in the objects or the configuration are the :class:`ExpandError` 400s :func:`expand`
    raises, raised here.
    """

    __slots__ = ("_fingerprints", "_index", "_kubevirt")

    def __init__(
        self, objects: Iterable[Mapping[str, Any]] = (), kubevirt: Mapping[str, Any] | None = None
    ) -> None:
        found: dict[int, bytes] = {}
        checked = _checked_objects(objects, found)
        config = _checked_kubevirt(kubevirt, found)
        self._fingerprints: dict[int, bytes] = {}
        copies = []
        for obj in checked:
            printed = found.get(id(obj))
            mine = _copy(obj, printed)
            if printed is not None:
                self._fingerprints[id(mine)] = printed
            copies.append(mine)
        self._kubevirt: Mapping[str, Any] | None = None
        if config is not None:
            printed = found.get(id(config))
            self._kubevirt = _copy(config, printed)
            if printed is not None:
                self._fingerprints[id(self._kubevirt)] = printed
        # The copies live as long as this Expander: their ids key the fingerprints safely.
        self._index = ObjectIndex(copies)

    def __len__(self) -> int:
        """How many objects it finds by kind, namespace and name (a later one of the same name wins)."""
        return len(self._index)

    def expand(
        self,
        vm: Mapping[str, Any],
        *,
        presets: bool = False,
        validate: bool = False,
        field_validation: str = DEFAULT,
    ) -> Expanded:
        """:func:`expand` of ``vm`` against this Expander's objects and configuration."""
        _check_level(field_validation)
        printed = check_json(vm)
        fingerprints: Mapping[int, bytes] = (
            self._fingerprints if printed is None else _PlusVM(self._fingerprints, id(vm), printed)
        )
        return _expanded(vm, self._index, self._kubevirt, fingerprints, presets, validate, field_validation)

    def expand_vm(
        self,
        vm: Mapping[str, Any],
        *,
        presets: bool = False,
        validate: bool = False,
        field_validation: str = DEFAULT,
    ) -> dict[str, Any]:
        """:func:`expand_vm` of ``vm`` against this Expander's objects and configuration."""
        return _issued(self.expand(vm, presets=presets, validate=validate, field_validation=field_validation))


def launch_vm(
    vm: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    arch: str | None = None,
    presets: bool = False,
    field_validation: str = DEFAULT,
) -> dict[str, Any]:
    """What ``vm`` will cost: the ``VirtualMachineLaunch`` GET launch-spec answers (``vmi``: the
    VirtualMachineInstance KubeVirt creates; ``pod``: its virt-launcher pod's containers, init containers
    and total requests and limits, the memory overhead and its parts; ``assumed``).

    ``vm`` is expanded as :func:`expand_vm` expands it (its warnings issued as :class:`ExpandWarning`);
    a ``Namespace`` and the ``ResourceQuota`` objects of the VM's namespace among ``objects`` are read as
    the cluster's (``AutoResourceLimits``, the memory-limits ratio label). ``arch``: the architecture
    virt-controller runs on (default: the configuration's default architecture). Raises
    :class:`ExpandError` where the VM does not render or KubeVirt would create no pod.
    """
    from apiserver.render.launcher import launch
    from apiserver.render.virtconfig import cluster_config

    listed = list(objects)
    expanded = expand_vm(vm, listed, kubevirt, presets=presets, field_validation=field_validation)
    namespace = str((expanded.get("metadata") or {}).get("namespace") or "default")
    ns_obj = next(
        (
            o
            for o in listed
            if o.get("kind") == "Namespace" and (o.get("metadata") or {}).get("name") == namespace
        ),
        None,
    )
    quotas = [
        o
        for o in listed
        if o.get("kind") == "ResourceQuota"
        and ((o.get("metadata") or {}).get("namespace") or namespace) == namespace
    ]
    launched = launch(
        expanded,
        kubevirt,
        arch=arch or cluster_config(kubevirt).default_architecture or "amd64",
        namespace=ns_obj,
        quotas=quotas,
    )
    meta = expanded.get("metadata") or {}
    return {
        "apiVersion": "expand.kubevirt-expand.io/v1",
        "kind": "VirtualMachineLaunch",
        "metadata": {"name": meta.get("name", ""), "namespace": namespace},
        "vmi": launched.vmi,
        "pod": launched.pod.to_json(),
        "assumed": list(launched.assumed),
    }
