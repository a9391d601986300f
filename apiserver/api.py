"""The Python API: expand a VM given beside the objects it references."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apiserver.render import ObjectIndex, expand


def expand_vm(
    vm: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    presets: bool = False,
    validate: bool = False,
) -> dict[str, Any]:
    """Return ``vm`` expanded against ``objects``; raise :class:`ExpandError` with the Status otherwise.

    ``objects`` may hold instancetypes, preferences (all four kinds, any API version, legacy flavor
    kinds too), ControllerRevisions and VirtualMachineInstancePresets; ``kubevirt`` is a KubeVirt CR or
    its ``spec.configuration``.
    """
    return expand(vm, ObjectIndex(objects), kubevirt=kubevirt, presets=presets, validate=validate).vm
