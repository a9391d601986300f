"""Keep ``kube-system/extension-apiserver-authentication`` current with an informer on that one object.

As k8s.io/apiserver does: list it (``fieldSelector=metadata.name=...``, so an absent object is an empty
list with a resourceVersion, not a 404 to poll), then watch from that resourceVersion with bookmarks. A
watch that ends (its timeout, a dropped connection) is resumed from the last resourceVersion seen, so a
warm server sends no reads while nothing changes; only 410 Gone (history compacted) or a failed list
makes it list again. Failures back off exponentially with jitter up to ``max_backoff``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from apiserver.auth.config import CONFIGMAP_NAME, CONFIGMAP_NAMESPACE, CONFIGMAP_ORIGIN

log = logging.getLogger(__name__)

_LIST_PATH = f"/api/v1/namespaces/{CONFIGMAP_NAMESPACE}/configmaps"
_SHORT_WATCH = 1.0  # seconds: a watch that ends sooner without any event counts as a failure
_FIELD_SELECTOR = ("fieldSelector", f"metadata.name={CONFIGMAP_NAME}")

Apply = Callable[[Mapping[str, str] | None], Awaitable[Any]]


class _Gone(Exception):
    """The resourceVersion is too old (410): list again."""


class _Absent:
    """The last state seen: the ConfigMap does not exist."""


_ABSENT = _Absent()


class ConfigMapWatcher:
    """Calls ``apply(data)`` with the ConfigMap's ``data`` (None when it does not exist) on every change.

    A deletion keeps the settings last applied (as k8s.io/apiserver's controllers do): only a ConfigMap
    that exists replaces them, and one that never existed at start-up is applied as None once.
    """

    def __init__(
        self,
        api_client: Any,
        apply: Apply,
        *,
        timeout: float = 10.0,
        watch_seconds: int = 300,
        max_backoff: float = 30.0,
        initial_backoff: float = 0.5,
    ) -> None:
        self._api = api_client
        self._apply = apply
        self._timeout = timeout
        self._watch_seconds = watch_seconds
        self._max_backoff = max_backoff
        self._initial_backoff = initial_backoff
        self._task: asyncio.Task[None] | None = None
        self._seen: dict[str, str] | _Absent | None = None  # None: nothing applied yet
        self._rv = ""

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="trust-configmap")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _request(self, query: list[tuple[str, str]], limit: Any) -> Any:
        return await self._api.call_api(
            _LIST_PATH,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=limit,
        )

    async def _list(self) -> None:
        """Read the object (or learn it is absent) and the resourceVersion to watch from."""
        resp = await self._request([_FIELD_SELECTOR], self._timeout)
        try:
            body = await resp.read()
        finally:
            resp.release()
        if resp.status != 200:
            raise RuntimeError(f"list {_LIST_PATH}: HTTP {resp.status} {_message(body)}")
        listed = json.loads(body)
        items = [i for i in listed.get("items") or () if i.get("metadata", {}).get("name") == CONFIGMAP_NAME]
        self._rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        if items:
            await self._update(items[0])
        elif self._seen is None:
            log.error(
                "%s not found: request-header and client-certificate trust cannot be read from the cluster "
                "(is this an aggregated API setup? give --client-ca-file and "
                "--requestheader-client-ca-file instead); watching for it to appear",
                CONFIGMAP_ORIGIN,
            )
            self._seen = _ABSENT
            await self._apply(None)
        elif self._seen is not _ABSENT:
            self._deleted()

    async def _update(self, obj: Mapping[str, Any]) -> None:
        data = _data(obj)
        if data != self._seen:
            self._seen = data
            await self._apply(data)

    def _deleted(self) -> None:
        log.warning("%s was deleted; keeping the trust settings last read from it", CONFIGMAP_ORIGIN)
        self._seen = _ABSENT

    async def _watch(self) -> bool:
        """One watch from the current resourceVersion; True when it delivered any event."""
        import aiohttp  # the transport kubernetes-asyncio uses; only its timeout type is needed here

        # A random length between one and two times watch_seconds (as client-go's reflector, jitter only),
        # so that many servers do not all re-watch at once.
        seconds = int(self._watch_seconds * (1 + random.random()))
        query = [
            ("watch", "true"),
            _FIELD_SELECTOR,
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(seconds)),
            ("resourceVersion", self._rv),
        ]
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout, sock_read=seconds + 30)
        started = time.monotonic()
        resp = await self._request(query, timeout)
        delivered = False
        try:
            if resp.status == 410:
                raise _Gone(f"watch {_LIST_PATH}: HTTP 410 {_message(await resp.read())}")
            if resp.status != 200:
                raise RuntimeError(f"watch {_LIST_PATH}: HTTP {resp.status} {_message(await resp.read())}")
            async for line in resp.content:
                if line.strip():
                    await self._event(json.loads(line))
                    delivered = True
        finally:
            resp.release()
        if not delivered and time.monotonic() - started < _SHORT_WATCH:
            # Ended at once with nothing in it: something is wrong upstream; back off, do not spin.
            raise RuntimeError(f"watch {_LIST_PATH} ended at once without any event")
        return delivered

    async def _event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Gone(str(obj.get("message") or "resourceVersion too old"))
            raise RuntimeError(f"watch error: {obj.get('message') or obj}")
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind in ("ADDED", "MODIFIED") and (obj.get("metadata") or {}).get("name") == CONFIGMAP_NAME:
            await self._update(obj)
        elif kind == "DELETED":
            self._deleted()
        if rv:
            self._rv = rv

    async def _run(self) -> None:
        backoff = self._initial_backoff
        listed = False
        while True:
            try:
                if not listed:
                    await self._list()
                    listed = True
                    backoff = self._initial_backoff
                if await self._watch():
                    backoff = self._initial_backoff
                continue  # the watch ended (its timeout): resume from the last resourceVersion
            except asyncio.CancelledError:
                raise
            except _Gone as exc:
                log.info("watch of %s expired (%s); listing again", CONFIGMAP_ORIGIN, exc)
                listed = False
                continue
            except Exception as exc:
                log.warning("reading %s failed (retrying in %.1fs): %s", CONFIGMAP_ORIGIN, backoff, exc)
            await asyncio.sleep(backoff * (0.8 + 0.4 * random.random()))
            backoff = min(self._max_backoff, backoff * 2)


def _message(body: bytes) -> str:
    """The Status message of an error answer, else the start of the body."""
    try:
        status = json.loads(body)
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    return body[:200].decode("utf-8", "replace")


def _data(obj: Mapping[str, Any]) -> dict[str, str]:
    data = obj.get("data") or {}
    return {str(k): str(v) for k, v in data.items()}
