"""Instance type and preference specs out of ControllerRevisions and live objects.

Revisions are decoded as KubeVirt v0.58 to v1.6.x decoded them (``pkg/instancetype/compatibility``), so
revisions written by old clusters keep working: first the v1alpha1 base64 ``SpecRevision`` wrappers
(strict JSON; preference before instance type), then apimachinery's universal deserializer (lenient;
``kind`` and a registered ``apiVersion`` required), converting v1alpha1/v1alpha2 objects to v1beta1.
KubeVirt v1.7+ refuses everything but whole v1beta1 objects; that refusal is the one deliberate
difference. Error texts are KubeVirt's, because tools match on them.

Live objects are v1beta1 as a current cluster serves them; older ``apiVersion``\\ s and the pre-rename
``flavor.kubevirt.io/v1alpha1`` kinds (``VirtualMachineFlavor``/``VirtualMachineClusterFlavor``) are
converted the same way, as an extension.

The models (:mod:`.models.v1beta1`, the older shapes' :mod:`.models.v1alpha`) and pydantic are imported
by the functions that need them, when first called: the renderer reads specs as dicts, and a current
object's (:func:`instancetype_spec_dict_from_object`) is written without them (:mod:`.models.plain`),
so a run that reads only current objects (the command line on a folder of VMs) never builds them.
"""

from __future__ import annotations

import base64
import binascii
import sys
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from apiserver.render.golang import gojson
from apiserver.render.golang.gotext import fold_name
from apiserver.render.instancetype.models import scheme
from apiserver.render.instancetype.models._json import Parsed, go_json_kind, parse
from apiserver.render.instancetype.models.plain import spec_dict

if TYPE_CHECKING:
    from apiserver.render.instancetype.models import v1alpha
    from apiserver.render.instancetype.models._base import GoModel
    from apiserver.render.instancetype.models.v1beta1 import InstancetypeSpec, PreferenceSpec

__all__ = [
    "DecodedRevision",
    "ObjectDecodeError",
    "RevisionError",
    "decode_revision",
    "holds_spec",
    "instancetype_spec_dict_from_object",
    "instancetype_spec_from_object",
    "instancetype_spec_from_revision",
    "is_v1beta1_object",
    "preference_spec_dict_from_object",
    "preference_spec_from_object",
    "preference_spec_from_revision",
]

GROUP = "instancetype.kubevirt.io"
FLAVOR_GROUP = "flavor.kubevirt.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1ALPHA2 = f"{GROUP}/v1alpha2"
V1ALPHA1 = f"{GROUP}/v1alpha1"
FLAVOR_V1ALPHA1 = f"{FLAVOR_GROUP}/v1alpha1"

INSTANCETYPE = "VirtualMachineInstancetype"
CLUSTER_INSTANCETYPE = "VirtualMachineClusterInstancetype"
PREFERENCE = "VirtualMachinePreference"
CLUSTER_PREFERENCE = "VirtualMachineClusterPreference"
FLAVOR = "VirtualMachineFlavor"
CLUSTER_FLAVOR = "VirtualMachineClusterFlavor"
INSTANCETYPE_KINDS = (INSTANCETYPE, CLUSTER_INSTANCETYPE)
PREFERENCE_KINDS = (PREFERENCE, CLUSTER_PREFERENCE)

# What the SpecRevision wrappers become (compatibility.decode*SpecRevision names them so).
M = TypeVar("M", bound="GoModel")

OLD_INSTANCETYPE_NAME = "old-version-of-instancetype-object"
OLD_PREFERENCE_NAME = "old-version-of-preference-object"


class RevisionError(Exception):
    """A revision (or object) that yields no usable spec; ``message`` is KubeVirt's error text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ObjectDecodeError(RevisionError):
    """A live instance type or preference object that cannot be decoded."""


@dataclass(frozen=True, slots=True)
class DecodedRevision:
    """What ``compatibility.Decode`` left in ``revision.Data.Object``.

    ``go_type`` is its ``%T`` (``<nil>`` when the data was empty). ``kind`` and ``spec`` are set for
    the four v1beta1 instancetype/preference kinds, which is all the finders accept.
    """

    go_type: str
    kind: str = ""
    name: str = ""
    spec: InstancetypeSpec | PreferenceSpec | None = None


# --- public API ----------------------------------------------------------------------------------


def check_revision_object(rev: Mapping[str, Any]) -> None:
    """client-go decodes the whole ControllerRevision before KubeVirt reads its data, so a type error
    anywhere in it (``metadata.creationTimestamp: 5``) means there is no revision to read."""
    try:
        gojson.decode(rev, "ControllerRevision", exact_names=True)
    except gojson.DecodeError as err:
        raise ObjectDecodeError(f"cannot decode ControllerRevision {_name(rev)!r}: {err}") from None


def instancetype_spec_from_revision(rev: Mapping[str, Any]) -> InstancetypeSpec:
    """``compatibility.GetInstancetypeSpec``: the spec, or :class:`RevisionError` with KubeVirt's text."""
    check_revision_object(rev)
    decoded = decode_revision(rev)
    from apiserver.render.instancetype.models.v1beta1 import InstancetypeSpec

    if decoded.kind in INSTANCETYPE_KINDS and isinstance(decoded.spec, InstancetypeSpec):
        return decoded.spec
    raise RevisionError(f"unexpected type in ControllerRevision: {decoded.go_type}")


def preference_spec_from_revision(rev: Mapping[str, Any]) -> PreferenceSpec:
    """``compatibility.GetPreferenceSpec``: the spec, or :class:`RevisionError` with KubeVirt's text."""
    check_revision_object(rev)
    decoded = decode_revision(rev)
    from apiserver.render.instancetype.models.v1beta1 import PreferenceSpec

    if decoded.kind in PREFERENCE_KINDS and isinstance(decoded.spec, PreferenceSpec):
        return decoded.spec
    raise RevisionError(f"unexpected type in ControllerRevision: {decoded.go_type}")


def decode_revision(rev: Mapping[str, Any]) -> DecodedRevision:
    """``compatibility.Decode`` of a ControllerRevision (v1.6.6); raises :class:`RevisionError`.

    ``data`` is normally the parsed JSON value. ``bytes`` are taken as the raw JSON the API server
    stored, which lets duplicate member names count as Go counts them.
    """
    data = rev.get("data")
    if isinstance(data, bytes | bytearray):
        raw = bytes(data)
        if not raw.strip() or raw.strip() == b"null":
            return DecodedRevision("<nil>")
        try:
            parsed = parse(raw)
        except ValueError as err:
            raise RevisionError(
                f"{_DECODE_FAILED}couldn't get version/kind; json parse error: {err}"
            ) from None
    else:
        if data is None:
            return DecodedRevision("<nil>")
        parsed = Parsed(data, duplicates=False)
    decoded = _decode_spec_revision(parsed)
    if decoded is not None:
        return decoded
    return _decode_object(parsed.value)


def holds_spec(rev: Mapping[str, Any]) -> bool:
    """Whether a ControllerRevision holds an instance type or preference (one of the four kinds, or a
    legacy SpecRevision wrapper) that decodes: what KubeVirt writes for a VM. Anything else (a
    StatefulSet's or DaemonSet's revision, damaged data) holds no such thing. Remembered per object:
    revisions never change, and the sources hand out the same instance while they hold it."""
    key = id(rev)
    known = _HOLDS.get(key)
    if known is not None and known[0] is rev:
        return known[1]
    try:
        holds = decode_revision(rev).spec is not None
    except RevisionError:
        holds = False
    _HOLDS[key] = (rev, holds)
    if len(_HOLDS) > _HOLDS_SIZE:
        _HOLDS.popitem(last=False)
    return holds


_HOLDS: OrderedDict[int, tuple[Mapping[str, Any], bool]] = OrderedDict()
_HOLDS_SIZE = 4096


def is_v1beta1_object(rev: Mapping[str, Any]) -> bool:
    """Whether a revision holds a whole ``instancetype.kubevirt.io/v1beta1`` object: all that KubeVirt v1.7+
    decodes (its universal deserializer, without the v1.6 wrappers and conversions)."""
    data = rev.get("data")
    if isinstance(data, bytes | bytearray):
        try:
            data = parse(bytes(data)).value
        except ValueError:
            return False
    if not isinstance(data, Mapping) or _decode_spec_revision(Parsed(data, duplicates=False)) is not None:
        return False
    try:
        api_version, _ = _interpret(data)
    except RevisionError:
        return False
    return api_version == V1BETA1


def instancetype_spec_from_object(obj: Mapping[str, Any], *, exact_names: bool = True) -> InstancetypeSpec:
    """The spec of a live instance type (any supported apiVersion, flavor kinds included).

    ``exact_names`` matches member names case-sensitively, as client-go does for the objects KubeVirt
    reads from the API server (which prunes ``IoThreads`` before that anyway), wherever the object
    came from; ``False`` accepts a case-insensitive match, as ``encoding/json`` does.
    """
    kind, api_version = _type_meta(obj, (*INSTANCETYPE_KINDS, FLAVOR, CLUSTER_FLAVOR), "an instance type")
    root = CLUSTER_INSTANCETYPE if kind in (CLUSTER_INSTANCETYPE, CLUSTER_FLAVOR) else INSTANCETYPE
    if api_version in ("", V1BETA1):
        from apiserver.render.instancetype.models.v1beta1 import InstancetypeSpec

        return _v1beta1(obj, root, InstancetypeSpec, exact_names)
    from apiserver.render.instancetype.models import v1alpha  # imported when first needed (module docstring)

    if api_version in (V1ALPHA1, V1ALPHA2):
        return _old_object(obj, v1alpha.InstancetypeSpec).to_v1beta1()
    if api_version == FLAVOR_V1ALPHA1 and kind in (FLAVOR, CLUSTER_FLAVOR):
        if "spec" not in obj and "profiles" in obj:
            raise ObjectDecodeError(
                f"{kind} {_name(obj)!r} has the flavor.kubevirt.io/v1alpha1 'profiles' shape of KubeVirt "
                "v0.48 to v0.52, which has no instance type spec; recreate it as an instancetype.kubevirt.io "
                "VirtualMachineInstancetype"
            )
        return _old_object(obj, v1alpha.FlavorSpec).to_v1beta1()
    raise _unsupported_version(obj, kind, api_version)


def instancetype_spec_dict_from_object(obj: Mapping[str, Any], *, exact_names: bool = True) -> dict[str, Any]:
    """:func:`instancetype_spec_from_object`'s spec as the JSON-named dict the renderer reads (the model's
    ``model_dump(by_alias=True, exclude_none=True)``), a current object's made without the models."""
    kind, api_version = _type_meta(obj, (*INSTANCETYPE_KINDS, FLAVOR, CLUSTER_FLAVOR), "an instance type")
    if api_version in ("", V1BETA1):
        root = CLUSTER_INSTANCETYPE if kind in (CLUSTER_INSTANCETYPE, CLUSTER_FLAVOR) else INSTANCETYPE
        plain = _v1beta1_dict(obj, root, "InstancetypeSpec", exact_names)
        if plain is not None:
            return plain
    return _dump(instancetype_spec_from_object(obj, exact_names=exact_names))


def preference_spec_dict_from_object(obj: Mapping[str, Any], *, exact_names: bool = True) -> dict[str, Any]:
    """:func:`preference_spec_from_object`'s spec as the dict the renderer reads (see the instance type's)."""
    kind, api_version = _type_meta(obj, PREFERENCE_KINDS, "a preference")
    if api_version in ("", V1BETA1):
        root = CLUSTER_PREFERENCE if kind == CLUSTER_PREFERENCE else PREFERENCE
        plain = _v1beta1_dict(obj, root, "PreferenceSpec", exact_names)
        if plain is not None:
            return plain
    return _dump(preference_spec_from_object(obj, exact_names=exact_names))


def preference_spec_from_object(obj: Mapping[str, Any], *, exact_names: bool = True) -> PreferenceSpec:
    """The spec of a live preference (any supported apiVersion, ``flavor.kubevirt.io`` included)."""
    kind, api_version = _type_meta(obj, PREFERENCE_KINDS, "a preference")
    root = CLUSTER_PREFERENCE if kind == CLUSTER_PREFERENCE else PREFERENCE
    if api_version in ("", V1BETA1):
        from apiserver.render.instancetype.models.v1beta1 import PreferenceSpec

        return _v1beta1(obj, root, PreferenceSpec, exact_names)
    from apiserver.render.instancetype.models import v1alpha  # imported when first needed (module docstring)

    if api_version == V1ALPHA2:
        return _old_object(obj, v1alpha.PreferenceSpecV1alpha2).to_v1beta1()
    if api_version == V1ALPHA1:
        return _old_object(obj, v1alpha.PreferenceSpec).to_v1beta1()
    if api_version == FLAVOR_V1ALPHA1:
        return _old_object(obj, v1alpha.FlavorPreferenceSpec).to_v1beta1()
    raise _unsupported_version(obj, kind, api_version)


# --- SpecRevision wrappers -----------------------------------------------------------------------


def _decode_spec_revision(parsed: Parsed) -> DecodedRevision | None:
    """``decodeSpecRevision``: a strict ``{apiVersion, spec: base64}`` wrapper, or None when it is not one."""
    if parsed.duplicates:
        return None  # UnmarshalStrict rejects repeated members anywhere in the wrapper.
    spec = _wrapper_spec_bytes(parsed.value)
    if spec is None:
        return None
    try:
        inner = parse(spec)
    except ValueError:
        return None
    if inner.duplicates:
        return None
    doc = {} if inner.value is None else inner.value  # "null" leaves the zero spec
    from apiserver.render.instancetype.models import v1alpha  # imported when first needed (module docstring)

    preference = _strict(v1alpha.PreferenceSpec, doc)
    if preference is not None:
        return DecodedRevision(
            f"*v1beta1.{PREFERENCE}", PREFERENCE, OLD_PREFERENCE_NAME, preference.to_v1beta1()
        )
    instancetype = _strict(v1alpha.InstancetypeSpec, doc)
    if instancetype is not None:
        return DecodedRevision(
            f"*v1beta1.{INSTANCETYPE}", INSTANCETYPE, OLD_INSTANCETYPE_NAME, instancetype.to_v1beta1()
        )
    return None


def _wrapper_spec_bytes(value: Any) -> bytes | None:
    """The wrapper's ``spec`` as Go's ``[]byte`` decode yields it; None when the wrapper does not decode."""
    if not isinstance(value, Mapping) or not set(value) <= {"apiVersion", "spec"}:
        return None
    api_version = value.get("apiVersion")
    if api_version is not None and not isinstance(api_version, str):
        return None
    spec = value.get("spec")
    if isinstance(spec, str):
        try:
            # encoding/json: base64.StdEncoding (padding required), after dropping CR and LF.
            return base64.b64decode(spec.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            return None
    if isinstance(spec, list) and all(
        isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in spec
    ):
        return bytes(spec)  # a JSON array of numbers decodes into []byte too
    return None  # null or absent: UnmarshalStrict of empty input fails


def _strict(model: type[M], doc: Any) -> M | None:
    from apiserver.render.instancetype.models._base import raw_context

    try:
        return model.model_validate(doc, context=raw_context(strict=True), by_alias=True, by_name=False)
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return None


# --- universal deserializer ----------------------------------------------------------------------


OBJECT_META = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"
_DECODE_FAILED = "failed to decode object in ControllerRevision: "
_FIND_KIND = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)


def _decode_object(value: Any) -> DecodedRevision:
    """``decodeControllerRevisionObject``: apimachinery's universal deserializer, then v1beta1 conversion.

    apimachinery's "Object 'Kind' is missing in '<data>'" quotes the revision's whole data; here the
    message ends before the data (the corpus pins only the prefix): an error is no way to read a
    revision, whatever it holds (a StatefulSet's pod template, with its environment)."""
    api_version, kind = _interpret(value)
    group, version = _parse_group_version(api_version)
    if not kind:
        raise RevisionError(f"{_DECODE_FAILED}Object 'Kind' is missing in the revision's data")
    if not version:
        raise RevisionError(f"{_DECODE_FAILED}Object 'apiVersion' is missing in the revision's data")
    try:
        go_type = scheme.go_type(group, version, kind)
    except scheme.NotRegistered as err:
        raise RevisionError(f"{_DECODE_FAILED}{err}") from None
    if group != GROUP or kind not in (*INSTANCETYPE_KINDS, *PREFERENCE_KINDS):
        _check_other(value, kind, go_type)
        return DecodedRevision(go_type)
    spec = _typed_spec(value, version, kind)
    name = _name(value)
    return DecodedRevision(f"*v1beta1.{kind}", kind, name, spec)


def _interpret(value: Any) -> tuple[str, str]:
    """``SimpleMetaFactory.Interpret``: apiVersion and kind, matched by ``encoding/json`` (any case)."""
    if not isinstance(value, Mapping):
        # Not a JSON object: only the YAML serializer tries it, and its kind lookup fails the same way.
        raise RevisionError(
            f"{_DECODE_FAILED}couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{go_json_kind(value)} into Go value of type {_FIND_KIND}"
        )
    found = {"apiversion": "", "kind": ""}
    for key, member in value.items():
        folded = fold_name(key)
        if folded not in found:
            continue
        if member is None:
            continue
        if not isinstance(member, str):
            field = "apiVersion" if folded == "apiversion" else "kind"
            raise RevisionError(
                f"{_DECODE_FAILED}couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{go_json_kind(member)} into Go struct field .{field} of type string"
            )
        found[folded] = member
    return found["apiversion"], found["kind"]


def _parse_group_version(api_version: str) -> tuple[str, str]:
    if api_version in ("", "/"):
        return "", ""
    slashes = api_version.count("/")
    if slashes == 0:
        return "", api_version
    if slashes == 1:
        group, version = api_version.split("/")
        return group, version
    raise RevisionError(f"{_DECODE_FAILED}unexpected GroupVersion string: {api_version}")


def _typed_spec(value: Mapping[str, Any], version: str, kind: str) -> InstancetypeSpec | PreferenceSpec:
    """Decode one of the four kinds leniently (case-sensitive names) and convert it to v1beta1."""
    from apiserver.render.instancetype.models._base import CLEAN
    from apiserver.render.instancetype.models.v1beta1 import InstancetypeSpec, PreferenceSpec

    instancetype = kind in INSTANCETYPE_KINDS
    try:
        if version == "v1beta1":
            clean = gojson.decode(value, kind, exact_names=True)
            spec_model = InstancetypeSpec if instancetype else PreferenceSpec
            return spec_model.model_validate(clean.get("spec") or {}, context=CLEAN)
        _check_meta(value)
        return _lenient(_old_spec_model(instancetype, version), value.get("spec")).to_v1beta1()
    except (gojson.DecodeError, ValueError, TypeError) as err:
        old = _old_spec_model(instancetype, version)
        raise RevisionError(f"{_DECODE_FAILED}{_describe(err, old, kind)}") from None


def _old_spec_model(
    instancetype: bool, version: str
) -> type[v1alpha.InstancetypeSpec | v1alpha.PreferenceSpec]:
    """The v1alpha1/v1alpha2 model of the kind (the one Go's errors name, whatever the version decoded)."""
    from apiserver.render.instancetype.models import v1alpha  # imported when first needed (module docstring)

    if instancetype:
        return v1alpha.InstancetypeSpec
    return v1alpha.PreferenceSpecV1alpha2 if version == "v1alpha2" else v1alpha.PreferenceSpec


def _check_other(value: Mapping[str, Any], kind: str, go_type: str) -> None:
    """Other registered kinds still go through Go's decode; type errors there fail the decode."""
    root = {"*v1.VirtualMachine": "VirtualMachine", "*v1.KubeVirt": "KubeVirt"}.get(go_type)
    if root is None:
        return
    try:
        gojson.decode(value, root, exact_names=True)
    except (gojson.DecodeError, ValueError, TypeError) as err:
        raise RevisionError(f"{_DECODE_FAILED}{err}") from None


def _check_meta(value: Mapping[str, Any]) -> None:
    meta = value.get("metadata")
    if meta is not None:
        gojson.decode(meta, OBJECT_META, exact_names=True)


def _lenient(model: type[M], doc: Any) -> M:
    from apiserver.render.instancetype.models._base import raw_context

    return model.model_validate(
        {} if doc is None else doc, context=raw_context(strict=False), by_alias=True, by_name=False
    )


def _describe(err: Exception, model: type[GoModel], kind: str) -> str:
    """A Go-like one-line description of a decode failure (a pydantic error only once pydantic is in)."""
    if "pydantic" in sys.modules:
        from pydantic import ValidationError

        from apiserver.render.instancetype.models._errors import describe

        if isinstance(err, ValidationError):
            return describe(err, model, kind)
    return str(err)


# --- live objects --------------------------------------------------------------------------------


def _type_meta(obj: Mapping[str, Any], kinds: tuple[str, ...], what: str) -> tuple[str, str]:
    if not isinstance(obj, Mapping):
        raise ObjectDecodeError(f"expected {what} object, got {go_json_kind(obj)}")
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if kind is not None and not isinstance(kind, str):
        raise ObjectDecodeError(f"{what} object has a kind that is not a string")
    if api_version is not None and not isinstance(api_version, str):
        raise ObjectDecodeError(f"{what} object has an apiVersion that is not a string")
    kind = kind or kinds[0]
    if kind not in kinds:
        raise ObjectDecodeError(f"{kind} {_name(obj)!r} is not {what} (expected kind {' or '.join(kinds)})")
    return kind, api_version or ""


def _v1beta1(obj: Mapping[str, Any], root: str, model: type[M], exact_names: bool) -> M:
    from apiserver.render.instancetype.models._base import CLEAN

    try:
        clean = gojson.decode(obj, root, exact_names=exact_names)
        return model.model_validate(clean.get("spec") or {}, context=CLEAN)
    except (gojson.DecodeError, ValueError, TypeError) as err:
        raise _object_error(obj, root, model, err) from None


def _v1beta1_dict(obj: Mapping[str, Any], root: str, model: str, exact_names: bool) -> dict[str, Any] | None:
    """:func:`_v1beta1` without the model: its dump, or None when only the model can tell."""
    try:
        clean = gojson.decode(obj, root, exact_names=exact_names)
    except (gojson.DecodeError, ValueError, TypeError) as err:
        raise ObjectDecodeError(f"cannot decode {root} {_name(obj)!r}: {err}") from None
    return spec_dict(model, clean.get("spec") or {})


def _dump(spec: GoModel) -> dict[str, Any]:
    dumped: dict[str, Any] = spec.model_dump(by_alias=True, exclude_none=True)
    return dumped


def _old_object(obj: Mapping[str, Any], model: type[M]) -> M:
    kind = str(obj.get("kind") or "")
    try:
        _check_meta(obj)
        return _lenient(model, obj.get("spec"))
    except (gojson.DecodeError, ValueError, TypeError) as err:
        raise _object_error(obj, kind, model, err) from None


def _object_error(
    obj: Mapping[str, Any], kind: str, model: type[GoModel], err: Exception
) -> ObjectDecodeError:
    return ObjectDecodeError(f"cannot decode {kind} {_name(obj)!r}: {_describe(err, model, kind)}")


def _unsupported_version(obj: Mapping[str, Any], kind: str, api_version: str) -> ObjectDecodeError:
    supported = f"{V1BETA1}, {V1ALPHA2}, {V1ALPHA1} or {FLAVOR_V1ALPHA1}"
    return ObjectDecodeError(
        f"{kind} {_name(obj)!r} has apiVersion {api_version!r}, which cannot be decoded "
        f"(supported: {supported})"
    )


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""
