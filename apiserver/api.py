"""The Python API: expand a VM given beside the objects it references.

:func:`expand` returns the VM and the warnings (field-validation findings under ``Warn``, preset
conflicts); :func:`expand_vm` returns the VM alone and issues each warning through Python's
:mod:`warnings` machinery as an :class:`ExpandWarning`; :func:`expand_json` takes the VM as JSON (or
YAML) text, read as the server reads a PUT body, and answers the server's compact JSON.

All three check every object on every call (a dict may have been edited in place since), so a call costs in
proportion to all the objects passed, referenced or not: with a catalog of 150 instancetypes and
preferences, ~7x a call with the two a VM references (docs/performance.md). :class:`Expander` checks and copies its objects
once and then costs what the VM and the objects it references cost, however many it holds.
"""

from __future__ import annotations

import copy
import json
import warnings as _warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from apiserver.documents.reader import DocumentError, read_documents
from apiserver.render import ObjectIndex
from apiserver.render import expand as _expand
from apiserver.render.golang.values import check_json
from apiserver.render.instancetype.revision import (
    CLUSTER_FLAVOR,
    FLAVOR,
    INSTANCETYPE_KINDS,
    PREFERENCE_KINDS,
    RevisionError,
    instancetype_spec_dict_from_object,
    preference_spec_dict_from_object,
)
from apiserver.render.kubernetes.errors import (
    CAUSE_INVALID,
    CAUSE_REQUIRED,
    CAUSE_TOO_MANY,
    MAX_CAUSES,
    Cause,
    ExpandError,
    more_text,
    status,
)
from apiserver.render.kubernetes.fieldvalidation import DEFAULT, IGNORE, LEVELS
from apiserver.render.memo import version_of

__all__ = [
    "ExpandWarning",
    "Expanded",
    "Expander",
    "expand",
    "expand_json",
    "expand_vm",
    "launch_vm",
    "launch_vmi",
]


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


def _checked_objects(
    objects: Iterable[Any], fingerprints: dict[int, bytes], versions: list[Any] | None = None
) -> list[Mapping[str, Any]]:
    """The objects as a list, each checked; their fingerprints are added to ``fingerprints``, and
    what each was recognised by (identity and fingerprint or version) to ``versions`` when given."""
    listed = []
    for index, obj in enumerate(objects):
        if type(obj) is not dict and not isinstance(obj, Mapping):  # type() first: the ABC check is slow
            raise ExpandError.bad_request(
                f"objects[{index}]: expected an object (a mapping), got {_json_kind(obj)}"
            )
        printed = check_json(obj, f"objects[{index}]")
        if printed is not None:
            fingerprints[id(obj)] = printed
        if versions is not None:
            versions.append(id(obj))
            versions.append(printed if printed is not None else version_of(obj) or object())
        listed.append(obj)
    return listed


class _LastIndex:
    """The index of the last call's objects, reused while a call passes the same objects with the
    same text (or version) in the same order: building it costs ~2 us a call. The entry holds the
    objects, so their ids cannot be recycled while it is kept; it is replaced whole (one assignment),
    so threads calling at once see one entry or the other, never a mix."""

    __slots__ = ("_entry",)

    def __init__(self) -> None:
        self._entry: tuple[tuple[Any, ...], list[Mapping[str, Any]], ObjectIndex] = ((), [], ObjectIndex())

    def of(self, listed: list[Mapping[str, Any]], versions: list[Any]) -> ObjectIndex:
        key = tuple(versions)
        entry = self._entry
        if entry[0] == key:
            return entry[2]
        index = ObjectIndex(listed)
        self._entry = (key, listed, index)
        return index


_LAST_INDEX = _LastIndex()


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
) -> tuple[ObjectIndex, Mapping[str, Any] | None, dict[int, bytes]]:
    """The objects' index, the configuration, and the inputs' fingerprints by identity (what the
    renderer memoises under, see apiserver.render.memo)."""
    fingerprints: dict[int, bytes] = {}
    printed = check_json(vm, per_call=True)
    if printed is not None:
        fingerprints[id(vm)] = printed
    versions: list[Any] = []
    listed = _checked_objects(objects, fingerprints, versions)
    config = _checked_kubevirt(kubevirt, fingerprints)
    return _LAST_INDEX.of(listed, versions), config, fingerprints


_CATALOG_DECODERS: dict[str, Any] = {
    **dict.fromkeys((*INSTANCETYPE_KINDS, FLAVOR, CLUSTER_FLAVOR), instancetype_spec_dict_from_object),
    **dict.fromkeys(PREFERENCE_KINDS, preference_spec_dict_from_object),
}


def _check_catalog(objects: list[Mapping[str, Any]]) -> None:
    """:class:`Expander`'s check of its instancetypes and preferences (flavors too): an object of such a
    kind without a name (nothing can refer to it) or whose spec KubeVirt cannot decode (``cpu.guest:
    "two"``) could never be used, and every VM that refers to it would fail later. Raises a 400
    :class:`ExpandError` naming each (``objects[i]``, kind and name), at most :data:`MAX_CAUSES`."""
    causes: list[Cause] = []
    count = 0
    for index, obj in enumerate(objects):
        kind = obj.get("kind")
        decode = _CATALOG_DECODERS.get(kind) if isinstance(kind, str) else None
        if decode is None:
            continue
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            message = f"a {kind} needs metadata.name: nothing can refer to it without one"
            found = Cause(f"objects[{index}].metadata.name", message, CAUSE_REQUIRED)
        else:
            try:
                decode(obj, exact_names=False)
                continue
            except RevisionError as err:
                found = Cause(f"objects[{index}]", f"{kind} {name!r}: {err}", CAUSE_INVALID)
        count += 1
        if len(causes) < MAX_CAUSES:
            causes.append(found)
    if not causes:
        return
    listed = [cause.to_dict() for cause in causes]
    if count > len(causes):
        listed.append({"reason": CAUSE_TOO_MANY, "message": more_text(count - len(causes))})
    what = "object" if count == 1 else "objects"
    message = f"{count} {what} could never be an instancetype or preference: " + "; ".join(
        f"{c.field}: {c.message}" for c in causes
    )
    raise ExpandError(status(400, "BadRequest", message, details={"causes": listed}))


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
    index, config, fingerprints = _inputs(vm, objects, kubevirt)
    return _expanded(vm, index, config, fingerprints, presets, validate, field_validation)


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


def _read_vm(document: Any, field_validation: str) -> tuple[Any, tuple[str, ...]]:
    """The one document of JSON or YAML text, read as the server reads a PUT body (JSON values by
    construction), and the paths of the fields it gives twice (not looked for at ``Ignore``, which
    does not judge them); a 400 :class:`ExpandError` otherwise."""
    if not isinstance(document, bytes | str):
        got = type(document).__name__
        raise ExpandError.bad_request(f"expected the VM as JSON or YAML text (bytes or str), got a {got}")
    try:
        docs = read_documents(document, duplicates=field_validation != IGNORE)
    except DocumentError as err:
        what = f"is not valid {err.syntax}" if err.syntax else "cannot be read"
        raise ExpandError.bad_request(f"the VM's text {what}: {err}") from None
    present = docs if len(docs) == 1 else [d for d in docs if d.value is not None]
    if len(present) != 1:
        what = f"holds {len(present)} documents" if present else "holds no document"
        raise ExpandError.bad_request(f"the VM's text {what}: pass one VirtualMachine")
    return present[0].value, tuple(d.path for d in present[0].duplicates)


def _json_text(vm: Any) -> bytes:
    """Compact JSON, as the server writes its answer."""
    try:
        return orjson.dumps(vm)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, kept exactly from the text
        return json.dumps(vm, separators=(",", ":"), ensure_ascii=False).encode()


def _expanded_json(
    read: tuple[Any, tuple[str, ...]],
    index: ObjectIndex,
    kubevirt: Mapping[str, Any] | None,
    fingerprints: Mapping[int, bytes],
    presets: bool,
    validate: bool,
    field_validation: str,
) -> bytes:
    vm, duplicates = read
    result = _expand(
        vm,
        index,
        kubevirt=kubevirt,
        presets=presets,
        validate=validate,
        field_validation=field_validation,
        duplicates=duplicates,
        fingerprints=fingerprints,
    )
    for text in result.warnings:
        _warnings.warn(text, ExpandWarning, stacklevel=3)
    return _json_text(result.vm)


def expand_json(
    document: bytes | str,
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    presets: bool = False,
    validate: bool = False,
    field_validation: str = DEFAULT,
) -> bytes:
    """:func:`expand_vm` of a VM given as JSON (or YAML) text, answered as compact JSON text.

    ``document`` is read as the server reads a PUT body (one document; a field given twice is judged by
    ``field_validation``: ``Strict`` refuses it, ``Warn`` warns); its values are JSON by construction, so
    it costs no check. Unreadable text, or other than one document, is a 400 :class:`ExpandError`.
    ``objects`` and ``kubevirt`` are checked as :func:`expand` checks them; warnings are issued as
    :class:`ExpandWarning`. The answer is the server's body: compact UTF-8 JSON.
    """
    _check_level(field_validation)
    read = _read_vm(document, field_validation)
    fingerprints: dict[int, bytes] = {}
    versions: list[Any] = []
    listed = _checked_objects(objects, fingerprints, versions)
    config = _checked_kubevirt(kubevirt, fingerprints)
    index = _LAST_INDEX.of(listed, versions)
    return _expanded_json(read, index, config, fingerprints, presets, validate, field_validation)


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
    raises, raised here; so is an instancetype or preference that could never be used (no name, or a
    spec KubeVirt cannot decode, as ``cpu.guest: "two"``), each named by its place in ``objects``.
    """

    __slots__ = ("_fingerprints", "_index", "_kubevirt")

    def __init__(
        self, objects: Iterable[Mapping[str, Any]] = (), kubevirt: Mapping[str, Any] | None = None
    ) -> None:
        found: dict[int, bytes] = {}
        checked = _checked_objects(objects, found)
        _check_catalog(checked)
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
        printed = check_json(vm, per_call=True)
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

    def expand_json(
        self,
        document: bytes | str,
        *,
        presets: bool = False,
        validate: bool = False,
        field_validation: str = DEFAULT,
    ) -> bytes:
        """:func:`expand_json` of ``document`` against this Expander's objects and configuration."""
        _check_level(field_validation)
        return _expanded_json(
            _read_vm(document, field_validation),
            self._index,
            self._kubevirt,
            self._fingerprints,
            presets,
            validate,
            field_validation,
        )


def preview_change(
    proposed: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    current: Mapping[str, Any] | None = None,
    vmi: Mapping[str, Any] | None = None,
    start_vm: Mapping[str, Any] | None = None,
    start_revision: Mapping[str, Any] | None = None,
    instancetype: Mapping[str, Any] | None = None,
    preference: Mapping[str, Any] | None = None,
    upgrade: bool = False,
    validate: bool = True,
) -> dict[str, Any]:
    """What ``proposed`` (a VM, or with ``instancetype``/``preference``/``upgrade`` the VM to change so)
    does to the VM that runs as ``start_vm`` (or ``start_revision``, a ControllerRevision) with ``vmi``:
    the ``status`` of a ``VirtualMachineChangePreview`` (``verdict``: live, restart, refused, error or
    stopped; KubeVirt's ``message``; the rendered ``patch`` and ``changes``; ``liveUpdates``). ``current``
    is the VM as stored (its status carries over). Raises :class:`ExpandError` for unusable input."""
    from apiserver.render.vmcontroller.preview import preview, propose

    for name, value in (
        ("current", current),
        ("vmi", vmi),
        ("start_vm", start_vm),
        ("start_revision", start_revision),
    ):
        if value is not None:
            if not isinstance(value, Mapping):
                raise ExpandError.bad_request(
                    f"{name}: expected an object (a mapping), got {_json_kind(value)}"
                )
            check_json(value, name)
    index, config, _ = _inputs(proposed, objects, kubevirt)
    if not isinstance(proposed, Mapping):
        raise ExpandError.bad_request(f"the VirtualMachine must be an object, got {_json_kind(proposed)}")
    vm: Mapping[str, Any] = proposed
    if instancetype is not None or preference is not None or upgrade:
        vm = propose(proposed, instancetype=instancetype, preference=preference, upgrade=upgrade)
    result = preview(
        vm,
        index,
        current=current,
        vmi=vmi,
        start_vm=start_vm,
        start_revision=start_revision,
        kubevirt=config,
        validate=validate,
    )
    return result.as_status()


def _launch_doc(launched: Any) -> dict[str, Any]:
    meta = launched.vmi.get("metadata") or {}
    return {
        "apiVersion": "expand.kubevirt-expand.io/v1",
        "kind": "VirtualMachineLaunch",
        "metadata": {"name": meta.get("name", ""), "namespace": meta.get("namespace", "")},
        "vmi": launched.vmi,
        "pod": launched.pod.to_json(),
        "assumed": list(launched.assumed),
    }


def launch_vm(
    vm: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    arch: str | None = None,
    presets: bool = False,
    field_validation: str = DEFAULT,
    assume_pvcs: bool = False,
) -> dict[str, Any]:
    """What ``vm`` will cost: the ``VirtualMachineLaunch`` GET launch-spec answers (``vmi``: the
    VirtualMachineInstance KubeVirt creates; ``pod``: its virt-launcher pod's containers, init containers
    and total requests and limits, the memory overhead and its parts; ``assumed``).

    ``vm`` is expanded as :func:`expand_vm` expands it (its warnings issued as :class:`ExpandWarning`).
    Among ``objects``, what virt-controller reads of the cluster: a ``Namespace`` and the
    ``ResourceQuota`` objects of the VM's namespace (``AutoResourceLimits``, the memory-limits ratio
    label), the ``NetworkAttachmentDefinition`` objects (read only where the KubeVirt configuration
    disables ``ExternalNetResourceInjection``) and the ``PersistentVolumeClaim`` objects: every claim a
    volume names must be there, as KubeVirt creates no pod otherwise; ``assume_pvcs`` takes the missing
    ones as existing filesystem claims instead (listed in ``assumed``). ``arch``: the architecture
    virt-controller runs on (default: the configuration's default architecture). Raises
    :class:`ExpandError` where the VM does not render or KubeVirt would create no pod.
    """
    from apiserver.render.launcher import cluster_inputs, launch
    from apiserver.render.virtconfig import cluster_config

    listed = list(objects)
    _check_level(field_validation)
    index, config, fingerprints = _inputs(vm, listed, kubevirt)
    result = _expand(
        vm,
        index,
        kubevirt=config,
        presets=presets,
        validate=False,
        field_validation=field_validation,
        fingerprints=fingerprints,
    )
    expanded = _issued(Expanded(result.vm, tuple(result.warnings)))
    namespace = str((expanded.get("metadata") or {}).get("namespace") or "default")
    launched = launch(
        expanded,
        kubevirt,
        arch=arch or cluster_config(kubevirt).default_architecture or "amd64",
        assume_pvcs=assume_pvcs,
        **cluster_inputs(listed, namespace),
        written=vm,
        preference=result.preference,
    )
    return _launch_doc(launched)


def launch_vmi(
    vmi: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]] = (),
    kubevirt: Mapping[str, Any] | None = None,
    *,
    arch: str | None = None,
    presets: bool = False,
    assume_pvcs: bool = False,
) -> dict[str, Any]:
    """What a VirtualMachineInstance created as ``vmi`` will cost: :func:`launch_vm`'s answer for a VMI
    given whole (no VM controller, no instancetype). It goes through virt-api's VMI mutating webhook as a
    user's VMI does: its defaults, and with ``presets`` the namespace's VirtualMachineInstancePresets
    among ``objects`` (their warnings issued as :class:`ExpandWarning`). The other arguments are
    :func:`launch_vm`'s. Raises :class:`ExpandError` for a body that is not a VirtualMachineInstance and
    where KubeVirt would create no pod.
    """
    from apiserver.render.launcher import cluster_inputs
    from apiserver.render.launcher import launch_vmi as _launch_vmi
    from apiserver.render.virtconfig import cluster_config

    if not isinstance(vmi, Mapping):
        raise ExpandError.bad_request(f"the VirtualMachineInstance must be an object, got {_json_kind(vmi)}")
    listed = list(objects)
    index, config, _ = _inputs(vmi, listed, kubevirt)
    kind = vmi.get("kind")
    if kind is not None and kind != "VirtualMachineInstance":
        raise ExpandError.bad_request(
            f"expected a VirtualMachineInstance, got kind {kind!r}"
            + (": call launch_vm" if kind == "VirtualMachine" else "")
        )
    meta = vmi.get("metadata")
    namespace = str((meta.get("namespace") if isinstance(meta, Mapping) else None) or "default")
    launched = _launch_vmi(
        vmi,
        config,
        arch=arch or cluster_config(config).default_architecture or "amd64",
        assume_pvcs=assume_pvcs,
        presets=index.presets(namespace) if presets else None,
        **cluster_inputs(listed, namespace),
    )
    for text in launched.warnings:
        _warnings.warn(text, ExpandWarning, stacklevel=2)
    return _launch_doc(launched)
