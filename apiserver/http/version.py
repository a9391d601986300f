"""``/apis/{group}/{version}/version``: version info in virt-api's shape.

``virtctl expand`` calls it after an error and warns when the major.minor differs from its own, so we
report the cluster's KubeVirt version when the source knows it (the KubeVirt CR's status), and this
server's own version otherwise.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from apiserver.http.media import negotiate, respond
from apiserver.sources.base import Source, SourceUnavailable


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return "v" + version("kubevirt-expand-apiserver")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "v0.0.0"


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
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return {
        "gitVersion": kubevirt_version(kubevirt) or _package_version(),
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "platform": f"{sys.platform}/{arch}",
    }


def make_handler(source: Source) -> Any:
    async def handler(request: web.Request) -> web.Response:
        media_type = negotiate(request)
        try:
            kubevirt = await source.kubevirt()
        except SourceUnavailable:
            kubevirt = None
        return respond(version_info(kubevirt), media_type)

    return handler
