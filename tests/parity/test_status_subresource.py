"""A VM's status on the fake API server and on a real kube-apiserver with KubeVirt's VM CRD (the status
subresource, as virt-operator declares it): a write of the VM keeps the status it had, ``/status`` writes
only the status, and the generation moves only with the rest. This is how virt-controller's captured
revisions (``status.instancetypeRef.controllerRevisionRef``) reach a stored VM, so the tests that store
VMs as KubeVirt does rely on the fake doing the same."""

from __future__ import annotations

import copy
from typing import Any

import aiohttp

from tests.support.clusters import Cluster, FakeCluster, RealCluster
from tests.support.fakekube.testing import obj

REF = {
    "name": "it",
    "kind": "VirtualMachineInstancetype",
    "controllerRevisionRef": {"name": "vm-it-v1beta1-u-1"},
}


def vm(ns: str, cpus: int = 1, **fields: Any) -> dict[str, Any]:
    spec = {"runStrategy": "Halted", "template": {"spec": {"domain": {"cpu": {"cores": cpus}}}}}
    return obj("VirtualMachine", "vm", ns, api="kubevirt.io/v1", spec=spec, **fields)


def seen(got: dict[str, Any]) -> tuple[Any, ...]:
    """What the test compares of a stored VM: its generation, spec, status and labels."""
    meta = got["metadata"]
    return meta["generation"], got["spec"], got.get("status"), meta.get("labels")


async def test_a_vm_write_keeps_its_status_and_status_writes_keep_the_rest(cluster: Cluster) -> None:
    ns = cluster.namespace
    created = await cluster.create(vm(ns, status={"instancetypeRef": REF}))
    assert seen(created) == (1, vm(ns)["spec"], None, None)  # create cannot set status

    # virt-controller's part: the status, with the spec and labels of the body ignored.
    body = vm(ns, cpus=9, metadata={"labels": {"x": "y"}}, status={"instancetypeRef": REF})
    written = await cluster.replace_status(body)
    assert seen(written) == (1, vm(ns)["spec"], {"instancetypeRef": REF}, None)

    # A user's edit without the status (kubectl apply of the manifest): the status stays.
    edited = await cluster.replace(vm(ns, cpus=2))
    assert seen(edited) == (2, vm(ns, cpus=2)["spec"], {"instancetypeRef": REF}, None)

    # ...and with another status in the body: still the stored one; nothing else changed, no new generation.
    other = copy.deepcopy(REF)
    other["controllerRevisionRef"]["name"] = "forged"
    again = await cluster.replace(vm(ns, cpus=2, status={"instancetypeRef": other}))
    assert seen(again) == (2, vm(ns, cpus=2)["spec"], {"instancetypeRef": REF}, None)

    # A /status write without status removes it.
    cleared = await cluster.replace_status(vm(ns, cpus=2))
    assert seen(cleared) == (2, vm(ns, cpus=2)["spec"], None, None)


async def test_a_kind_without_the_subresource_stores_status_and_counts_it_as_a_change(
    cluster: Cluster,
) -> None:
    """The KubeVirt CR in ../shared's CRDs: no status subresource, so status is written with the object
    and, being more than metadata, moves its generation."""
    ns = cluster.namespace
    kv = obj("KubeVirt", "kubevirt", ns, api="kubevirt.io/v1", spec={}, status={"phase": "Deploying"})
    created = await cluster.create(kv)
    try:
        assert (created["metadata"]["generation"], created["status"]) == (1, {"phase": "Deploying"})
        kv["status"] = {"phase": "Deployed"}
        updated = await cluster.replace(kv)
        assert (updated["metadata"]["generation"], updated["status"]) == (2, {"phase": "Deployed"})
    finally:
        # The session's control plane is shared: a Deployed CR left behind would be every later test's
        # cluster configuration (the server reads the KubeVirt CR it finds), without a default architecture.
        await cluster.delete("kubevirt.io/v1", "KubeVirt", "kubevirt", ns)


async def test_discovery_lists_the_status_subresource(cluster: Cluster) -> None:
    """kubevirt.io/v1's resource list names ``virtualmachines/status`` beside ``virtualmachines``."""
    if isinstance(cluster, RealCluster):
        doc = await cluster.request("GET", "/apis/kubevirt.io/v1")
    else:
        assert isinstance(cluster, FakeCluster)
        async with (
            aiohttp.ClientSession() as http,
            http.get(cluster.fake.url + "/apis/kubevirt.io/v1") as resp,
        ):
            doc = await resp.json()
    found = {
        r["name"]: (r["singularName"], r["namespaced"], r["kind"], sorted(r["verbs"]))
        for r in doc["resources"]
        if r["name"].startswith("virtualmachines")
    }
    assert found["virtualmachines/status"] == ("", True, "VirtualMachine", ["get", "patch", "update"])
    assert found["virtualmachines"][:3] == ("virtualmachine", True, "VirtualMachine")
