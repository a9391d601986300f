"""Through kube-apiserver's aggregator, with kubectl as the client: the deployed server is Available and
renders stored VMs as the engine does."""

from __future__ import annotations

import json
from typing import Any

from apiserver import expand_vm
from devcluster.objects import small_vm
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.deployed import DeployedServer

GROUP = "subresources.kubevirt.io"


def test_every_apiservice_of_the_overlay_is_available(
    deployed: DeployedServer, control_plane: ControlPlane
) -> None:
    names = [svc["metadata"]["name"] for svc in deployed.apiservices()]
    # KubeVirt's group, and the server's own for the rendered VMs' collection (every overlay serves it).
    assert sorted(names) == ["v1.expand.kubevirt-expand.io", f"v1.{GROUP}", f"v1alpha3.{GROUP}"]
    for name in names:
        obj = control_plane.get_json("apiservice", name)
        available = next(c for c in obj["status"]["conditions"] if c["type"] == "Available")
        assert available["status"] == "True", available


def test_expand_spec_through_the_aggregator(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    instancetype, vm = small_vm(namespace)
    control_plane.apply(instancetype, vm)
    stored: dict[str, Any] = control_plane.get_json("virtualmachine", "vm1", "-n", namespace)
    raw = control_plane.kubectl(
        "get", "--raw", f"/apis/{GROUP}/v1/namespaces/{namespace}/virtualmachines/vm1/expand-spec"
    ).stdout
    assert json.loads(raw) == expand_vm(stored, [instancetype])
