"""A small JSON client for kube-apiserver on top of kubernetes-asyncio's connection and auth handling.

kubernetes-asyncio gives us the configuration loaders (kubeconfig, in-cluster with the rotating token
re-read every minute through ``refresh_api_key_hook``), TLS and the bearer token on every request. Its
typed models do not help here: objects are passed on as plain dicts, so we ask for raw responses and
decode them ourselves. Every failure is mapped onto two outcomes the source cares about: the API server
answered with a Status (:class:`ApiError`), or it could not be reached in time (:class:`SourceUnavailable`).
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import incluster_config, kube_config
from kubernetes_asyncio.config.config_exception import ConfigException

from apiserver.sources.base import SourceUnavailable

JSONDict = dict[str, Any]

_READ_BUFSIZE = 2**21  # as kubernetes-asyncio: one watch event may be a 1.5 MiB object


class ApiError(Exception):
    """kube-apiserver answered with an error Status."""

    def __init__(self, code: int, status: Mapping[str, Any]) -> None:
        self.code = code
        self.status = dict(status)
        self.reason = str(status.get("reason", ""))
        super().__init__(str(status.get("message") or f"HTTP {code}"))


@dataclass
class RequestCounts:
    """Requests sent upstream, by verb (get, list, watch, discovery)."""

    by_verb: dict[str, int] = field(default_factory=dict)

    def add(self, verb: str) -> None:
        self.by_verb[verb] = self.by_verb.get(verb, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.by_verb.values())


async def load_configuration(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    token_file: str = incluster_config.SERVICE_TOKEN_FILENAME,
    cert_file: str = incluster_config.SERVICE_CERT_FILENAME,
    environ: Mapping[str, str] | None = None,
) -> Configuration:
    """``--kubeconfig`` (or $KUBECONFIG) when given, else the pod's service account.

    In-cluster, the projected token is re-read at most a minute after it rotates (kubelet rotates it at
    80% of its lifetime, so a live token is always presented). Raises ValueError with a readable message.
    """
    env = os.environ if environ is None else environ
    config = Configuration()
    path = kubeconfig or env.get("KUBECONFIG")
    try:
        if path:
            await kube_config.load_kube_config(config_file=path, context=context, client_configuration=config)
        else:
            loader = incluster_config.InClusterConfigLoader(
                token_filename=token_file, cert_filename=cert_file, environ=dict(env)
            )
            loader.load_and_set(config)
    except (ConfigException, OSError) as err:
        where = f"kubeconfig {path}" if path else "in-cluster service account"
        # Outside a pod, the in-cluster error alone does not say what to give instead (~/.kube/config is
        # not read, as k8s.io/apiserver servers do not read it).
        hint = (
            "" if path else "; outside a pod give --kubeconfig FILE (or set $KUBECONFIG), or --manifests DIR"
        )
        detail = str(err).rstrip(".") if hint else str(err)
        raise ValueError(f"cannot load the cluster configuration ({where}): {detail}{hint}") from err
    return config


def api_client(config: Configuration) -> ApiClient:
    """An ApiClient whose requests skip aiohttp's per-request look-ups in the environment.

    kubernetes-asyncio opens its session with ``trust_env=True``, so aiohttp, for every request, reads
    ~/.netrc in a worker thread and parses the proxy variables (and ~/.netrc again) in another: two
    thread hand-offs and file reads per GET, about half of the CPU a fresh VM read cost. Here the proxy
    for the API server is looked up once, and the session (same connector and TLS settings) does none.
    Credentials come from the kubeconfig or the service account, never from ~/.netrc. Call in a loop.
    """
    api = ApiClient(configuration=config)
    rest = api.rest_client
    if rest.proxy is None:
        proxy = env_proxy(str(config.host))
        if proxy is not None:
            parts = urllib.parse.urlsplit(proxy)
            if parts.username is not None and not rest.proxy_headers:
                user, password = (
                    urllib.parse.unquote(parts.username),
                    urllib.parse.unquote(parts.password or ""),
                )
                rest.proxy_headers = {"Proxy-Authorization": aiohttp.encode_basic_auth(user, password)}
                proxy = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
            rest.proxy = proxy
    old: aiohttp.ClientSession = rest.pool_manager
    connector = old.connector
    old.detach()  # the connector now belongs to the new session, which closes it with the ApiClient
    rest.pool_manager = aiohttp.ClientSession(
        connector=connector, trust_env=False, read_bufsize=_READ_BUFSIZE
    )
    return api


def env_proxy(url: str) -> str | None:
    """The proxy $HTTPS_PROXY/$HTTP_PROXY name for ``url`` unless $NO_PROXY exempts its host: what aiohttp
    resolved on every request (it supports http:// proxies only)."""
    parts = urllib.parse.urlsplit(url)
    proxy = urllib.request.getproxies_environment().get(parts.scheme)
    if not proxy or not proxy.startswith("http://") or not parts.hostname:
        return None
    if urllib.request.proxy_bypass(parts.hostname):
        return None
    return proxy


class KubeClient:
    """GET and WATCH against kube-apiserver, returning decoded JSON."""

    def __init__(self, api: ApiClient, *, read_timeout: float = 5.0, connect_timeout: float = 3.0) -> None:
        self._api = api
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.counts = RequestCounts()

    @classmethod
    def from_configuration(cls, config: Configuration, **kw: float) -> KubeClient:
        return cls(api_client(config), **kw)

    async def close(self) -> None:
        await self._api.close()

    async def _send(
        self, path: str, query: Mapping[str, str] | None, client_timeout: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        resp: aiohttp.ClientResponse = await self._api.call_api(
            path,
            "GET",
            query_params=list((query or {}).items()),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=client_timeout,
        )
        return resp

    async def get(
        self,
        path: str,
        query: Mapping[str, str] | None = None,
        *,
        verb: str = "get",
        seconds: float | None = None,
    ) -> JSONDict:
        """One object, list or discovery document; at most ``seconds`` (default ``read_timeout``) in all."""
        self.counts.add(verb)
        limit = seconds or self.read_timeout
        timeout = aiohttp.ClientTimeout(total=limit, sock_connect=self.connect_timeout)
        try:
            async with asyncio.timeout(limit):
                resp = await self._send(path, query, timeout)
                try:
                    body = await resp.read()
                finally:
                    resp.release()
        except TimeoutError as err:
            raise SourceUnavailable(
                f"the Kubernetes API did not answer {path} within {limit:g}s", timeout=True
            ) from err
        except (aiohttp.ClientError, OSError) as err:
            raise SourceUnavailable(f"cannot reach the Kubernetes API: {err or type(err).__name__}") from err
        return _decode(resp, body, path)

    async def watch(
        self, path: str, query: Mapping[str, str], *, idle_timeout: float
    ) -> AsyncIterator[JSONDict]:
        """The events of one watch request, until the server ends it or it stays silent too long.

        A silence of ``idle_timeout`` also ends it, quietly, for the caller to resume on a new
        connection: a connection that died without a reset is noticed then (the new one cannot be
        opened), but silence alone is no error. kube-apiserver sends a bookmark only once its watch
        cache has seen a change of that kind, about once a minute at most, so a watch of a kind nobody
        changes (no presets, no KubeVirt CR) gets no line at all until its ``timeoutSeconds``.
        """
        self.counts.add("watch")
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.connect_timeout, sock_read=idle_timeout)
        try:
            async with asyncio.timeout(self.read_timeout):
                resp = await self._send(path, {**query, "watch": "true"}, timeout)
        except TimeoutError as err:
            raise SourceUnavailable(
                f"the Kubernetes API did not start watching {path}", timeout=True
            ) from err
        except (aiohttp.ClientError, OSError) as err:
            raise SourceUnavailable(f"cannot reach the Kubernetes API: {err or type(err).__name__}") from err
        try:
            if resp.status != 200:
                _decode(resp, await resp.read(), path)
            async for line in resp.content:
                if line.strip():
                    yield _loads(line)
        except aiohttp.ServerTimeoutError:  # the read timeout (sock_read): nothing came for idle_timeout
            resp.close()  # half-read: never back into the pool
            return
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            raise SourceUnavailable(f"watch of {path} broke: {err or type(err).__name__}") from err
        finally:
            resp.release()


def _loads(text: bytes) -> Any:
    """JSON as the standard library reads it, by orjson (several times faster on objects and lists),
    falling back for what only the standard library accepts (NaN, Infinity); raises ValueError. Integers
    beyond 64 bits would come out as floats, but kube-apiserver never sends any: it keeps numbers as
    int64 or float64."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _decode(resp: aiohttp.ClientResponse, body: bytes, path: str) -> JSONDict:
    try:
        data = _loads(body) if body else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    if 200 <= resp.status < 300:
        return data
    if data.get("kind") != "Status":
        # Not a Status: kube-apiserver's plain-text "404 page not found\n" for a path no API serves.
        data = {"message": body[:200].decode("utf-8", "replace").strip() or f"HTTP {resp.status}"}
    if resp.status == 429 or resp.status >= 500:
        retry = _retry_after(resp, data)
        timeout = resp.status == 504
        raise SourceUnavailable(
            f"the Kubernetes API answered {resp.status} for {path}: {data.get('message', '')}",
            timeout=timeout,
            retry_after=retry,
            throttled=resp.status == 429,
        )
    raise ApiError(resp.status, data)


def _retry_after(resp: aiohttp.ClientResponse, status: Mapping[str, Any]) -> int:
    header = resp.headers.get("Retry-After", "")
    if header.isdigit():
        return max(1, int(header))
    details = status.get("details") or {}
    seconds = details.get("retryAfterSeconds") if isinstance(details, Mapping) else None
    return max(1, int(seconds)) if isinstance(seconds, int) else 1
