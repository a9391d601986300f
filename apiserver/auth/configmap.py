"""Keep ``kube-system/extension-apiserver-authentication`` current: get it, then watch it (an informer on
one object), relisting after any break so a missed event costs at most one backoff."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from apiserver.auth.config import CONFIGMAP_NAME, CONFIGMAP_NAMESPACE, CONFIGMAP_ORIGIN

log = logging.getLogger(__name__)

_OBJECT_PATH = f"/api/v1/namespaces/{CONFIGMAP_NAMESPACE}/configmaps/{CONFIGMAP_NAME}"
_LIST_PATH = f"/api/v1/namespaces/{CONFIGMAP_NAMESPACE}/configmaps"

Apply = Callable[[Mapping[str, str] | None], Awaitable[Any]]


class _Gone(Exception):
    pass


class ConfigMapWatcher:
    """Calls ``apply(data)`` with the ConfigMap's ``data`` (None when it does not exist) on every change."""

    def __init__(
        self,
        api_client: Any,
        apply: Apply,
        *,
        timeout: float = 10.0,
        watch_seconds: int = 300,
        max_backoff: float = 30.0,
    ) -> None:
        self._api = api_client
        self._apply = apply
        self._timeout = timeout
        self._watch_seconds = watch_seconds
        self._max_backoff = max_backoff
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="trust-configmap")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _request(self, path: str, query: list[tuple[str, str]], limit: Any) -> Any:
        return await self._api.call_api(
            path,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=limit,
        )

    async def _get(self) -> tuple[Mapping[str, str] | None, str]:
        resp = await self._request(_OBJECT_PATH, [], self._timeout)
        try:
            body = await resp.read()
        finally:
            resp.release()
        if resp.status == 404:
            return None, ""
        if resp.status != 200:
            raise RuntimeError(
                f"GET {_OBJECT_PATH}: HTTP {resp.status} {body[:200].decode('utf-8', 'replace')}"
            )
        obj = json.loads(body)
        return _data(obj), str(obj.get("metadata", {}).get("resourceVersion", ""))

    async def _watch(self, rv: str) -> None:
        import aiohttp  # the transport kubernetes-asyncio uses; only its timeout type is needed here

        query = [
            ("watch", "true"),
            ("fieldSelector", f"metadata.name={CONFIGMAP_NAME}"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(self._watch_seconds)),
        ]
        if rv:
            query.append(("resourceVersion", rv))
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self._timeout, sock_read=self._watch_seconds + 30
        )
        resp = await self._request(_LIST_PATH, query, timeout)
        try:
            if resp.status != 200:
                raise RuntimeError(f"watch {_LIST_PATH}: HTTP {resp.status}")
            async for line in resp.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind in ("ADDED", "MODIFIED"):
                    await self._apply(_data(obj))
                elif kind == "DELETED":
                    log.warning(
                        "%s was deleted; keeping the trust settings last read from it", CONFIGMAP_ORIGIN
                    )
                elif kind == "ERROR":
                    raise _Gone(obj.get("message", "watch error"))
        finally:
            resp.release()

    async def _run(self) -> None:
        backoff = 0.5
        first = True
        while True:
            try:
                data, rv = await self._get()
                if data is None:
                    if first:
                        log.error(
                            "%s not found: request-header and client-certificate trust cannot be read "
                            "from the cluster (is this an aggregated API setup? give --client-ca-file and "
                            "--requestheader-client-ca-file instead)",
                            CONFIGMAP_ORIGIN,
                        )
                    first = False
                    await self._apply(None)
                    await asyncio.sleep(backoff)
                    backoff = min(self._max_backoff, backoff * 2)
                    continue
                await self._apply(data)
                first = False
                backoff = 0.5
                await self._watch(rv)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("reading %s failed (retrying in %.1fs): %s", CONFIGMAP_ORIGIN, backoff, exc)
                await asyncio.sleep(backoff)
                backoff = min(self._max_backoff, backoff * 2)


def _data(obj: Mapping[str, Any]) -> dict[str, str]:
    data = obj.get("data") or {}
    return {str(k): str(v) for k, v in data.items()}
