"""ControllerRevision and live-object decoding, against the corpus and against KubeVirt v1.6's rules."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from apiserver.render.instancetype.models import InstancetypeSpec, PreferenceSpec
from apiserver.render.instancetype.revision import (
    ObjectDecodeError,
    RevisionError,
    decode_revision,
    instancetype_spec_from_object,
    instancetype_spec_from_revision,
    preference_spec_from_object,
    preference_spec_from_revision,
)
from tests.support import shared
from tests.support.conformance import Case, iter_cases

CASES = list(iter_cases())
SCHEME = "kubevirt.io/client-go/kubevirt/scheme/register.go:43"
DECODE_FAILED = "failed to decode object in ControllerRevision: "


def _revisions(case: Case) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in case.input["objects"] if o.get("kind") == "ControllerRevision"}


def _legacy_entries() -> Iterator[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    for case in CASES:
        if not case.id.startswith("legacy-"):
            continue
        revisions = _revisions(case)
        for entry in case.data["legacy"]["revisions"]:
            yield f"{case.id}/{entry['name']}", case.expected, revisions[entry["name"]], entry


LEGACY = list(_legacy_entries())


@shared.needs_shared(shared.CASES_DIR)
def test_corpus_has_legacy_revisions() -> None:
    assert len(LEGACY) >= 40
    assert any("decodeError" in e for _, _, _, e in LEGACY)


def _spec_of_object(obj: Mapping[str, Any]) -> InstancetypeSpec | PreferenceSpec:
    if "Instancetype" in obj["kind"]:
        return instancetype_spec_from_object(obj, exact_names=True)
    return preference_spec_from_object(obj, exact_names=True)


@shared.parametrize(("rev", "entry"), [(r, e) for _, _, r, e in LEGACY], [i for i, *_ in LEGACY])
def test_legacy_revision_decodes_as_kubevirt_v1_6(rev: dict[str, Any], entry: dict[str, Any]) -> None:
    if "decodedObject" in entry:
        want = entry["decodedObject"]
        got = decode_revision(rev)
        assert (got.kind, got.name) == (want["kind"], want["metadata"]["name"])
        assert got.spec == _spec_of_object(want)
        assert got.spec is not None
        # Encoded as Go encodes it, the spec is exactly what KubeVirt v1.6 serialised.
        assert got.spec.to_json() == want["spec"]
    else:
        with pytest.raises(RevisionError) as err:
            decode_revision(rev)
        assert err.value.message == without_data(entry["decodeError"])


def _matcher_revision(case: Case, family: str, status_ref: str) -> dict[str, Any] | None:
    """The revision the finder decodes for one family, by KubeVirt's lookup order (None: live object)."""
    vm = case.input["vm"]
    matcher = vm["spec"].get(family) or {}
    revisions = _revisions(case)
    if matcher.get("revisionName"):
        return revisions.get(matcher["revisionName"])
    ref = ((vm.get("status") or {}).get(status_ref) or {}).get("controllerRevisionRef") or {}
    rev = revisions.get(ref.get("name", ""))
    labels = ((rev or {}).get("metadata") or {}).get("labels") or {}
    if rev is not None and labels.get("instancetype.kubevirt.io/object-name") == matcher.get("name"):
        return rev
    return None


def without_data(message: str) -> str:
    """KubeVirt's text as we send it: apimachinery's "Object 'Kind' is missing in '<the revision's
    data>'" ends before the data (an error must not be a way to read a revision's content)."""
    head, quoted, _ = message.partition(" is missing in '")
    return f"{head} is missing in the revision's data" if quoted else message


REVISION_ERRORS = [
    c
    for c in CASES
    if "ControllerRevision" in c.expected.get("error", "") and c.expected.get("kind") == "other"
]


@shared.needs_shared(shared.CASES_DIR)
def test_corpus_has_revision_errors() -> None:
    assert {c.id for c in REVISION_ERRORS} >= {"revision-012", "revision-022", "revision-023", "revision-024"}


@shared.parametrize("case", REVISION_ERRORS, [c.id for c in REVISION_ERRORS])
def test_revision_error_text(case: Case) -> None:
    """The first failing revision (instance type before preference) fails with the expected text."""
    message = None
    for family, ref, decode in (
        ("instancetype", "instancetypeRef", instancetype_spec_from_revision),
        ("preference", "preferenceRef", preference_spec_from_revision),
    ):
        rev = _matcher_revision(case, family, ref)
        if rev is None:
            continue
        try:
            decode(rev)
        except RevisionError as err:
            message = err.message
            break
    assert message is not None
    prefix = case.expected.get("errorPrefix")
    if prefix:
        assert message.startswith(prefix)
    # The rest is faithful too (scheme name), except where the corpus quotes HEAD's scheme line, and
    # without the revision's data.
    if "register.go:44" not in case.expected["error"]:
        assert message == without_data(case.expected["error"])


# --- unit tests ----------------------------------------------------------------------------------


def _b64(doc: Any) -> str:
    return base64.b64encode(json.dumps(doc).encode()).decode()


def _rev(data: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"}, "data": data}


IT_SPEC = {"cpu": {"guest": 4}, "memory": {"guest": "128Mi"}}
CONVERTED_IT = {
    "cpu": {"guest": 4, "model": "", "dedicatedCPUPlacement": False, "isolateEmulatorThread": False},
    "memory": {"guest": "128Mi"},
}


@pytest.mark.parametrize(
    "api_version", ["instancetype.kubevirt.io/v1alpha1", "", "flavor.kubevirt.io/v1alpha1"]
)
def test_instancetype_spec_revision_wrapper(api_version: str) -> None:
    spec = instancetype_spec_from_revision(_rev({"apiVersion": api_version, "spec": _b64(IT_SPEC)}))
    assert spec.to_json() == CONVERTED_IT
    # The converted plain fields are set pointers: the renderer sees them as "the instance type sets this".
    assert spec.cpu.model == "" and spec.cpu.dedicated_cpu_placement is False
    assert spec.node_selector is None and spec.cpu.max_sockets is None and spec.memory.max_guest is None


def test_preference_spec_revision_wrapper() -> None:
    doc = {"cpu": {"preferredCPUTopology": "preferCores"}, "firmware": {"preferredUseEfi": True}}
    decoded = decode_revision(_rev({"apiVersion": "", "spec": _b64(doc)}))
    assert (decoded.kind, decoded.name, decoded.go_type) == (
        "VirtualMachinePreference",
        "old-version-of-preference-object",
        "*v1beta1.VirtualMachinePreference",
    )
    spec = preference_spec_from_revision(_rev({"apiVersion": "", "spec": _b64(doc)}))
    assert spec.cpu is not None and spec.cpu.preferred_cpu_topology == "preferCores"
    assert spec.firmware is not None and spec.firmware.preferred_use_efi is True


def test_empty_wrapper_is_a_preference() -> None:
    rev = _rev({"apiVersion": "instancetype.kubevirt.io/v1alpha1", "spec": _b64({})})
    assert preference_spec_from_revision(rev) == PreferenceSpec()
    with pytest.raises(RevisionError) as err:
        instancetype_spec_from_revision(rev)
    assert err.value.message == "unexpected type in ControllerRevision: *v1beta1.VirtualMachinePreference"


def test_instancetype_wrapper_rejected_for_preference() -> None:
    with pytest.raises(RevisionError) as err:
        preference_spec_from_revision(_rev({"apiVersion": "", "spec": _b64(IT_SPEC)}))
    assert err.value.message == "unexpected type in ControllerRevision: *v1beta1.VirtualMachineInstancetype"


def _kind_missing(data: Any) -> str:
    """apimachinery's text up to the data it would quote: errors never repeat a revision's content."""
    return f"{DECODE_FAILED}Object 'Kind' is missing in the revision's data"


@pytest.mark.parametrize(
    "inner",
    [
        {"cpu": {"guest": 4, "sockets": 1}, "memory": {"guest": "1Gi"}},  # unknown member
        {"cpu": {"guest": 4}, "memory": {"guest": "1Gi"}, "nodeSelector": {}},  # v1beta1-only member
        {"cpu": {"Guest": 4}, "memory": {"guest": "1Gi"}},  # case-mismatched member
        {"cpu": {"guest": "4"}, "memory": {"guest": "1Gi"}},  # wrong type
        {
            "cpu": {"guest": 4, "numa": {"guestMappingPassthrough": {}, "extra": True}},
            "memory": {"guest": "1Gi"},
        },
        {"devices": {"preferredDiskBus": "virtio", "preferredVideoType": "vga"}},  # v1beta1-only preference
    ],
    ids=["unknown", "v1beta1-only", "case", "type", "unknown-in-core-type", "preference-v1beta1-only"],
)
def test_wrapper_is_strict(inner: dict[str, Any]) -> None:
    data = {"apiVersion": "instancetype.kubevirt.io/v1alpha1", "spec": _b64(inner)}
    for decode in (instancetype_spec_from_revision, preference_spec_from_revision):
        with pytest.raises(RevisionError) as err:
            decode(_rev(data))
        assert err.value.message == _kind_missing(data)


def test_wrapper_duplicate_member_is_strict() -> None:
    inner = b'{"cpu":{"guest":2,"guest":4},"memory":{"guest":"1Gi"}}'
    data = {"apiVersion": "", "spec": base64.b64encode(inner).decode()}
    with pytest.raises(RevisionError) as err:
        instancetype_spec_from_revision(_rev(data))
    assert err.value.message == _kind_missing(data)
    # Raw bytes as stored: a repeated wrapper member fails too (the message does not quote the bytes).
    raw = (
        b'{"apiVersion":"","apiVersion":"","spec":"' + base64.b64encode(json.dumps(IT_SPEC).encode()) + b'"}'
    )
    with pytest.raises(RevisionError) as err:
        instancetype_spec_from_revision(_rev(raw))
    assert err.value.message == _kind_missing(raw)
    # Without the repetition, the same raw bytes decode.
    ok = raw.replace(b'"apiVersion":"",', b"", 1)
    assert instancetype_spec_from_revision(_rev(ok)).cpu.guest == 4


@pytest.mark.parametrize(
    "data",
    [
        {"apiVersion": "x", "spec": "not base64!"},
        {"apiVersion": "x", "spec": "e30"},  # missing padding
        {"apiVersion": "x"},
        {"apiVersion": "x", "spec": None},
        {"apiversion": "x", "spec": "e30="},  # case-mismatched wrapper member
        {"apiVersion": 1, "spec": "e30="},
        {"apiVersion": "x", "spec": "e30=", "extra": 1},
    ],
)
def test_not_a_wrapper(data: dict[str, Any]) -> None:
    with pytest.raises(RevisionError) as err:
        decode_revision(_rev(data))
    assert err.value.message.startswith(DECODE_FAILED)


def test_wrapper_spec_as_byte_array_and_null_inner() -> None:
    assert preference_spec_from_revision(_rev({"spec": list(b"{}")})) == PreferenceSpec()
    assert preference_spec_from_revision(_rev({"spec": _b64(None)})) == PreferenceSpec()


@pytest.mark.parametrize("data", [None, b"", b"null"])
def test_empty_data(data: Any) -> None:
    rev = _rev(data)
    for decode in (instancetype_spec_from_revision, preference_spec_from_revision):
        with pytest.raises(RevisionError) as err:
            decode(rev)
        assert err.value.message == "unexpected type in ControllerRevision: <nil>"
    assert decode_revision({"metadata": {"name": "no-data"}}).go_type == "<nil>"


def _object(api_version: str, kind: str, spec: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "o"}, "spec": spec, **extra}


@pytest.mark.parametrize(
    ("api_version", "kind", "go_type"),
    [
        ("snapshot.kubevirt.io/v1beta1", "VirtualMachineSnapshot", "*v1beta1.VirtualMachineSnapshot"),
        ("snapshot.kubevirt.io/v1alpha1", "VirtualMachineRestore", "*v1alpha1.VirtualMachineRestore"),
        ("kubevirt.io/v1", "VirtualMachineInstance", "*v1.VirtualMachineInstance"),
        (
            "instancetype.kubevirt.io/v1beta1",
            "VirtualMachineInstancetypeList",
            "*v1beta1.VirtualMachineInstancetypeList",
        ),
        ("instancetype.kubevirt.io/v1alpha2", "ListOptions", "*v1.ListOptions"),
        ("anything/v9", "Status", "*v1.Status"),
        ("pool.kubevirt.io/__internal", "WatchEvent", "*v1.InternalEvent"),
    ],
)
def test_other_registered_kinds_decode_then_are_rejected(api_version: str, kind: str, go_type: str) -> None:
    rev = _rev(_object(api_version, kind, {}))
    assert decode_revision(rev).go_type == go_type
    for decode in (instancetype_spec_from_revision, preference_spec_from_revision):
        with pytest.raises(RevisionError) as err:
            decode(rev)
        assert err.value.message == f"unexpected type in ControllerRevision: {go_type}"


@pytest.mark.parametrize(
    ("api_version", "kind", "message"),
    [
        (
            "instancetype.kubevirt.io/v1alpha3",
            "VirtualMachineInstancetype",
            'no kind "VirtualMachineInstancetype" is registered for version '
            f'"instancetype.kubevirt.io/v1alpha3" in scheme "{SCHEME}"',
        ),
        (
            "instancetype.kubevirt.io/v1beta1",
            "virtualmachineinstancetype",
            'no kind "virtualmachineinstancetype" is registered for version '
            f'"instancetype.kubevirt.io/v1beta1" in scheme "{SCHEME}"',
        ),
        ("v1", "Pod", f'no kind "Pod" is registered for version "v1" in scheme "{SCHEME}"'),
        ("a/b/c", "X", "unexpected GroupVersion string: a/b/c"),
        (
            "kubevirt.io/__internal",
            "VirtualMachine",
            'no kind "VirtualMachine" is registered for the internal version of group "kubevirt.io" '
            f'in scheme "{SCHEME}"',
        ),
    ],
)
def test_unregistered(api_version: str, kind: str, message: str) -> None:
    with pytest.raises(RevisionError) as err:
        decode_revision(_rev(_object(api_version, kind, {})))
    assert err.value.message == DECODE_FAILED + message


def test_missing_api_version_and_kind() -> None:
    data = {"kind": "VirtualMachineInstancetype", "spec": IT_SPEC}
    with pytest.raises(RevisionError) as err:
        decode_revision(_rev(data))
    assert err.value.message == f"{DECODE_FAILED}Object 'apiVersion' is missing in the revision's data"
    with pytest.raises(RevisionError) as err:
        decode_revision(_rev("just a string"))
    assert err.value.message.startswith(f"{DECODE_FAILED}couldn't get version/kind; json parse error: ")


def test_type_meta_is_matched_case_insensitively_but_the_object_is_not() -> None:
    """apiVersion/kind come from encoding/json (any case); the object itself from sigs.k8s.io/json."""
    data = {
        "APIVERSION": "instancetype.kubevirt.io/v1beta1",
        "Kind": "VirtualMachineInstancetype",
        "spec": {"cpu": {"guest": 2, "Model": "host"}, "memory": {"guest": "1Gi"}},
    }
    spec = instancetype_spec_from_revision(_rev(data))
    assert spec.cpu.guest == 2 and spec.cpu.model is None


@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2"])
@pytest.mark.parametrize("kind", ["VirtualMachineInstancetype", "VirtualMachineClusterInstancetype"])
def test_old_whole_instancetype_objects_convert(version: str, kind: str) -> None:
    data = _object(
        f"instancetype.kubevirt.io/{version}", kind, {**IT_SPEC, "nodeSelector": {"a": "b"}, "x": 1}
    )
    decoded = decode_revision(_rev(data))
    assert (decoded.kind, decoded.go_type) == (kind, f"*v1beta1.{kind}")
    # Lenient: members the old version lacks are dropped silently.
    assert instancetype_spec_from_revision(_rev(data)).to_json() == CONVERTED_IT


def test_old_whole_preference_objects_convert() -> None:
    spec = {"volumes": {"preferredStorageClassName": "fast"}, "cpu": {"preferredCPUTopology": ""}}
    v2 = preference_spec_from_revision(
        _rev(_object("instancetype.kubevirt.io/v1alpha2", "VirtualMachinePreference", spec))
    )
    assert v2.volumes is not None and v2.volumes.preferred_storage_class_name == "fast"
    assert v2.cpu is not None and v2.cpu.preferred_cpu_topology is None  # empty stays unset
    v1 = preference_spec_from_revision(
        _rev(_object("instancetype.kubevirt.io/v1alpha1", "VirtualMachineClusterPreference", spec))
    )
    assert v1.volumes is None  # v1alpha1 had no volumes


def test_lenient_object_type_error_fails_decode() -> None:
    data = _object(
        "instancetype.kubevirt.io/v1alpha2", "VirtualMachineInstancetype", {"cpu": {"guest": "two"}}
    )
    with pytest.raises(RevisionError) as err:
        decode_revision(_rev(data))
    assert err.value.message.startswith(DECODE_FAILED) and "guest" in err.value.message


def test_revision_holding_a_virtual_machine() -> None:
    data = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "x"}, "spec": {}}
    with pytest.raises(RevisionError) as err:
        instancetype_spec_from_revision(_rev(data))
    assert err.value.message == "unexpected type in ControllerRevision: *v1.VirtualMachine"


# --- live objects --------------------------------------------------------------------------------


def test_v1beta1_object_presence() -> None:
    obj = _object(
        "instancetype.kubevirt.io/v1beta1",
        "VirtualMachineInstancetype",
        {"cpu": {"guest": 2}, "memory": {"guest": "1024Mi"}, "nodeSelector": {}, "gpus": []},
    )
    spec = instancetype_spec_from_object(obj)
    assert spec.node_selector == {} and spec.node_selector is not None
    assert spec.cpu.model is None and spec.cpu.dedicated_cpu_placement is None
    assert spec.memory.guest == "1Gi"


def test_flavor_object_is_an_instancetype() -> None:
    obj = _object(
        "flavor.kubevirt.io/v1alpha1", "VirtualMachineClusterFlavor", {"cpu": {"guest": 2}, "memory": {}}
    )
    spec = instancetype_spec_from_object(obj)
    assert spec.to_json() == {
        "cpu": {"guest": 2, "model": "", "dedicatedCPUPlacement": False, "isolateEmulatorThread": False},
        "memory": {"guest": "0"},
    }


def test_flavor_profiles_shape_is_refused() -> None:
    obj = {
        "apiVersion": "flavor.kubevirt.io/v1alpha1",
        "kind": "VirtualMachineFlavor",
        "metadata": {"name": "f"},
        "profiles": [{"name": "default", "default": True, "cpu": {"sockets": 2}}],
    }
    with pytest.raises(ObjectDecodeError) as err:
        instancetype_spec_from_object(obj)
    assert "profiles" in err.value.message and "'f'" in err.value.message


def test_flavor_preference_object() -> None:
    obj = _object(
        "flavor.kubevirt.io/v1alpha1",
        "VirtualMachinePreference",
        {"devices": {"preferredDiskBus": "virtio", "preferredAutoattachInputDevice": True}},
    )
    spec = preference_spec_from_object(obj)
    assert spec.devices is not None and spec.devices.preferred_disk_bus == "virtio"
    assert spec.devices.preferred_autoattach_input_device is None  # v0.55 had no such member


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        (
            _object("instancetype.kubevirt.io/v1beta1", "VirtualMachinePreference", {}),
            "is not an instance type",
        ),
        (
            _object("instancetype.kubevirt.io/v2", "VirtualMachineInstancetype", {}),
            "'instancetype.kubevirt.io/v2'",
        ),
        (
            _object("instancetype.kubevirt.io/v1beta1", "VirtualMachineInstancetype", {"cpu": {"guest": -1}}),
            "guest",
        ),
        (_object("instancetype.kubevirt.io/v1alpha1", "VirtualMachineInstancetype", {"cpu": []}), "cpu"),
    ],
)
def test_undecodable_instancetype_objects(obj: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ObjectDecodeError) as err:
        instancetype_spec_from_object(obj)
    assert fragment in err.value.message


def test_exact_names_for_objects() -> None:
    obj = _object(
        "instancetype.kubevirt.io/v1beta1",
        "VirtualMachineInstancetype",
        {"CPU": {"guest": 3}, "memory": {"guest": "1Gi"}},
    )
    # client-go decodes objects with exact names (and a real API server prunes "CPU" first), so
    # the instancetype has no CPU; issue 18 (folder source, CLI and Python API alike)
    assert instancetype_spec_from_object(obj).cpu.guest == 0
    assert instancetype_spec_from_object(obj, exact_names=False).cpu.guest == 3  # encoding/json


def test_holds_spec_tells_instancetype_and_preference_revisions_from_the_rest() -> None:
    from apiserver.render.instancetype.revision import holds_spec

    v1beta1 = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "it"},
        "spec": IT_SPEC,
    }
    wrapper = {"apiVersion": "instancetype.kubevirt.io/v1alpha1", "spec": _b64(IT_SPEC)}
    statefulset = {"spec": {"template": {"spec": {"containers": [{"env": [{"value": "hunter2"}]}]}}}}
    vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "spec": {}}
    assert holds_spec(_rev(v1beta1)) and holds_spec(_rev(wrapper))
    assert not any(holds_spec(_rev(d)) for d in (statefulset, vm, None, "garbage", {"kind": "X"}))
    rev = _rev(statefulset)
    assert holds_spec(rev) is holds_spec(rev) is False  # remembered per instance
