"""API discovery: the legacy documents and aggregated discovery (``apidiscovery.k8s.io`` v2, v2beta1).

Unlike virt-api's documents, ours advertise the verbs and response kinds (so ``kubectl`` and the
aggregator know what the subresources do) and spell the group name right. Aggregated discovery is
chosen by ``Accept`` as kube-apiserver does; every document carries an ETag and honours
``If-None-Match``, which the aggregator sends on every minute's refresh.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from apiserver.http.errors import not_found
from apiserver.http.media import JSON, YAML, encode, negotiate, parse_accept, respond_cacheable
from apiserver.http.settings import Settings

VM_GVK = {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachine"}
EXPAND_VM_SPEC = "expand-vm-spec"
EXPAND_SPEC = "expand-spec"
DISCOVERY_GROUP = "apidiscovery.k8s.io"
DISCOVERY_VERSIONS = ("v2", "v2beta1")
DISCOVERY_KIND = "APIGroupDiscoveryList"


def api_resource_list(settings: Settings, version: str) -> dict[str, Any]:
    common = {"singularName": "", "namespaced": True, **VM_GVK}
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{settings.api_group}/{version}",
        "resources": [
            {"name": EXPAND_VM_SPEC, **common, "verbs": ["update"]},
            {"name": f"virtualmachines/{EXPAND_SPEC}", **common, "verbs": ["get"]},
        ],
    }


def api_group(settings: Settings) -> dict[str, Any]:
    versions = [{"groupVersion": f"{settings.api_group}/{v}", "version": v} for v in settings.api_versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": settings.api_group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def api_group_list(settings: Settings) -> dict[str, Any]:
    group = api_group(settings)
    del group["kind"], group["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]}


def aggregated(settings: Settings, discovery_version: str) -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` of our group: subresources nest under their parent resource."""
    versions = []
    for version in settings.api_versions:
        resources = [
            {
                "resource": EXPAND_VM_SPEC,
                "responseKind": VM_GVK,
                "scope": "Namespaced",
                "singularResource": EXPAND_VM_SPEC,
                "verbs": ["update"],
            },
            {
                # We serve only a subresource of virtualmachines; the parent has no verbs here.
                "resource": "virtualmachines",
                "responseKind": VM_GVK,
                "scope": "Namespaced",
                "singularResource": "virtualmachine",
                "verbs": [],
                "subresources": [{"subresource": EXPAND_SPEC, "responseKind": VM_GVK, "verbs": ["get"]}],
            },
        ]
        versions.append({"version": version, "resources": resources, "freshness": "Current"})
    return {
        "kind": DISCOVERY_KIND,
        "apiVersion": f"{DISCOVERY_GROUP}/{discovery_version}",
        "metadata": {},
        "items": [
            {"metadata": {"name": settings.api_group, "creationTimestamp": None}, "versions": versions}
        ],
    }


def _aggregated_version(request: web.Request) -> str | None:
    """The aggregated discovery version the client prefers, or None when a plain document wins."""
    for media_range in parse_accept(request.headers.get("Accept")):
        params = media_range.params
        if media_range.converted:
            if (
                media_range.matches(JSON)
                and params.get("g") == DISCOVERY_GROUP
                and params.get("as") == DISCOVERY_KIND
                and params.get("v") in DISCOVERY_VERSIONS
            ):
                return params["v"]
            continue
        if media_range.matches(JSON) or media_range.matches(YAML):
            return None
    return None


def add_routes(app: web.Application, settings: Settings) -> None:
    plain: dict[str, Any] = {
        "/apis": api_group_list(settings),
        f"/apis/{settings.api_group}": api_group(settings),
    }
    for version in settings.api_versions:
        plain[f"/apis/{settings.api_group}/{version}"] = api_resource_list(settings, version)
    aggregated_bodies = {v: orjson.dumps(aggregated(settings, v)) for v in DISCOVERY_VERSIONS}

    async def apis(request: web.Request) -> web.Response:
        version = _aggregated_version(request)
        if version is not None:
            content_type = f"{JSON};g={DISCOVERY_GROUP};v={version};as={DISCOVERY_KIND}"
            return respond_cacheable(request, aggregated_bodies[version], content_type)
        return document(request)

    def document(request: web.Request) -> web.Response:
        doc = plain.get(request.path.rstrip("/") or "/")
        if doc is None:
            raise not_found()
        media_type = negotiate(request)
        return respond_cacheable(request, encode(doc, media_type), media_type)

    async def handler(request: web.Request) -> web.Response:
        return document(request)

    app.router.add_get("/apis", apis)
    app.router.add_get("/apis/", apis)
    for path in plain:
        if path != "/apis":
            app.router.add_get(path, handler)
