"""Unit tests for the parts of the engine that are easy to get subtly wrong."""

from __future__ import annotations

import pytest

from apiserver.render.instancetype.apply_instancetype import overcommitted_request
from apiserver.render.instancetype.topology import guest_topology
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.kubernetes.quantity import format_int, parse_quantity

GI = 1024**3
MI = 1024**2


@pytest.mark.parametrize(
    ("guest", "percent", "expected"),
    [
        # float32 arithmetic, as KubeVirt computes it; exact decimal math would differ.
        (128 * MI, 10, 120795952),  # exact: 120795955
        (GI, 10, 966367616),  # exact: 966367641
        (512_000_000, 15, 435200000),
        (512_000_000, 80, 102399992),
        (GI, 25, 805306368),
        (GI, 33, 719406976),
        (2 * GI, 50, GI),
        (GI, 100, 0),
    ],
)
def test_overcommit_uses_float32(guest: int, percent: int, expected: int) -> None:
    assert overcommitted_request(guest, percent) == expected


@pytest.mark.parametrize(
    ("guest", "percent", "text"),
    [
        ("1.2Gi", 20, "1006633Ki"),  # issue 18: the guest's BinarySI, though its text is 1288490188800m
        ("9007199791611905", 1, "8917128421834752"),  # int64 -> float32 rounds once (via float64: twice)
        ("123456789012345678901234567890", 20, "-3490316924124921856"),  # Value() wraps
        ("41301827458037908786.84Ki", 300, "-9223372036854775808"),  # int64(float32) out of range
    ],
)
def test_overcommit_as_go_computes_it(guest: str, percent: int, text: str) -> None:
    quantity = parse_quantity(guest)
    assert format_int(overcommitted_request(quantity.value_ceil(), percent), quantity.format) == text


@pytest.mark.parametrize(
    ("guest", "percent", "text"),
    [
        ("1Gi", 10, "966367616"),
        ("1Gi", 25, "768Mi"),
        ("512M", 15, "435200k"),
        ("2Gi", 50, "1Gi"),
        ("1Gi", 100, "0"),
    ],
)
def test_overcommit_keeps_the_guest_format(guest: str, percent: int, text: str) -> None:
    quantity = parse_quantity(guest)
    assert format_int(overcommitted_request(quantity.value_ceil(), percent), quantity.format) == text


def spread(ratio: int | None = None, across: str | None = None, top_ratio: int = 0) -> dict[str, object]:
    options: dict[str, object] = {}
    if ratio is not None:
        options["ratio"] = ratio
    if across is not None:
        options["across"] = across
    pref: dict[str, object] = {"cpu": {"preferredCPUTopology": "spread", "spreadOptions": options}}
    if top_ratio:
        pref["preferSpreadSocketToCoreRatio"] = top_ratio
    return pref


@pytest.mark.parametrize(
    ("vcpus", "preference", "expected"),
    [
        (4, None, (4, 1, 1)),
        (2, {"cpu": {"preferredCPUTopology": "cores"}}, (1, 2, 1)),
        (2, {"cpu": {"preferredCPUTopology": "threads"}}, (1, 1, 2)),
        (2, {"cpu": {"preferredCPUTopology": "preferAny"}}, (2, 1, 1)),
        (8, {"cpu": {"preferredCPUTopology": "Cores"}}, (1, 1, 1)),  # case-sensitive: vCPUs lost
        (1, spread(), (1, 1, 1)),
        (6, spread(), (3, 2, 1)),
        (3, spread(), (1, 2, 1)),  # integer division, one vCPU lost, as KubeVirt does
        (2, spread(ratio=4), (0, 4, 1)),
        (12, spread(ratio=3), (4, 3, 1)),
        (9, spread(top_ratio=3), (3, 3, 1)),
        (8, spread(ratio=4, top_ratio=3), (2, 4, 1)),  # spreadOptions.ratio overrides
        (8, spread(across="CoresThreads"), (1, 4, 2)),
        (24, spread(ratio=3, across="SocketsCoresThreads"), (4, 3, 2)),
        (8, spread(across="Nowhere"), (1, 1, 1)),
        (0, None, (0, 1, 1)),
    ],
)
def test_guest_topology(
    vcpus: int, preference: dict[str, object] | None, expected: tuple[int, int, int]
) -> None:
    assert guest_topology(vcpus, preference) == expected


def test_spread_ratio_zero_is_a_clean_error_not_a_crash() -> None:
    with pytest.raises(ExpandError) as info:
        guest_topology(4, spread(ratio=0))
    assert info.value.code == 422
    assert info.value.causes[0]["field"] == "preference.spec.cpu.spreadOptions.ratio"
    assert guest_topology(1, spread(ratio=0)) == (1, 1, 1)


def _instancetype(guest: int) -> dict[str, object]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "it", "uid": "u-1", "resourceVersion": "7"},
        "spec": {"cpu": {"guest": guest}, "memory": {"guest": "1Gi"}},
    }


def test_a_replaced_object_is_decoded_afresh_even_with_the_same_resource_version() -> None:
    """An edited manifest may keep an old resourceVersion: the spec cache must not serve the old spec."""
    from apiserver.render import ObjectIndex, expand

    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "ns"},
        "spec": {"instancetype": {"name": "it"}, "template": {"spec": {"domain": {"devices": {}}}}},
    }

    def sockets(guest: int) -> object:
        out = expand(vm, ObjectIndex([_instancetype(guest)])).vm
        return out["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"]

    assert sockets(2) == 2
    assert sockets(4) == 4
