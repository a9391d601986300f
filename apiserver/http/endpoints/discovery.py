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
from apiserver.sources.rendered import items as evm

VM_GVK = {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachine"}
EXPAND_VM_SPEC = "expand-vm-spec"
EXPAND_SPEC = "expand-spec"
DISCOVERY_GROUP = "apidiscovery.k8s.io"
DISCOVERY_VERSIONS = ("v2", "v2beta1")
DISCOVERY_KIND = "APIGroupDiscoveryList"


COLLECTION_VERBS = ["get", "list", "watch"]
PREVIEW_KIND = "VirtualMachineChangePreview"
PREVIEW_PLURAL = "virtualmachinechangepreviews"
PREVIEW_SINGULAR = "virtualmachinechangepreview"
CATALOG_KIND = "CatalogChangePreview"
CATALOG_PLURAL = "catalogchangepreviews"
CATALOG_SINGULAR = "catalogchangepreview"


def _groups(settings: Settings, with_collection: bool) -> dict[str, tuple[str, ...]]:
    """Every group served, with its versions (preferred first): the configured one, and the
    collection's (the same group when the own-group overlay runs). The collection's group-version is
    served even when the collection is not (no VM cache; then it lists no resource), so that its
    APIService, which every overlay registers, stays Available."""
    del with_collection
    groups = {settings.api_group: settings.api_versions}
    versions = groups.get(evm.GROUP, ())
    if evm.VERSION not in versions:
        groups[evm.GROUP] = (*versions, evm.VERSION)
    return groups


def _collection_resource() -> dict[str, Any]:
    return {
        "name": evm.PLURAL,
        "singularName": evm.SINGULAR,
        "namespaced": True,
        "kind": evm.KIND,
        "verbs": COLLECTION_VERBS,
        "shortNames": list(evm.SHORT_NAMES),
    }


def _preview_resource() -> dict[str, Any]:
    """The change preview, a review-style resource: created, never stored (apiserver.http.endpoints.preview)."""
    return {
        "name": PREVIEW_PLURAL,
        "singularName": PREVIEW_SINGULAR,
        "namespaced": True,
        "kind": PREVIEW_KIND,
        "verbs": ["create"],
    }


def _catalog_resource() -> dict[str, Any]:
    """The catalog change preview, cluster-scoped and created only (apiserver.http.endpoints.catalogchange)."""
    return {
        "name": CATALOG_PLURAL,
        "singularName": CATALOG_SINGULAR,
        "namespaced": False,
        "kind": CATALOG_KIND,
        "verbs": ["create"],
    }


def api_resource_list(
    settings: Settings,
    version: str,
    group: str = "",
    with_collection: bool = False,
    with_catalog: bool = False,
) -> dict[str, Any]:
    group = group or settings.api_group
    common = {"singularName": "", "namespaced": True, **VM_GVK}
    resources: list[dict[str, Any]] = []
    if with_collection and group == evm.GROUP and version == evm.VERSION:
        resources.append(_collection_resource())
    if with_catalog and group == evm.GROUP and version == evm.VERSION:
        resources.append(_catalog_resource())
    if group == evm.GROUP and version == evm.VERSION:
        resources.append(_preview_resource())
    if group == settings.api_group and version in settings.api_versions:
        resources += [
            {"name": EXPAND_VM_SPEC, **common, "verbs": ["update"]},
            {"name": f"virtualmachines/{EXPAND_SPEC}", **common, "verbs": ["get"]},
        ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}",
        "resources": resources,
    }


def api_group(settings: Settings, group: str = "", with_collection: bool = False) -> dict[str, Any]:
    group = group or settings.api_group
    served = _groups(settings, with_collection)[group]
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in served]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def api_group_list(settings: Settings, with_collection: bool = False) -> dict[str, Any]:
    groups = []
    for group in _groups(settings, with_collection):
        doc = api_group(settings, group, with_collection)
        del doc["kind"], doc["apiVersion"]
        groups.append(doc)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def aggregated(
    settings: Settings, discovery_version: str, with_collection: bool = False, with_catalog: bool = False
) -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` of our groups: subresources nest under their parent resource."""
    items = []
    for group, served in _groups(settings, with_collection).items():
        versions = []
        for version in served:
            resources: list[dict[str, Any]] = []
            if with_collection and group == evm.GROUP and version == evm.VERSION:
                resources.append(
                    {
                        "resource": evm.PLURAL,
                        "responseKind": {"group": evm.GROUP, "version": evm.VERSION, "kind": evm.KIND},
                        "scope": "Namespaced",
                        "singularResource": evm.SINGULAR,
                        "verbs": COLLECTION_VERBS,
                        "shortNames": list(evm.SHORT_NAMES),
                    }
                )
            if with_catalog and group == evm.GROUP and version == evm.VERSION:
                resources.append(
                    {
                        "resource": CATALOG_PLURAL,
                        "responseKind": {"group": evm.GROUP, "version": evm.VERSION, "kind": CATALOG_KIND},
                        "scope": "Cluster",
                        "singularResource": CATALOG_SINGULAR,
                        "verbs": ["create"],
                    }
                )
            if group == evm.GROUP and version == evm.VERSION:
                resources.append(
                    {
                        "resource": PREVIEW_PLURAL,
                        "responseKind": {"group": evm.GROUP, "version": evm.VERSION, "kind": PREVIEW_KIND},
                        "scope": "Namespaced",
                        "singularResource": PREVIEW_SINGULAR,
                        "verbs": ["create"],
                    }
                )
            if group == settings.api_group and version in settings.api_versions:
                resources += [
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
                        "subresources": [
                            {"subresource": EXPAND_SPEC, "responseKind": VM_GVK, "verbs": ["get"]}
                        ],
                    },
                ]
            versions.append({"version": version, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": versions})
    return {
        "kind": DISCOVERY_KIND,
        "apiVersion": f"{DISCOVERY_GROUP}/{discovery_version}",
        "metadata": {},
        "items": items,
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


def add_routes(
    app: web.Application, settings: Settings, *, collection: bool = False, catalog: bool = False
) -> None:
    """``collection``: the rendered VMs are served (the VM cache is on), so discovery lists them;
    ``catalog``: so is the catalog change preview (the source holds the fleet)."""
    plain: dict[str, Any] = {"/apis": api_group_list(settings, collection)}
    for group, versions in _groups(settings, collection).items():
        plain[f"/apis/{group}"] = api_group(settings, group, collection)
        for version in versions:
            plain[f"/apis/{group}/{version}"] = api_resource_list(
                settings, version, group, collection, catalog
            )
    aggregated_bodies = {
        v: orjson.dumps(aggregated(settings, v, collection, catalog)) for v in DISCOVERY_VERSIONS
    }

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
