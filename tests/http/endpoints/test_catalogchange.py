"""POST catalogchangepreviews: a catalog change previewed across the fleet on the server, as the caller
may read it. The tenancy tests authenticate through the fake API server's SubjectAccessReviews (a tenant
of ns-a sees ns-a's VMs, counts ns-b's as hidden, and gets kube-apiserver's 403 for what it may not
read); the cluster source's side (VM cache, quotas) runs over the fake too. The same through the real
aggregator with kubectl: tests/realk8s/test_catalog_preview.py."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.sources.cluster import ClusterSource
from apiserver.sources.folder import FolderSource
from tests.support.auth_fixtures import AuthEnv, auth_env
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import kubeconfig, synced
from tests.support.http_helpers import RunningServer, running_server

PATH = "/apis/expand.kubevirt-expand.io/v1/catalogchangepreviews"
IT_API = "instancetype.kubevirt.io/v1beta1"
A, B = "ns-a", "ns-b"


def instancetype(name: str, memory: str = "1Gi", ns: str | None = None, cpus: int = 1) -> dict[str, Any]:
    kind = "VirtualMachineInstancetype" if ns else "VirtualMachineClusterInstancetype"
    meta: dict[str, Any] = {"name": name, **({"namespace": ns} if ns else {})}
    return {
        "apiVersion": IT_API,
        "kind": kind,
        "metadata": meta,
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
    }


def vm(
    ns: str, name: str, it: str, *, kind: str = "VirtualMachineClusterInstancetype", running: bool = False
) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "running": running,
            "instancetype": {"kind": kind, "name": it},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }


QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "compute", "namespace": A},
    "spec": {"hard": {"requests.memory": "3Gi"}},
    "status": {"hard": {"requests.memory": "3Gi"}, "used": {"requests.memory": "1500Mi"}},
}


def fleet() -> list[dict[str, Any]]:
    return [
        instancetype("u1.small"),
        instancetype("u1.big", "8Gi", cpus=4),
        instancetype("it", "1Gi", ns=A),
        instancetype("it", "1Gi", ns=B),
        vm(A, "vm-1", "u1.small", running=True),
        vm(A, "vm-2", "it", kind="VirtualMachineInstancetype"),
        vm(A, "vm-3", "u1.big"),
        vm(B, "vm-1", "u1.small"),
        vm(B, "secret-vm", "u1.small", running=True),
        QUOTA,
    ]


def preview(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "expand.kubevirt-expand.io/v1", "kind": "CatalogChangePreview", "spec": spec}


SMALL_2GI = instancetype("u1.small", "2Gi")


def _folder(tmp_path: Path) -> FolderSource:
    (tmp_path / "cluster").mkdir(exist_ok=True)
    (tmp_path / "cluster" / "fleet.yaml").write_text(yaml.safe_dump_all(fleet(), sort_keys=False))
    return FolderSource(tmp_path / "cluster", watch=False)


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(_folder(tmp_path), tmp_path) as running:
        yield running


async def post(srv: RunningServer, body: Any, query: str = "", **kw: Any) -> Any:
    return await srv.request("POST", PATH + query, json_body=body, **kw)


async def test_an_instancetype_edit_names_every_vm_that_uses_it(srv: RunningServer) -> None:
    reply = await post(srv, preview(objects=[SMALL_2GI]))
    assert reply.status == 201, reply.body
    doc = reply.json()
    assert (
        doc["kind"] == "CatalogChangePreview" and doc["spec"]["objects"][0]["metadata"]["name"] == "u1.small"
    )
    status = doc["status"]
    assert status["changedObjects"] == [
        {"kind": "VirtualMachineClusterInstancetype", "name": "u1.small", "change": "edited"}
    ]
    assert [(i["namespace"], i["name"], i["verdict"]) for i in status["items"]] == [
        (A, "vm-1", "live"),
        (B, "secret-vm", "live"),
        (B, "vm-1", "stopped"),
    ]
    assert status["counts"] == {"live": 2, "stopped": 1, "unaffected": 2}
    assert status["vms"] == 5 and status["hidden"] == 0 and "continue" not in status
    first = status["items"][0]
    assert {"path": "/spec/template/spec/domain/memory/guest", "old": "1Gi", "new": "2Gi"} in first["changes"]
    assert first["requests"]["before"]["memory"] != first["requests"]["after"]["memory"]
    ns_a = next(n for n in status["namespaces"] if n["namespace"] == A)
    assert ns_a["affected"] == 1 and ns_a["requestsChange"] == {"memory": "+1Gi"}
    # open scope (no authentication): the quota is read, and one more GiB no longer fits
    assert ns_a["quotas"][0]["name"] == "compute" and ns_a["quotas"][0]["fits"] is True


async def test_a_namespaced_edit_and_a_removal(srv: RunningServer) -> None:
    removed = [{"kind": "VirtualMachineClusterInstancetype", "name": "u1.big"}]
    reply = await post(srv, preview(objects=[instancetype("it", "4Gi", ns=A)], removed=removed))
    assert reply.status == 201, reply.body
    status = reply.json()["status"]
    assert [(c["name"], c.get("namespace"), c["change"]) for c in status["changedObjects"]] == [
        ("u1.big", None, "removed"),
        ("it", A, "edited"),
    ]
    verdicts = {(i["namespace"], i["name"]): i["verdict"] for i in status["items"]}
    assert verdicts == {(A, "vm-2"): "stopped", (A, "vm-3"): "error"}
    gone = status["items"][1]["refusal"]["details"]["causes"][0]
    assert gone["message"] == 'virtualmachineclusterinstancetypes.instancetype.kubevirt.io "u1.big" not found'


async def test_nothing_changes_when_the_proposed_object_is_the_live_one(srv: RunningServer) -> None:
    same = copy.deepcopy(instancetype("u1.small"))
    same["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    reply = await post(srv, preview(objects=[same]))
    status = reply.json()["status"]
    assert reply.status == 201 and status["changedObjects"] == [] and status["items"] == []


async def test_pages(srv: RunningServer) -> None:
    spec: dict[str, Any] = {"objects": [SMALL_2GI], "limit": 2}
    first = (await post(srv, preview(**spec))).json()["status"]
    assert [i["name"] for i in first["items"]] == ["vm-1", "secret-vm"] and first["remainingItemCount"] == 1
    second = (await post(srv, preview(**spec, **{"continue": first["continue"]}))).json()["status"]
    assert [(i["namespace"], i["name"]) for i in second["items"]] == [(B, "vm-1")]
    assert "continue" not in second and second["counts"] == first["counts"]
    other = await post(
        srv, preview(objects=[instancetype("u1.small", "3Gi")], **{"continue": first["continue"]})
    )
    assert other.status == 422 and other.json()["details"]["causes"][0]["field"] == "spec.continue"
    forged = await post(srv, preview(objects=[SMALL_2GI], **{"continue": "bm90LWEtdG9rZW4"}))
    assert forged.status == 422 and "not a continue token" in forged.json()["message"]


BAD = [
    ({"objects": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}]}, "spec.objects[0].kind"),
    (
        {"objects": [{**instancetype("x"), "apiVersion": "kubevirt.io/v1"}]},
        "spec.objects[0].apiVersion",
    ),
    (
        {"objects": [{**instancetype("x", ns=A), "metadata": {"name": "x"}}]},
        "spec.objects[0].metadata.namespace",
    ),
    ({"objects": [{**instancetype("x"), "metadata": {"name": "A_B"}}]}, "spec.objects[0].metadata.name"),
    (
        {"objects": [{**instancetype("x"), "spec": {"cpu": {"guest": "two"}, "memory": {"guest": "1Gi"}}}]},
        "spec.objects[0].spec.cpu.guest",
    ),
    ({"objects": [SMALL_2GI, SMALL_2GI]}, "spec.objects[1]"),
    ({"objects": "u1.small"}, "spec.objects"),
    ({"removed": [{"kind": "Secret", "name": "s"}]}, "spec.removed[0].kind"),
    ({"removed": [{"kind": "VirtualMachineClusterInstancetype", "name": "nope"}]}, "spec.removed[0]"),
    ({}, "spec.objects"),
    ({"objects": [SMALL_2GI], "namespaces": ["Not_A_Namespace"]}, "spec.namespaces[0]"),
    ({"objects": [SMALL_2GI], "limit": -1}, "spec.limit"),
    ({"objects": [SMALL_2GI], "extra": 1}, "spec.extra"),
]


@pytest.mark.parametrize("spec, field", BAD, ids=[f for _, f in BAD])
async def test_bad_requests_are_422_naming_the_field(
    srv: RunningServer, spec: dict[str, Any], field: str
) -> None:
    reply = await post(srv, preview(**spec), "?fieldValidation=Strict")  # as kubectl sends it
    assert reply.status == 422, reply.body
    doc = reply.json()
    assert doc["kind"] == "Status" and doc["reason"] == "Invalid"
    assert field in [c["field"] for c in doc["details"]["causes"]], doc


async def test_unknown_fields_follow_field_validation(srv: RunningServer) -> None:
    body = {**preview(objects=[SMALL_2GI]), "extra": True}
    assert (await post(srv, body, "?fieldValidation=Strict")).status == 422
    # none named: Warn, as kube-apiserver defaults a write that names none
    for query in ("", "?fieldValidation=Warn"):
        warned = await post(srv, body, query)
        assert warned.status == 201 and 'unknown field \\"extra\\"' in warned.headers.get("warning", "")
    assert (await post(srv, body, "?fieldValidation=Ignore")).status == 201
    assert (await post(srv, body, "?fieldValidation=strict")).status == 422


async def test_another_kind_is_400_and_a_large_body_413(srv: RunningServer) -> None:
    reply = await post(srv, {"apiVersion": "v1", "kind": "Pod"})
    assert reply.status == 400 and reply.json()["kind"] == "Status"
    huge = preview(objects=[{**SMALL_2GI, "metadata": {"name": "x", "labels": {"a": "b" * (4 << 20)}}}])
    reply = await srv.request(
        "POST", PATH, data=json.dumps(huge), headers={"Content-Type": "application/json"}
    )
    assert reply.status == 413 and reply.json()["reason"] == "RequestEntityTooLarge"


async def test_the_resource_is_discoverable(srv: RunningServer) -> None:
    doc = (await srv.get("/apis/expand.kubevirt-expand.io/v1")).json()
    found = next(r for r in doc["resources"] if r["name"] == "catalogchangepreviews")
    assert found == {
        "name": "catalogchangepreviews",
        "singularName": "catalogchangepreview",
        "namespaced": False,
        "kind": "CatalogChangePreview",
        "verbs": ["create"],
    }
    v2 = (await srv.get("/openapi/v2")).json()
    op = v2["paths"][PATH]["post"]
    assert op["operationId"] == "createCatalogChangePreview"
    assert op["x-kubernetes-group-version-kind"]["kind"] == "CatalogChangePreview"
    assert "io.kubevirt-expand.expand.v1.CatalogChangePreview" in v2["definitions"]


# -- as a tenant: only what the caller may read -----------------------------------------------------------

TENANT = "alice"


async def as_user(env: AuthEnv, body: Any, user: str = TENANT) -> tuple[int, Any]:
    headers = [("X-Remote-User", user), ("Content-Type", "application/json")]
    code, _, doc = await env.call(PATH, cert=env.pki.aggregator, headers=headers, method="POST", body=body)
    return code, doc


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[AuthEnv]:
    async with auth_env(tmp_path, source=_folder(tmp_path)) as running:
        running.reviews.allow(user=TENANT, resource="catalogchangepreviews", verb="create")
        running.reviews.allow(user=TENANT, resource="virtualmachines", verb="list", namespace=A)
        yield running


def _asked(env: AuthEnv) -> list[tuple[str, str, str | None]]:
    out = []
    for spec in env.reviews.access_reviews:
        attrs = spec.get("spec", spec).get("resourceAttributes") or {}
        out.append((attrs.get("verb", ""), attrs.get("resource", ""), attrs.get("namespace")))
    return out


async def test_a_tenant_sees_its_namespace_and_a_count_of_the_rest(env: AuthEnv) -> None:
    code, doc = await as_user(env, preview(objects=[SMALL_2GI]))
    assert code == 201, doc
    status = doc["status"]
    assert [(i["namespace"], i["name"]) for i in status["items"]] == [(A, "vm-1")]
    # ns-b's two VMs name u1.small: counted in one total, never named
    assert status["hidden"] == 2 and status["vms"] == 3
    assert [n["namespace"] for n in status["namespaces"]] == [A]
    text = json.dumps(doc)
    assert B not in text and "secret-vm" not in text
    # no right to list ResourceQuotas in ns-a: no quotas (and none read), the rest of the answer stands
    assert "quotas" not in status["namespaces"][0]
    assert ("list", "resourcequotas", A) in _asked(env)


async def test_quotas_where_the_tenant_may_list_them(tmp_path: Path) -> None:
    async with auth_env(tmp_path, source=_folder(tmp_path)) as env:
        env.reviews.allow(user=TENANT, resource="catalogchangepreviews", verb="create")
        env.reviews.allow(user=TENANT, resource="virtualmachines", verb="list", namespace=A)
        env.reviews.allow(user=TENANT, resource="resourcequotas", verb="list", namespace=A)
        code, doc = await as_user(env, preview(objects=[instancetype("u1.small", "3Gi")]))
        assert code == 201, doc
        quota = doc["status"]["namespaces"][0]["quotas"][0]
        assert quota["used"] == {"requests.memory": "1500Mi"} and quota["fits"] is False
        assert quota["exceeds"] == ["requests.memory"]


@pytest.mark.parametrize(
    "spec",
    [
        {"objects": [SMALL_2GI], "namespaces": [B]},
        {"objects": [SMALL_2GI], "namespaces": ["ns-none"]},
        {"objects": [instancetype("it", "4Gi", ns=B)]},
        {"objects": [instancetype("it", "4Gi", ns="ns-none")]},
        {"removed": [{"kind": "VirtualMachineInstancetype", "name": "it", "namespace": B}]},
        {"removed": [{"kind": "VirtualMachineInstancetype", "name": "nope", "namespace": B}]},
    ],
    ids=["namespaces", "namespaces-missing", "object", "object-missing-ns", "removed", "removed-missing"],
)
async def test_what_the_tenant_may_not_read_is_kube_apiservers_403_whether_it_exists_or_not(
    env: AuthEnv, spec: dict[str, Any]
) -> None:
    code, doc = await as_user(env, preview(**spec))
    assert code == 403, doc
    namespace = (spec.get("namespaces") or [None])[0] or next(
        o.get("metadata", o).get("namespace") for o in (*spec.get("objects", ()), *spec.get("removed", ()))
    )
    assert doc["reason"] == "Forbidden"
    assert doc["message"] == (
        f'virtualmachines.kubevirt.io is forbidden: User "{TENANT}" cannot list resource "virtualmachines" '
        f'in API group "kubevirt.io" in the namespace "{namespace}"'
    )
    assert "secret-vm" not in json.dumps(doc)


async def test_a_caller_without_create_is_refused_before_anything_is_read(env: AuthEnv) -> None:
    code, doc = await as_user(env, preview(objects=[SMALL_2GI]), user="mallory")
    assert code == 403 and "catalogchangepreviews" in doc["message"]
    assert [a for a in _asked(env) if a[1] == "virtualmachines"] == []


async def test_a_caller_who_may_list_every_namespace_sees_everything(env: AuthEnv) -> None:
    env.reviews.allow(user="root", resource="catalogchangepreviews", verb="create")
    env.reviews.allow(user="root", resource="virtualmachines", verb="list")
    code, doc = await as_user(env, preview(objects=[SMALL_2GI]), user="root")
    assert code == 201 and doc["status"]["hidden"] == 0 and len(doc["status"]["items"]) == 3


# -- the cluster source (the VM cache) over the fake API server -----------------------------------------------


async def test_on_the_cluster_source(tmp_path: Path) -> None:
    async with FakeKube(bookmark_interval=0.1) as fake:
        for obj in fleet():
            created = fake.create(obj)
            if obj is QUOTA:  # its status as the quota controller writes it
                fake.update_status({**created, "status": QUOTA["status"]})
        source = ClusterSource(
            kubeconfig=kubeconfig(fake, tmp_path / "kc"), vm_cache=True, backoff=(0.02, 0.2)
        )
        async with running_server(source, tmp_path) as srv:
            await synced(source, fake)
            reply = await post(srv, preview(objects=[SMALL_2GI]))
            assert reply.status == 201, reply.body
            status = reply.json()["status"]
            assert [(i["namespace"], i["name"]) for i in status["items"]] == [
                (A, "vm-1"),
                (B, "secret-vm"),
                (B, "vm-1"),
            ]
            assert status["namespaces"][0]["quotas"][0]["used"] == {"requests.memory": "1500Mi"}
            v3 = (await srv.get("/openapi/v3/apis/expand.kubevirt-expand.io/v1")).json()
            assert v3["paths"][PATH]["post"]["operationId"] == "createCatalogChangePreview"


async def test_not_served_without_the_vm_cache(tmp_path: Path) -> None:
    """As the collection: the fleet is read from the VM cache only, so without it the resource is neither
    served nor listed."""
    async with FakeKube() as fake:
        source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), backoff=(0.02, 0.2))
        async with running_server(source, tmp_path) as srv:
            await synced(source, fake)
            reply = await post(srv, preview(objects=[SMALL_2GI]))
            assert reply.status == 404
            doc = (await srv.get("/apis/expand.kubevirt-expand.io/v1")).json()
            assert "catalogchangepreviews" not in [r["name"] for r in doc["resources"]]


INFERRING = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm-infer", "namespace": A},
    "spec": {
        "running": False,
        "instancetype": {"inferFromVolume": "root"},
        "template": {
            "spec": {
                "domain": {"devices": {}},
                "volumes": [{"name": "root", "persistentVolumeClaim": {"claimName": "disk"}}],
            }
        },
    },
}
DISK = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {
        "name": "disk",
        "namespace": A,
        "labels": {"instancetype.kubevirt.io/default-instancetype": "u1.small"},
    },
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


async def test_a_vm_inferring_its_instancetype_reads_its_volume_as_the_caller(tmp_path: Path) -> None:
    """The volume is read through the caller's review, as for any rendering: with the right, the VM is
    previewed with what its volume names; without it, as with a volume that does not exist."""
    source = _folder(tmp_path)
    (tmp_path / "cluster" / "infer.yaml").write_text(yaml.safe_dump_all([INFERRING, DISK]))
    async with auth_env(tmp_path, source=source) as env:
        env.reviews.allow(user=TENANT, resource="catalogchangepreviews", verb="create")
        env.reviews.allow(user=TENANT, resource="virtualmachines", verb="list", namespace=A)
        code, doc = await as_user(env, preview(objects=[SMALL_2GI]))
        assert code == 201, doc
        item = next(i for i in doc["status"]["items"] if i["name"] == "vm-infer")
        assert item["verdict"] == "error" and "u1.small" not in json.dumps(item)
        assert ("get", "persistentvolumeclaims", A) in _asked(env)
        env.reviews.allow(user="bob", resource="catalogchangepreviews", verb="create")
        env.reviews.allow(user="bob", resource="virtualmachines", verb="list", namespace=A)
        env.reviews.allow(user="bob", resource="persistentvolumeclaims", verb="get", namespace=A)
        code, doc = await as_user(env, preview(objects=[SMALL_2GI]), user="bob")
        item = next(i for i in doc["status"]["items"] if i["name"] == "vm-infer")
        # rendered with what the volume names (the engine's verdict for a VM that captured nothing)
        assert item["verdict"] not in ("error", "refused") and "refusal" not in item, item
