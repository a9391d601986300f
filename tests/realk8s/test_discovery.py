"""Discovery and OpenAPI as kube-apiserver's aggregator fetches and merges them, and as kubectl reads them."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer

GROUP = "subresources.kubevirt.io"
VERSIONS = ["v1", "v1alpha3"]
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList"
# kube-apiserver 1.28 serves v2beta1; v2 from 1.30. A client asks for both, then plain JSON.
ACCEPT_AGGREGATED = ",".join([AGGREGATED.format("v2"), AGGREGATED.format("v2beta1"), "application/json"])


def direct_json(
    deployed: DeployedServer, cluster: ControlPlane, path: str, accept: str = "application/json"
) -> Any:
    """A document as our server serves it, asked as the cluster admin (a cluster-CA certificate)."""
    admin = cluster.pki.admin
    code, body = deployed.direct(path, headers={"Accept": accept}, cert=(admin.cert_file, admin.key_file))
    assert code == 200, (path, code, body[:300])
    return json.loads(body)


def test_kubectl_api_resources_lists_our_resource(
    deployed: DeployedServer, control_plane: ControlPlane
) -> None:
    result = control_plane.kubectl("api-resources", f"--api-group={GROUP}", "-o", "wide")
    assert result.stderr == ""
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows == [
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"],
        ["expand-vm-spec", f"{GROUP}/v1", "true", "VirtualMachine", "update"],
    ]
    # Discovery of the whole cluster has no complaint about our group (a broken document of ours
    # would show here as "unable to retrieve the complete list of server APIs").
    assert control_plane.kubectl("api-resources").stderr == ""


def test_discovery_through_the_aggregator(deployed: DeployedServer, control_plane: ControlPlane) -> None:
    groups = json.loads(control_plane.kubectl("get", "--raw", "/apis").stdout)["groups"]
    ours = [g for g in groups if g["name"] == GROUP]
    assert ours == [
        {
            "name": GROUP,
            "versions": [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in VERSIONS],
            "preferredVersion": {"groupVersion": f"{GROUP}/v1", "version": "v1"},
        }
    ]
    for version in VERSIONS:
        path = f"/apis/{GROUP}/{version}"
        assert json.loads(control_plane.kubectl("get", "--raw", path).stdout) == direct_json(
            deployed, control_plane, path
        )


def test_aggregated_discovery_merges_ours(deployed: DeployedServer, control_plane: ControlPlane) -> None:
    answer = control_plane.request("/apis", headers={"Accept": ACCEPT_AGGREGATED})
    assert answer.status == 200
    content_type = answer.header("Content-Type") or ""
    assert content_type in (AGGREGATED.format("v2"), AGGREGATED.format("v2beta1")), content_type
    merged = [g for g in answer.json()["items"] if g["metadata"]["name"] == GROUP]
    # What kube-apiserver serves for our group is exactly what we serve it (same discovery version).
    ours = direct_json(deployed, control_plane, "/apis", accept=content_type)["items"]
    assert merged == [g for g in ours if g["metadata"]["name"] == GROUP]
    # The collection's group, registered by its own APIService, is merged the same way.
    collection = [g for g in answer.json()["items"] if g["metadata"]["name"] == "expand.kubevirt-expand.io"]
    assert collection == [g for g in ours if g["metadata"]["name"] == "expand.kubevirt-expand.io"]
    versions = merged[0]["versions"]
    assert [v["version"] for v in versions] == VERSIONS
    assert all(v.get("freshness") == "Current" for v in versions)


def test_openapi_v3_through_the_aggregator(deployed: DeployedServer, control_plane: ControlPlane) -> None:
    # The aggregator adds a group-version to /openapi/v3 a moment after the APIService is Available.
    poll("/openapi/v3 lists ours", lambda: openapi_v3_lists(control_plane), bool)
    root = json.loads(control_plane.kubectl("get", "--raw", "/openapi/v3").stdout)["paths"]
    for version in VERSIONS:
        key = f"apis/{GROUP}/{version}"
        assert key in root, sorted(root)
        document = json.loads(control_plane.kubectl("get", "--raw", root[key]["serverRelativeURL"]).stdout)
        assert document == direct_json(deployed, control_plane, f"/openapi/v3/{key}")
        expand = document["paths"][
            f"/apis/{GROUP}/{version}/namespaces/{{namespace}}/virtualmachines/{{name}}/expand-spec"
        ]
        schema = expand["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        name = schema["$ref"].rsplit("/", 1)[-1]
        assert "VirtualMachine" in name
        assert "spec" in document["components"]["schemas"][name]["properties"]


def test_openapi_v2_merged_by_the_aggregator(deployed: DeployedServer, control_plane: ControlPlane) -> None:
    merged = json.loads(control_plane.kubectl("get", "--raw", "/openapi/v2").stdout)
    ours = direct_json(deployed, control_plane, "/openapi/v2")
    assert sorted(
        p for p in merged["paths"] if f"/apis/{GROUP}/" in p or "/apis/expand.kubevirt-expand.io/" in p
    ) == sorted(ours["paths"])
    for path, item in ours["paths"].items():
        assert merged["paths"][path] == item, path
    for name, schema in ours["definitions"].items():
        assert merged["definitions"].get(name) == schema, name


def test_registered_from_scratch_without_complaint(
    deployed: DeployedServer, control_plane: ControlPlane
) -> None:
    """The APIServices deleted and registered again, as a first deployment does it: Available, then
    discovery and both OpenAPI documents merged, each within moments, and kube-apiserver's log has no
    warning or error about our group or service meanwhile, but for the aggregator's own "not yet
    available" placeholder while its first download is pending. (The aggregator downloads everything at
    registration; later it only re-polls every minute.)"""
    names = [svc["metadata"]["name"] for svc in deployed.apiservices()]
    log_start = control_plane.apiserver_log.stat().st_size
    control_plane.kubectl("delete", "apiservice", *names)
    try:
        poll("the group gone from discovery", lambda: group_listed(control_plane), lambda listed: not listed)
    finally:
        started = time.monotonic()
        deployed.register()  # also when the above failed: the next tests need the APIServices
    timings = {"Available": time.monotonic() - started}
    for what, probe in (
        ("discovery", lambda: group_listed(control_plane)),
        ("OpenAPI v3", lambda: openapi_v3_lists(control_plane)),
        ("OpenAPI v2", lambda: openapi_v2_lists(control_plane)),
    ):
        poll(what, probe, bool, timeout=30)
        timings[what] = time.monotonic() - started
    merged_at = control_plane.apiserver_log.stat().st_size
    print("after registering: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    with control_plane.apiserver_log.open("rb") as fh:
        fh.seek(log_start)
        before_merged = fh.read(merged_at - log_start).decode(errors="replace").splitlines()
        after_merged = fh.read().decode(errors="replace").splitlines()
    complaints = [line for line in before_merged if NOT_YET_DOWNLOADED not in line] + after_merged
    assert [
        line for line in complaints if line[:1] in "WE" and (GROUP in line or "kubevirt-expand" in line)
    ] == []


# kube-aggregator logs this warning from any read of /openapi/v2 (ours, polling above, or another
# client's) between an APIService's registration and the first download of its spec; it says nothing
# about our server. Once /openapi/v2 lists our group it must not appear again.
NOT_YET_DOWNLOADED = "is not yet available"


def group_listed(cluster: ControlPlane) -> bool:
    answer = cluster.request("/apis", headers={"Accept": ACCEPT_AGGREGATED})
    return any(g["metadata"]["name"] == GROUP for g in answer.json()["items"])


def openapi_v3_lists(cluster: ControlPlane) -> bool:
    root = cluster.request("/openapi/v3").json()["paths"]
    return all(f"apis/{GROUP}/{v}" in root for v in VERSIONS)


def openapi_v2_lists(cluster: ControlPlane) -> bool:
    paths = cluster.request("/openapi/v2", headers={"Accept": "application/json"}).json()["paths"]
    return all(any(p.startswith(f"/apis/{GROUP}/{v}/") for p in paths) for v in VERSIONS)
