"""Certificates, a fake cluster answering reviews, and the real server with authentication on, over TLS."""

from __future__ import annotations

import dataclasses
import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import trustme
from kubernetes_asyncio.client import ApiClient, Configuration

from apiserver.auth.config import CONFIGMAP_NAME, CONFIGMAP_NAMESPACE, TrustOptions
from apiserver.auth.options import AuthOptions, AuthRuntime
from apiserver.auth.tls import ServingTLS
from apiserver.http.filters.authentication import Authentication
from tests.support.fakekube import FakeKube
from tests.support.fakekube.reviews import Reviews
from tests.support.http_helpers import MemorySource, RunningServer, running_server
from tests.support.waiting import eventually

GROUP = "subresources.kubevirt.io"


def pem_of(ca: trustme.CA) -> str:
    return ca.cert_pem.bytes().decode()


@dataclass
class PKI:
    """The CAs of a cluster: front proxy, client, serving; and a stranger's."""

    tmp: Path
    front_proxy_ca: trustme.CA = field(default_factory=trustme.CA)
    client_ca: trustme.CA = field(default_factory=trustme.CA)
    serving_ca: trustme.CA = field(default_factory=trustme.CA)
    other_ca: trustme.CA = field(default_factory=trustme.CA)

    def __post_init__(self) -> None:
        self.aggregator = self.front_proxy_ca.issue_cert(
            "front-proxy-client", common_name="front-proxy-client"
        )
        self.wrong_cn = self.front_proxy_ca.issue_cert("impostor", common_name="impostor")
        self.stranger = self.other_ca.issue_cert("front-proxy-client", common_name="front-proxy-client")
        self.carol = self.client_ca.issue_cert("carol", common_name="carol", organization_name="devs")
        self.cert_file = self.tmp / "serving.crt"
        self.key_file = self.tmp / "serving.key"
        self.serving_ca_file = self.tmp / "serving-ca.crt"
        self.write_serving(self.serving_ca)

    def write_serving(self, ca: trustme.CA) -> None:
        leaf = ca.issue_cert("127.0.0.1", "localhost")
        self.cert_file.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        self.key_file.write_bytes(leaf.private_key_pem.bytes())
        self.serving_ca_file.write_bytes(ca.cert_pem.bytes())

    def configmap(self, **overrides: Any) -> dict[str, Any]:
        data = {
            "client-ca-file": pem_of(self.client_ca),
            "requestheader-client-ca-file": pem_of(self.front_proxy_ca),
            "requestheader-allowed-names": json.dumps(["front-proxy-client"]),
            "requestheader-username-headers": json.dumps(["X-Remote-User"]),
            "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
            "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
            "requestheader-uid-headers": json.dumps(["X-Remote-Uid"]),
        }
        data.update(overrides)
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP_NAME, "namespace": CONFIGMAP_NAMESPACE},
            "data": data,
        }


@dataclass
class AuthEnv:
    pki: PKI
    fake: FakeKube
    reviews: Reviews
    runtime: AuthRuntime
    tls: ServingTLS
    server: RunningServer

    @property
    def url(self) -> str:
        return self.server.url

    def client_context(
        self, cert: trustme.LeafCert | None = None, trust: Path | None = None
    ) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(trust or self.pki.serving_ca_file))
        if cert is not None:
            cert.configure_cert(ctx)
        return ctx

    @asynccontextmanager
    async def session(
        self, cert: trustme.LeafCert | None = None, trust: Path | None = None
    ) -> AsyncIterator[aiohttp.ClientSession]:
        connector = aiohttp.TCPConnector(ssl=self.client_context(cert, trust))
        async with aiohttp.ClientSession(connector=connector) as session:
            yield session

    async def call(
        self,
        path: str,
        *,
        cert: trustme.LeafCert | None = None,
        headers: Mapping[str, str] | list[tuple[str, str]] | None = None,
        method: str = "GET",
        body: Any = None,
    ) -> tuple[int, Mapping[str, str], Any]:
        async with self.session(cert) as session:
            data = json.dumps(body) if body is not None else None
            hdrs: Any = headers or {}
            async with session.request(method, self.url + path, headers=hdrs, data=data) as resp:
                raw = await resp.read()
                try:
                    parsed: Any = json.loads(raw)
                except ValueError:
                    parsed = raw.decode(errors="replace")
                return resp.status, resp.headers, parsed


async def wait_for(predicate: Callable[[], bool], seconds: float = 5.0) -> None:
    """tests/support/waiting.eventually, under the name the authentication tests use."""
    await eventually(predicate, seconds)


@asynccontextmanager
async def auth_env(
    tmp_path: Path,
    *,
    options: AuthOptions | None = None,
    configmap: bool = True,
    source: Any = None,
    file_poll_interval: float = 0.2,
) -> AsyncIterator[AuthEnv]:
    pki = PKI(tmp_path)
    fake = FakeKube()
    reviews = Reviews.install(fake)
    if configmap:
        fake.create(pki.configmap())
    await fake.start()
    config = Configuration(host=fake.url)
    api = ApiClient(configuration=config)
    opts = options or AuthOptions(trust=TrustOptions())
    opts = dataclasses.replace(opts, file_poll_interval=file_poll_interval)
    runtime = AuthRuntime(opts, authn_api=api, authz_api=api)
    await runtime.start()
    if opts.trust.needs_lookup and configmap:
        await wait_for(lambda: runtime.trust.loaded)
    tls = ServingTLS(
        str(pki.cert_file), str(pki.key_file), trust=runtime.trust, poll_interval=file_poll_interval
    )
    await tls.start()
    try:
        async with running_server(
            source or MemorySource(),
            tmp_path,
            filters=[Authentication(runtime.gate)],  # as serve.py wires it
            ssl_context=tls.context,
            ca_file=pki.serving_ca_file,
            authentication=True,
        ) as server:
            yield AuthEnv(pki, fake, reviews, runtime, tls, server)
    finally:
        await tls.close()
        await runtime.close()
        await fake.stop()
