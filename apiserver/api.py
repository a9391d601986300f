"""The Python API: expand a VM given beside the objects it references.

:func:`expand` returns the VM and the warnings (field-validation findings under ``Warn``, preset
conflicts); :func:`expand_vm` returns the VM alone and issues each warning through Python's
:mod:`warnings` machinery as an :class:`ExpandWarning`.
"""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.render import ObjectIndex
from apiserver.render import expand as _expand
from apiserver.render.errors import ExpandError
from apiserver.render.fieldvalidation import DEFAULT, LEVELS
from apiserver.render.values import check_json

__all__ = ["ExpandWarning", "Expanded", "expand", "expand_vm"]


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


def _inputs(
    vm: Any, objects: Iterable[Any], kubevirt: Any
) -> tuple[list[Mapping[str, Any]], Mapping[str, Any] | None, dict[int, bytes]]:
    """The objects as a list, the configuration, and the inputs' fingerprints by identity (what the
    renderer memoises under, see apiserver.render.memo)."""
    fingerprints: dict[int, bytes] = {}
    printed = check_json(vm)
    if printed is not None:
        fingerprints[id(vm)] = printed
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
    if kubevirt is not None:
        if not isinstance(kubevirt, Mapping):
            raise ExpandError.bad_request("kubevirt: expected a KubeVirt CR or its configuration (a mapping)")
        printed = check_json(kubevirt, "kubevirt")
        if printed is not None:
            fingerprints[id(kubevirt)] = printed
    return listed, kubevirt, fingerprints


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
    if field_validation not in LEVELS:
        raise ValueError(f"field_validation must be one of {', '.join(LEVELS)}, not {field_validation!r}")
    listed, config, fingerprints = _inputs(vm, objects, kubevirt)
    result = _expand(
        vm,
        ObjectIndex(listed),
        kubevirt=config,
        presets=presets,
        validate=validate,
        field_validation=field_validation,
        fingerprints=fingerprints,
    )
    return Expanded(result.vm, tuple(result.warnings))


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
    result = expand(
        vm, objects, kubevirt, presets=presets, validate=validate, field_validation=field_validation
    )
    for text in result.warnings:
        _warnings.warn(text, ExpandWarning, stacklevel=2)
    return result.vm
