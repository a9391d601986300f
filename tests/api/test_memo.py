"""The Python API checks and decodes each input once per version (apiserver.render.memo, values):
what a caller sees must not depend on it. A dict edited in place between calls is seen afresh."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver import ExpandError, expand
from apiserver.render.admission import AdmissionDenied

IT = "instancetype.kubevirt.io/v1beta1"


def _vm() -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {"instancetype": {"name": "it"}, "template": {"spec": {"domain": {"devices": {}}}}},
    }


def _instancetype(guest: int, **meta: str) -> dict[str, Any]:
    return {
        "apiVersion": IT,
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "it", **meta},
        "spec": {"cpu": {"guest": guest}, "memory": {"guest": "1Gi"}},
    }


def _sockets(vm: dict[str, Any], objects: list[dict[str, Any]], **options: Any) -> int:
    result = expand(vm, objects, field_validation="Ignore", **options)
    sockets: int = result.vm["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"]
    return sockets


def test_an_object_edited_in_place_is_decoded_afresh() -> None:
    vm, it = _vm(), _instancetype(2)
    assert _sockets(vm, [it]) == 2
    it["spec"]["cpu"]["guest"] = 4
    assert _sockets(vm, [it]) == 4
    assert _sockets(vm, [_instancetype(4)]) == 4  # another dict with the same text
    assert _sockets(vm, [_instancetype(2)]) == 2


def test_a_versioned_object_is_decoded_once_per_version() -> None:
    # What a source does: an object with uid and resourceVersion is replaced, not edited, on change.
    vm = _vm()
    assert _sockets(vm, [_instancetype(2, uid="u", resourceVersion="1")]) == 2
    assert _sockets(vm, [_instancetype(3, uid="u", resourceVersion="2")]) == 3


def test_a_vm_edited_in_place_is_checked_afresh() -> None:
    vm = _vm()
    expand(vm, [_instancetype(2)])  # Strict: passes
    vm["spec"]["template"]["spec"]["domain"]["bogus"] = 1
    with pytest.raises(ExpandError) as err:
        expand(vm, [_instancetype(2)])
    assert err.value.code == 422 and "bogus" in err.value.message
    vm["spec"]["template"]["spec"]["domain"]["bogus"] = {1, 2}  # not JSON any more
    with pytest.raises(ExpandError) as err:
        expand(vm, [_instancetype(2)])
    assert err.value.code == 400 and "a set is not a JSON value" in err.value.message


def test_an_object_edited_into_a_non_json_value_is_refused() -> None:
    vm, it = _vm(), _instancetype(2)
    assert _sockets(vm, [it]) == 2
    it["metadata"]["labels"] = {"a": b"bytes"}
    with pytest.raises(ExpandError) as err:
        _sockets(vm, [it])
    assert err.value.code == 400 and "objects[0].metadata.labels.a" in err.value.message


def test_a_configuration_edited_in_place_is_read_afresh() -> None:
    vm, objects = _vm(), [_instancetype(2)]
    config: dict[str, Any] = {"machineType": "pc-q35-rhel9.2.0"}

    def machine() -> str:
        result = expand(vm, objects, config, field_validation="Ignore")
        return str(result.vm["spec"]["template"]["spec"]["domain"]["machine"]["type"])

    assert machine() == "pc-q35-rhel9.2.0"
    config["machineType"] = "pc"
    assert machine() == "pc"


def test_a_feature_gate_added_in_place_changes_the_verdict() -> None:
    # validate=true answers per configuration version too: the webhook's gates are not memoised by identity
    vm = _vm()
    vm["spec"]["runStrategy"] = "Always"
    vm["spec"]["template"]["spec"]["domain"]["devices"]["autoattachVSOCK"] = True
    config: dict[str, Any] = {"developerConfiguration": {"featureGates": []}}
    objects = [_instancetype(2)]
    with pytest.raises(AdmissionDenied):
        expand(vm, objects, config, validate=True, field_validation="Ignore")
    config["developerConfiguration"]["featureGates"].append("VSOCK")
    expand(vm, objects, config, validate=True, field_validation="Ignore")
    other = {"developerConfiguration": {"featureGates": []}}
    with pytest.raises(AdmissionDenied):
        expand(vm, objects, other, validate=True, field_validation="Ignore")


def test_a_catalog_passed_again_is_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Up to 1,024 inputs are recognised; with 256 a caller passing 600 objects had each walked on every call.
    from apiserver.render.golang import values

    checked: list[bytes | None] = []
    real_check = values._native_check

    def counting(value: Any, printed: bytes | None) -> bool:
        checked.append(printed)
        return real_check(value, printed)

    monkeypatch.setattr(values, "_native_check", counting)
    objects = [_instancetype(1 + i % 4, name=f"it-{i}") for i in range(600)]
    objects.append(_instancetype(2))
    vm = _vm()
    assert _sockets(vm, objects) == 2
    assert len(checked) == 602  # the VM and every object, once
    checked.clear()
    assert _sockets(vm, objects) == 2
    assert checked == []
    objects[5]["spec"]["cpu"]["guest"] = 3  # edited in place: that one is checked again
    assert _sockets(vm, objects) == 2
    assert len(checked) == 1 and b'"name":"it-5"' in (checked[0] or b"")
