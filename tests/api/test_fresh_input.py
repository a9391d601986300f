"""A VM decoded afresh for every call (as a script, the command line or a UI backend decodes it) is
checked natively, not walked in Python (apiserver.render.golang.values), and gets every refusal the
walk gives: the same 400, the same words, the same field path."""

from __future__ import annotations

import enum
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver import ExpandError, expand, expand_vm
from apiserver.render.golang import values
from tests.support.fuzzing import count, fuzz

IT = "instancetype.kubevirt.io/v1beta1"
INSTANCETYPE = {
    "apiVersion": IT,
    "kind": "VirtualMachineClusterInstancetype",
    "metadata": {"name": "it"},
    "spec": {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}},
}


class Color(enum.Enum):
    RED = "red"


def _vm(disks: int = 1, **extra: Any) -> dict[str, Any]:
    devices = {"disks": [{"name": f"d{i}", "disk": {"bus": "virtio"}} for i in range(disks)]}
    volumes = [{"name": f"d{i}", "containerDisk": {"image": "img"}} for i in range(disks)]
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {
            "instancetype": {"name": "it"},
            "template": {"spec": {"domain": {"devices": devices}, "volumes": volumes}},
        },
        **extra,
    }


def _walk_refusal(value: Any) -> str | None:
    """What the Python walk (the check before this one) says of a value: its message, None if it passes."""
    try:
        values._check(value, "", 0)
    except ExpandError as err:
        return err.message
    return None


def _refusal(vm: Any) -> str | None:
    try:
        expand(vm, [INSTANCETYPE], field_validation="Ignore")
    except ExpandError as err:
        if err.code == 400 and err.message == _walk_refusal(vm):
            return err.message
        raise
    return None


def _deep(levels: int) -> Any:
    """A value of ``levels`` nested objects, the innermost empty."""
    value: Any = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "status.x: nan is not a JSON number"),
        (float("inf"), "status.x: inf is not a JSON number"),
        ([1, float("-inf")], "status.x[1]: -inf is not a JSON number"),
        ((1, 2), "status.x: a tuple is not a JSON value"),
        ([{"y": (1,)}], "status.x[0].y: a tuple is not a JSON value"),
        (uuid.UUID(int=1), "status.x: a UUID is not a JSON value"),
        (Color.RED, "status.x: a Color is not a JSON value"),
        (orjson.Fragment(b"{}"), "status.x: a Fragment is not a JSON value"),
        ({1: "a"}, "status.x: mapping key 1 is not a string"),
        (10**30, None),  # beyond 64 bits, within a float's range: JSON, walked
        (10**400, "status.x: number out of range"),
        ("\ud800", None),  # a lone surrogate: a str, as before
    ],
    ids=[
        "nan",
        "inf",
        "-inf-in-list",
        "tuple",
        "tuple-deeper",
        "uuid",
        "enum",
        "fragment",
        "int-key",
        "big-int",
        "huge-int",
        "surrogate",
    ],
)
def test_a_fresh_vm_gets_the_walks_refusal(value: Any, message: str | None) -> None:
    # Decoded afresh for each call, as a caller would: every call says the same, named by its path.
    for _ in range(3):
        vm = _vm(status={"x": value})
        if message is None:
            assert _refusal(vm) is None
        else:
            with pytest.raises(ExpandError) as err:
                expand_vm(vm, [INSTANCETYPE], field_validation="Ignore")
            assert err.value.code == 400 and err.value.reason == "BadRequest"
            assert err.value.message == message


@pytest.mark.parametrize("levels", [101, 150, 254, 255, 300])
def test_nesting_past_the_limit_is_refused_at_any_depth(levels: int) -> None:
    # 101 to 254 levels orjson writes (its indented text shows the depth), from 255 it refuses itself.
    vm = _vm(status={"x": _deep(levels - 2)})  # the VM and status are two levels
    with pytest.raises(ExpandError) as err:
        expand_vm(vm, [INSTANCETYPE], field_validation="Ignore")
    assert err.value.code == 400
    assert (
        err.value.message.startswith("status.x.a.a.a")
        and "nested deeper than 100 levels" in err.value.message
    )


def test_nesting_at_the_limit_with_many_containers_passes_without_a_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 100 levels deep and 300 containers beside (far more than 100 openers): told natively.
    monkeypatch.setattr(values, "_check", _no_walk)
    vm = _vm(disks=60, status={"x": _deep(98), "y": [[{}] for _ in range(100)]})
    out = expand_vm(vm, [INSTANCETYPE], field_validation="Ignore")
    assert len(out["spec"]["template"]["spec"]["domain"]["devices"]["disks"]) == 60


def _no_walk(value: Any, path: str, depth: int) -> None:
    raise AssertionError(f"walked {path or 'the value'} in Python")


def test_a_fresh_json_vm_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(values, "_check", _no_walk)
    for guest in (1, 2, 3):
        vm = orjson.loads(orjson.dumps(_vm(status={"guest": guest, "f": 1.5, "n": None, "b": True})))
        out = expand_vm(vm, [INSTANCETYPE], field_validation="Ignore")
        assert out["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"] == 2


def test_fresh_vms_are_not_kept_alive() -> None:
    # A caller decoding a VM per call: only the last few are remembered (each entry holds its VM).
    for _ in range(3 * values._RECENT_SIZE):
        expand_vm(_vm(), [INSTANCETYPE], field_validation="Ignore")
    assert len(values._RECENT) <= values._RECENT_SIZE


def test_a_vm_edited_into_a_non_json_value_after_a_call_is_refused() -> None:
    vm = _vm()
    expand_vm(vm, [INSTANCETYPE], field_validation="Ignore")
    vm["status"] = {"x": [float("nan")]}
    with pytest.raises(ExpandError) as err:
        expand_vm(vm, [INSTANCETYPE], field_validation="Ignore")
    assert err.value.message == "status.x[0]: nan is not a JSON number"


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and the infinities included
    st.text(max_size=5),
    st.sampled_from([uuid.UUID(int=7), Color.RED, b"raw", orjson.Fragment(b"1")]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
        st.dictionaries(st.integers(max_value=3), inner, min_size=1, max_size=2),
    ),
    max_leaves=20,
)


TARGET = "api: a fresh VM checked natively as the walk checks it"


@fuzz(TARGET, ci_examples=300)
@given(status=_VALUES)
def test_the_native_check_refuses_what_the_walk_refuses(status: Any) -> None:
    # Property: for any value, the API's answer on a fresh VM is the walk's (refusal and words), or a
    # rendering when the walk accepts it.
    count(TARGET)
    vm = _vm(status={"x": status})
    expected = _walk_refusal(vm)
    try:
        expand(vm, [INSTANCETYPE], field_validation="Ignore")
    except ExpandError as err:
        assert (err.code, err.message) == (400, expected)
    else:
        assert expected is None
