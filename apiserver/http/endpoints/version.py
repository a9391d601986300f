"""Version endpoints: ``/version`` as kube-apiserver serves it, ``/apis/{group}/{version}/version``
in virt-api's shape.

``/version`` is what ``kubectl version`` reads: Go's ``version.Info`` (``major``, ``minor``,
``gitVersion`` ...) for this server, plus a ``kubevirt`` member naming the KubeVirt code the output
matches. ``virtctl expand`` calls the group's ``.../version`` after an error and warns when its
major.minor differs from its own, so that one reports the cluster's KubeVirt version when the source
knows it (the KubeVirt CR's status), and this server's own version otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from apiserver.http.media import negotiate, respond
from apiserver.sources.base import Source, SourceUnavailable
from apiserver.version import base_info, package_version, semantic_version, server_version_info


def kubevirt_version(kubevirt: Mapping[str, Any] | None) -> str | None:
    if not kubevirt:
        return None
    status = kubevirt.get("status")
    if not isinstance(status, Mapping):
        return None
    for key in ("observedKubeVirtVersion", "operatorVersion", "targetKubeVirtVersion"):
        value = status.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def version_info(kubevirt: Mapping[str, Any] | None) -> dict[str, str]:
    return base_info(kubevirt_version(kubevirt) or semantic_version(package_version()))


def make_handler(source: Source) -> Any:
    async def handler(request: web.Request) -> web.Response:
        media_type = negotiate(request)
        try:
            kubevirt = await source.kubevirt()
        except SourceUnavailable:
            kubevirt = None
        return respond(version_info(kubevirt), media_type)

    return handler


async def server_version(request: web.Request) -> web.Response:
    """``GET /version``."""
    return respond(server_version_info(), negotiate(request))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/version", server_version, allow_head=False)
    app.router.add_get("/version/", server_version, allow_head=False)
