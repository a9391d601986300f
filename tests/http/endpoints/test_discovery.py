"""Discovery (legacy and aggregated), OpenAPI v2/v3 and the version endpoint, over HTTPS."""

from __future__ import annotations

from pathlib import Path

import pytest
from openapi_spec_validator import validate

from tests.support.http_helpers import GROUP, MemorySource, running_server

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
# What kubectl and the aggregator send.
KUBECTL_ACCEPT = f"{AGGREGATED_V2},{AGGREGATED_V2BETA1},application/json"


async def test_legacy_discovery_documents(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        apis = (await srv.get("/apis")).json()
        group = (await srv.get(f"/apis/{GROUP}")).json()
        v1 = (await srv.get(f"/apis/{GROUP}/v1")).json()
        v1alpha3 = (await srv.get(f"/apis/{GROUP}/v1alpha3")).json()
    assert apis["kind"] == "APIGroupList"
    # The collection's group-version is always there (its APIService stays Available); without the VM
    # cache it lists no resource (tests/http/endpoints/test_expandedvms.py has it with one).
    assert [g["name"] for g in apis["groups"]] == [GROUP, "expand.kubevirt-expand.io"]
    assert group["kind"] == "APIGroup"
    assert group["name"] == GROUP  # virt-api misspells it "subresource.kubevirt.io"
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha3"]
    assert group["preferredVersion"] == {"groupVersion": f"{GROUP}/v1", "version": "v1"}
    assert v1["kind"] == "APIResourceList"
    assert v1["groupVersion"] == f"{GROUP}/v1"
    assert v1alpha3["groupVersion"] == f"{GROUP}/v1alpha3"
    resources = {r["name"]: r for r in v1["resources"]}
    assert resources["expand-vm-spec"]["verbs"] == ["update"]
    assert resources["virtualmachines/expand-spec"]["verbs"] == ["get"]
    for r in resources.values():
        assert r["namespaced"] is True
        assert (r["group"], r["version"], r["kind"]) == ("kubevirt.io", "v1", "VirtualMachine")


@pytest.mark.parametrize(("accept", "version"), [(KUBECTL_ACCEPT, "v2"), (AGGREGATED_V2BETA1, "v2beta1")])
async def test_aggregated_discovery_by_content_negotiation(tmp_path: Path, accept: str, version: str) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.get("/apis", headers={"Accept": accept})
        again = await srv.get("/apis", headers={"Accept": accept, "If-None-Match": reply.headers["etag"]})
        plain = await srv.get("/apis", headers={"Accept": "application/json"})
    assert reply.status == 200
    assert reply.headers["content-type"] == (
        f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    )
    assert "Accept" in reply.headers["vary"]
    doc = reply.json()
    assert doc["kind"] == "APIGroupDiscoveryList"
    assert doc["apiVersion"] == f"apidiscovery.k8s.io/{version}"
    item, collection = doc["items"]
    assert collection["metadata"]["name"] == "expand.kubevirt-expand.io"
    # Without a VM cache there is no collection; the change preview is served all the same.
    (served,) = collection["versions"]
    assert [r["resource"] for r in served["resources"]] == ["virtualmachinechangepreviews"]
    assert served["resources"][0]["verbs"] == ["create"]
    assert item["metadata"]["name"] == GROUP
    assert [v["version"] for v in item["versions"]] == ["v1", "v1alpha3"]
    resources = {r["resource"]: r for r in item["versions"][0]["resources"]}
    assert resources["expand-vm-spec"]["verbs"] == ["update"]
    assert resources["expand-vm-spec"]["scope"] == "Namespaced"
    (sub,) = resources["virtualmachines"]["subresources"]
    assert sub["subresource"] == "expand-spec"
    assert sub["verbs"] == ["get"]
    assert sub["responseKind"] == {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachine"}
    assert again.status == 304
    assert plain.json()["kind"] == "APIGroupList"
    assert plain.headers["etag"] != reply.headers["etag"]


async def test_discovery_etags(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        for path in ("/apis", f"/apis/{GROUP}", f"/apis/{GROUP}/v1"):
            first = await srv.get(path)
            cached = await srv.get(path, headers={"If-None-Match": first.headers["etag"]})
            assert (first.status, cached.status) == (200, 304), path


async def test_discovery_in_yaml(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.get(f"/apis/{GROUP}/v1", headers={"Accept": "application/yaml"})
    assert reply.headers["content-type"] == "application/yaml"
    assert reply.body.startswith(b"kind: APIResourceList\n")


async def test_openapi_v2_declares_the_vm_schema(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        reply = await srv.get("/openapi/v2")
        cached = await srv.get("/openapi/v2", headers={"If-None-Match": reply.headers["etag"]})
    assert cached.status == 304
    doc = reply.json()
    validate(doc)
    get = doc["paths"][f"/apis/{GROUP}/v1/namespaces/{{namespace}}/virtualmachines/{{name}}/expand-spec"][
        "get"
    ]
    put = doc["paths"][f"/apis/{GROUP}/v1/namespaces/{{namespace}}/expand-vm-spec"]["put"]
    assert get["responses"]["200"]["schema"] == {"$ref": "#/definitions/v1.VirtualMachine"}
    body = next(p for p in put["parameters"] if p["in"] == "body")
    assert body["schema"] == {"$ref": "#/definitions/v1.VirtualMachine"}
    for op, query in (
        (get, {"presets", "validate", "pretty"}),
        (put, {"presets", "validate", "pretty", "fieldValidation"}),
    ):
        names = {p["name"] for p in op["parameters"] if p["in"] == "query"}
        assert names == query
        for code, response in op["responses"].items():
            if code >= "400":
                assert response["schema"] == {
                    "$ref": "#/definitions/k8s.io.apimachinery.pkg.apis.meta.v1.Status"
                }
    assert "422" in put["responses"] and "413" in put["responses"] and "404" in get["responses"]
    assert "v1.VirtualMachineSpec" in doc["definitions"]


async def test_openapi_v3_documents_validate(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        index = (await srv.get("/openapi/v3")).json()
        assert set(index["paths"]) == {f"apis/{GROUP}/v1", f"apis/{GROUP}/v1alpha3"}
        for path, entry in index["paths"].items():
            url = entry["serverRelativeURL"]
            assert url.startswith(f"/openapi/v3/{path}?hash=")
            reply = await srv.get(url)
            assert reply.status == 200
            assert "immutable" in reply.headers["cache-control"]
            doc = reply.json()
            validate(doc)
            version = path.rsplit("/", 1)[1]
            put = doc["paths"][f"/apis/{GROUP}/{version}/namespaces/{{namespace}}/expand-vm-spec"]["put"]
            assert set(put["requestBody"]["content"]) == {"application/json", "application/yaml"}
            vm_ref = {"$ref": "#/components/schemas/v1.VirtualMachine"}
            assert put["requestBody"]["content"]["application/json"]["schema"] == vm_ref
            assert put["responses"]["200"]["content"]["application/json"]["schema"] == vm_ref
            status_ref = {"$ref": "#/components/schemas/k8s.io.apimachinery.pkg.apis.meta.v1.Status"}
            assert put["responses"]["422"]["content"]["application/json"]["schema"] == status_ref
            params = {p["name"]: p for p in put["parameters"]}
            assert params["presets"]["schema"] == {"type": "boolean"}
            assert "VirtualMachineInstancePresets" in params["presets"]["description"]
            assert "admission webhook" in params["validate"]["description"]
        stale = await srv.request("GET", f"/openapi/v3/apis/{GROUP}/v1?hash=OLD")
        missing = await srv.get("/openapi/v3/apis/other/v1")
    assert stale.status == 200  # the client followed the redirect to the current hash
    assert missing.status == 404 and missing.json()["kind"] == "Status"


async def test_version_endpoint_in_virt_api_shape(tmp_path: Path) -> None:
    kv = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt"},
        "status": {"observedKubeVirtVersion": "v1.6.2"},
    }
    async with running_server(MemorySource(kubevirt_cr=kv), tmp_path) as srv:
        with_cr = (await srv.get(f"/apis/{GROUP}/v1/version")).json()
    async with running_server(MemorySource(), tmp_path) as srv:
        without = (await srv.get(f"/apis/{GROUP}/v1alpha3/version")).json()
    keys = {"gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"}
    assert set(with_cr) == keys == set(without)
    assert with_cr["gitVersion"] == "v1.6.2"
    assert without["gitVersion"].startswith("v")
