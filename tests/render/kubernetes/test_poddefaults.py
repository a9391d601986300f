"""kube-apiserver's defaulting of a pod's requests from its limits (SetDefaults_Pod) and the QoS class it
stores (GetPodQOS), as Kubernetes 1.28 gives them."""

from __future__ import annotations

import pytest

from apiserver.render.kubernetes.poddefaults import (
    BEST_EFFORT,
    BURSTABLE,
    GUARANTEED,
    default_requests,
    get_pod_qos,
)
from apiserver.render.kubernetes.quantitymath import ResourceList, must_parse, resource_text


def test_a_limit_without_a_request_becomes_the_request() -> None:
    requests = {"cpu": must_parse("100m")}
    limits = {"cpu": must_parse("1"), "devices.kubevirt.io/kvm": must_parse("1")}
    got = default_requests(requests, limits)
    assert resource_text(got) == {"cpu": "100m", "devices.kubevirt.io/kvm": "1"}
    assert resource_text(requests) == {"cpu": "100m"}  # not changed


def test_no_limits_leave_the_requests_alone() -> None:
    requests = {"memory": must_parse("1Gi")}
    assert default_requests(requests, {}) is requests
    assert default_requests({}, {}) == {}


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([({}, {})], BEST_EFFORT),
        # extended resources alone do not count
        (
            [({"devices.kubevirt.io/kvm": must_parse("1")}, {"devices.kubevirt.io/kvm": must_parse("1")})],
            BEST_EFFORT,
        ),
        # zero requests do not count either
        ([({"cpu": must_parse("0")}, {})], BEST_EFFORT),
        (
            [
                (
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                )
            ],
            GUARANTEED,
        ),
        # 1000m equals 1
        (
            [
                (
                    {"cpu": must_parse("1000m"), "memory": must_parse("1Gi")},
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                )
            ],
            GUARANTEED,
        ),
        (
            [
                (
                    {"cpu": must_parse("500m"), "memory": must_parse("1Gi")},
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                )
            ],
            BURSTABLE,
        ),
        # a container without a CPU limit makes the pod Burstable
        ([({"memory": must_parse("1Gi")}, {"memory": must_parse("1Gi")})], BURSTABLE),
        # every container, init containers too, must limit both
        (
            [
                (
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                ),
                ({"cpu": must_parse("5m")}, {"cpu": must_parse("5m")}),
            ],
            BURSTABLE,
        ),
        # the sums are compared
        (
            [
                (
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                    {"cpu": must_parse("1"), "memory": must_parse("1Gi")},
                ),
                (
                    {"cpu": must_parse("5m"), "memory": must_parse("1M")},
                    {"cpu": must_parse("5m"), "memory": must_parse("1M")},
                ),
            ],
            GUARANTEED,
        ),
    ],
)
def test_qos_class(containers: list[tuple[ResourceList, ResourceList]], expected: str) -> None:
    assert get_pod_qos(containers) == expected
