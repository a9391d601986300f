"""Each way into the server, and each way refused, over real TLS with certificates made here."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import aiohttp
import pytest

from apiserver.auth.config import TrustOptions, TrustState
from apiserver.auth.options import AuthOptions
from apiserver.auth.tls import ServingTLS
from tests.support.auth_fixtures import GROUP, PKI, auth_env, wait_for
from tests.support.fakekube.reviews import Rule
from tests.support.http_helpers import MemorySource

DISCOVERY = f"/apis/{GROUP}/v1"
EXPAND = f"/apis/{GROUP}/v1/namespaces/ns1/virtualmachines/vm1/expand-spec"
EXPAND_V1ALPHA3 = f"/apis/{GROUP}/v1alpha3/namespaces/ns1/virtualmachines/vm1/expand-spec"
PUT = f"/apis/{GROUP}/v1/namespaces/ns1/expand-vm-spec"

PROXY_HEADERS = [
    ("X-Remote-User", "alice"),
    ("X-Remote-Uid", "u-123"),
    ("X-Remote-Group", "dev"),
    ("X-Remote-Group", "system:authenticated"),
    ("X-Remote-Extra-Scopes.example.com%2fteam", "blue"),
    ("X-Remote-Extra-Scopes.example.com%2fteam", "green"),
]


def assert_unauthorized(code: int, body: object) -> None:
    assert code == 401
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


async def test_front_proxy_identity_is_used_only_from_the_aggregator(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="alice", path="/metrics")
        code, _, _ = await env.call("/metrics", cert=env.pki.aggregator, headers=PROXY_HEADERS)
        assert code == 200
        spec = env.reviews.access_reviews[-1]["spec"]
        assert spec["user"] == "alice"
        assert spec["uid"] == "u-123"
        assert spec["groups"] == ["dev", "system:authenticated"]
        assert spec["extra"] == {"scopes.example.com/team": ["blue", "green"]}
        assert spec["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
        assert "resourceAttributes" not in spec
        reviews_before = len(env.reviews.access_reviews)

        # A certificate of the front-proxy CA whose CN is not allowed: the headers are not believed.
        code, _, body = await env.call("/metrics", cert=env.pki.wrong_cn, headers=PROXY_HEADERS)
        assert_unauthorized(code, body)
        assert "common name 'impostor' is not one of the allowed names" in caplog.text
        assert "front-proxy-client" in caplog.text

        # No certificate at all.
        code, _, body = await env.call("/metrics", headers=PROXY_HEADERS)
        assert_unauthorized(code, body)
        assert "sent without a client certificate; expected" in caplog.text

        # A certificate of another CA never gets past the handshake, and the log says what was expected.
        with pytest.raises(aiohttp.ClientError):
            await env.call("/metrics", cert=env.pki.stranger, headers=PROXY_HEADERS)
        await wait_for(lambda: "TLS handshake refused" in caplog.text)
        refusal = next(r.getMessage() for r in caplog.records if "TLS handshake refused" in r.getMessage())
        assert "request-header CA" in refusal and "client CA" in refusal

        assert len(env.reviews.access_reviews) == reviews_before  # nobody but the aggregator got reviewed


async def test_identity_headers_do_not_reach_handlers_and_discovery_needs_no_review(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        code, _, body = await env.call(
            DISCOVERY, cert=env.pki.aggregator, headers=[("X-Remote-User", "system:kube-aggregator")]
        )
        assert code == 200
        assert body["kind"] == "APIResourceList"
        code, _, _ = await env.call("/apis", cert=env.pki.aggregator, headers=[("X-Remote-User", "x")])
        assert code == 200
        code, _, _ = await env.call("/openapi/v2", cert=env.pki.aggregator, headers=[("X-Remote-User", "x")])
        assert code == 200
        assert env.reviews.access_reviews == []
        code, _, body = await env.call(DISCOVERY)
        assert_unauthorized(code, body)


async def test_health_is_open_to_anonymous(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        for path in ("/livez", "/readyz", "/healthz", "/livez?verbose"):
            code, _, _ = await env.call(path)
            assert code == 200, path
        code, _, body = await env.call("/apis")
        assert_unauthorized(code, body)
        code, _, body = await env.call("/no/such/path")
        assert_unauthorized(code, body)


async def test_readyz_details_only_for_authenticated_callers(tmp_path: Path) -> None:
    """Issue 15, item 10: /readyz?verbose answers everyone (probes carry no credentials) but says what a
    check found (object counts, errors) only to a caller whose credentials are good."""
    from apiserver.sources.base import Check

    source = MemorySource(check_list=[Check("cache-vms", True, "1234 objects")])
    async with auth_env(tmp_path, source=source) as env:
        env.reviews.tokens["good-token"] = ("dave", ["ops"])
        anonymous = await env.call("/readyz?verbose")
        bad_token = await env.call("/readyz?verbose", headers={"Authorization": "Bearer nope"})
        carol = await env.call("/readyz?verbose", cert=env.pki.carol)
        dave = await env.call("/readyz?verbose", headers={"Authorization": "Bearer good-token"})
        proxied = await env.call("/readyz?verbose", cert=env.pki.aggregator, headers=PROXY_HEADERS)
        forged = await env.call("/readyz?verbose", headers=PROXY_HEADERS)
    for code, _, body in (anonymous, bad_token, forged):
        assert code == 200
        assert "[+]cache-vms ok\n" in body and "1234" not in body
    for code, _, body in (carol, dave, proxied):
        assert code == 200
        assert "[+]cache-vms ok - 1234 objects\n" in body
    assert env.reviews.access_reviews == []  # who, not whether: no SubjectAccessReview


async def test_client_certificate_authenticates_its_subject(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="carol", path="/metrics")
        # Headers from a client-CA certificate are not a front-proxy identity.
        code, _, _ = await env.call("/metrics", cert=env.pki.carol, headers=[("X-Remote-User", "admin")])
        assert code == 200
        spec = env.reviews.access_reviews[-1]["spec"]
        assert spec["user"] == "carol"
        assert spec["groups"] == ["devs", "system:authenticated"]
        assert spec["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("X509SHA256=")


async def test_bearer_token_reviewed_once_within_the_ttl(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with auth_env(tmp_path) as env:
        env.reviews.tokens["sekret-token-1"] = ("dave", ["ops"])
        env.reviews.allow(user="dave")
        for _ in range(2):
            code, _, _ = await env.call("/metrics", headers={"Authorization": "Bearer sekret-token-1"})
            assert code == 200
        assert len(env.reviews.token_reviews) == 1
        assert env.reviews.token_reviews[0]["spec"] == {"token": "sekret-token-1"}
        assert len(env.reviews.access_reviews) == 1  # the decision is cached too
        spec = env.reviews.access_reviews[0]["spec"]
        assert (spec["user"], spec["uid"], spec["groups"]) == (
            "dave",
            "uid-dave",
            ["ops", "system:authenticated"],
        )

        code, _, body = await env.call("/metrics", headers={"Authorization": "Bearer wrong-token-2"})
        assert_unauthorized(code, body)
        assert "sekret-token-1" not in caplog.text and "wrong-token-2" not in caplog.text


async def test_review_attributes_for_each_endpoint(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="alice")
        who = [("X-Remote-User", "alice"), ("X-Remote-Group", "g1")]
        code, _, body = await env.call(EXPAND, cert=env.pki.aggregator, headers=who)
        assert code == 404, body  # past authorization: the VM does not exist
        # Asked for every VM of the namespace (no name): allowed, so for this one too.
        assert env.reviews.access_reviews[-1]["spec"] == {
            "resourceAttributes": {
                "namespace": "ns1",
                "verb": "get",
                "group": GROUP,
                "version": "v1",
                "resource": "virtualmachines",
                "subresource": "expand-spec",
            },
            "user": "alice",
            "groups": ["g1", "system:authenticated"],
        }
        await env.call(EXPAND_V1ALPHA3, cert=env.pki.aggregator, headers=who)
        assert env.reviews.access_reviews[-1]["spec"]["resourceAttributes"]["version"] == "v1alpha3"

        await env.call(
            PUT, cert=env.pki.aggregator, headers=who, method="PUT", body={"kind": "VirtualMachine"}
        )
        attrs = env.reviews.access_reviews[-1]["spec"]["resourceAttributes"]
        assert attrs == {
            "namespace": "ns1",
            "verb": "update",
            "group": GROUP,
            "version": "v1",
            "resource": "expand-vm-spec",
        }


async def test_denied_is_403_in_kube_apiserver_words(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.reviews.deny(user="bob", reason="no RBAC policy matched")
        who = [("X-Remote-User", "bob")]
        code, _, body = await env.call(EXPAND, cert=env.pki.aggregator, headers=who)
        assert code == 403
        assert body["reason"] == "Forbidden"
        assert body["message"] == (
            f'virtualmachines.{GROUP} "vm1" is forbidden: User "bob" cannot get resource '
            f'"virtualmachines/expand-spec" in API group "{GROUP}" in the namespace "ns1": '
            "no RBAC policy matched"
        )
        assert body["details"] == {"name": "vm1", "group": GROUP, "kind": "virtualmachines"}
        code, _, body = await env.call(PUT, cert=env.pki.aggregator, headers=who, method="PUT", body={})
        assert code == 403
        assert body["message"].startswith(
            f'expand-vm-spec.{GROUP} is forbidden: User "bob" cannot update resource "expand-vm-spec"'
        )
        code, _, body = await env.call("/metrics", cert=env.pki.aggregator, headers=who)
        assert (code, body["message"]) == (
            403,
            'forbidden: User "bob" cannot get path "/metrics": no RBAC policy matched',
        )
        # The denial was cached: asking again sends no new review.
        count = len(env.reviews.access_reviews)
        await env.call(EXPAND, cert=env.pki.aggregator, headers=who)
        assert len(env.reviews.access_reviews) == count


def _expand(namespace: str, name: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{namespace}/virtualmachines/{name}/expand-spec"


async def test_a_namespace_allowed_admits_every_vm_of_it_from_memory(tmp_path: Path) -> None:
    """One review for the namespace (no name), then GETs of any other VM there are admitted without
    another, whatever the client's other headers; a VM of another namespace is reviewed for that one."""
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="alice", namespace="ns1")
        env.reviews.deny(user="alice", reason="no RBAC policy matched")
        who = [("X-Remote-User", "alice")]
        for i in [*range(5), 3, 0]:
            extra = [("X-Forwarded-For", f"10.0.0.{i}")]
            code, _, body = await env.call(
                _expand("ns1", f"vm-{i}"), cert=env.pki.aggregator, headers=who + extra
            )
            assert code == 404, body  # admitted: the VM does not exist
            # ... and looked for by the name its own path asks for (the scope narrowed to it)
            assert body["details"]["name"] == f"vm-{i}"
            assert body["message"] == f'virtualmachines.kubevirt.io "vm-{i}" not found'
        asked = [r["spec"]["resourceAttributes"] for r in env.reviews.access_reviews]
        assert [(a["namespace"], a.get("name")) for a in asked] == [("ns1", None)]
        code, _, body = await env.call(_expand("ns2", "vm-0"), cert=env.pki.aggregator, headers=who)
        assert code == 403
        assert body["message"] == (
            f'virtualmachines.{GROUP} "vm-0" is forbidden: User "alice" cannot get resource '
            f'"virtualmachines/expand-spec" in API group "{GROUP}" in the namespace "ns2": '
            "no RBAC policy matched"
        )
        asked = [r["spec"]["resourceAttributes"] for r in env.reviews.access_reviews]
        assert [(a["namespace"], a.get("name")) for a in asked] == [
            ("ns1", None),
            ("ns2", None),
            ("ns2", "vm-0"),
        ]


async def test_requests_for_new_vms_of_an_allowed_namespace_are_remembered_by_nothing(tmp_path: Path) -> None:
    """Admitted by namespace, a GET of a VM not asked for before adds no entry to any of the gate's
    memos: its cost does not depend on which VM it names (docs/performance.md, GET at cluster size)."""
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="alice", namespace="ns1")
        who = [("X-Remote-User", "alice")]
        gate = env.runtime.gate
        code, _, _ = await env.call(_expand("ns1", "first"), cert=env.pki.aggregator, headers=who)
        assert code == 404
        memos = (gate._admitted, gate._by_credentials, gate._by_namespace, gate._by_namespace_credentials)
        before = [dict(m) for m in memos]
        for i in range(40):
            code, _, body = await env.call(_expand("ns1", f"vm-{i}"), cert=env.pki.aggregator, headers=who)
            assert (code, body["details"]["name"]) == (404, f"vm-{i}")
        assert [dict(m) for m in memos] == before
        assert len(env.reviews.access_reviews) == 1


async def test_a_grant_by_resource_name_admits_that_vm_only(tmp_path: Path) -> None:
    """RBAC with resourceNames refuses the review without a name: the named review decides, for that VM
    alone, and is never taken for the namespace."""
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="carol", namespace="ns1", name="mine")
        env.reviews.deny(user="carol", reason="no RBAC policy matched")
        who = [("X-Remote-User", "carol")]
        code, _, body = await env.call(_expand("ns1", "mine"), cert=env.pki.aggregator, headers=who)
        assert code == 404, body  # admitted: the VM does not exist
        for _ in range(2):  # the refusal of another VM, remembered or not, is the named 403
            code, _, body = await env.call(_expand("ns1", "theirs"), cert=env.pki.aggregator, headers=who)
            assert code == 403
            assert body["details"] == {"name": "theirs", "group": GROUP, "kind": "virtualmachines"}
        code, _, _ = await env.call(_expand("ns1", "mine"), cert=env.pki.aggregator, headers=who)
        assert code == 404
        asked = [r["spec"]["resourceAttributes"].get("name") for r in env.reviews.access_reviews]
        assert asked == [None, "mine", "theirs"]  # each decision cached for its TTL


async def test_masters_are_allowed_without_review(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        who = [("X-Remote-User", "root"), ("X-Remote-Group", "system:masters")]
        code, _, _ = await env.call("/metrics", cert=env.pki.aggregator, headers=who)
        assert code == 200
        assert env.reviews.access_reviews == []


async def test_review_failure_is_503_never_allowed(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.reviews.rules.append(
            __import__("tests.support.fakekube.reviews", fromlist=["Rule"]).Rule("error")
        )
        code, headers, body = await env.call(
            "/metrics", cert=env.pki.aggregator, headers=[("X-Remote-User", "a")]
        )
        assert code == 503
        assert headers["Retry-After"] == "3"
        assert body["reason"] == "ServiceUnavailable"
        env.reviews.token_error = 500
        code, headers, body = await env.call("/metrics", headers={"Authorization": "Bearer x"})
        assert code == 503 and "Retry-After" in headers


async def test_a_hung_review_is_503_within_the_kube_timeout(tmp_path: Path) -> None:
    """A kube-apiserver that accepts the connection and never answers must not hold the request: each
    review waits --kube-timeout at most (it waited 10 s whatever --kube-timeout said)."""
    options = AuthOptions(trust=TrustOptions(), kube_timeout=0.5)
    async with auth_env(tmp_path, options=options) as env:
        env.reviews.allow()
        env.reviews.tokens["good"] = ("alice", [])
        env.fake.delay(30, path_contains="subjectaccessreviews")
        env.fake.delay(30, path_contains="tokenreviews")
        for credentials in (
            {"cert": env.pki.aggregator, "headers": [("X-Remote-User", "alice")]},
            {"headers": {"Authorization": "Bearer good"}},
        ):
            started = time.monotonic()
            code, headers, body = await env.call(EXPAND, **credentials)
            elapsed = time.monotonic() - started
            assert (code, body["reason"], headers["Retry-After"]) == (503, "ServiceUnavailable", "3"), body
            assert elapsed < 5, f"answered after {elapsed:.1f}s with --kube-timeout 0.5s"


async def test_configmap_changes_take_effect(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.reviews.allow()
        who = [("X-Remote-User", "alice")]
        assert (await env.call("/metrics", cert=env.pki.aggregator, headers=who))[0] == 200
        assert (await env.call("/metrics", cert=env.pki.wrong_cn, headers=who))[0] == 401
        # The cluster now allows the other name and uses another user header.
        env.fake.update(
            env.pki.configmap(
                **{
                    "requestheader-allowed-names": json.dumps(["impostor"]),
                    "requestheader-username-headers": json.dumps(["X-Proxy-User"]),
                }
            )
        )
        await wait_for(
            lambda: (
                env.runtime.trust.settings is not None
                and env.runtime.trust.settings.request_header is not None
                and env.runtime.trust.settings.request_header.allowed_names == ("impostor",)
            )
        )
        assert (await env.call("/metrics", cert=env.pki.aggregator, headers=who))[0] == 401
        assert (await env.call("/metrics", cert=env.pki.wrong_cn, headers=who))[
            0
        ] == 401  # wrong header name now
        assert (await env.call("/metrics", cert=env.pki.wrong_cn, headers=[("X-Proxy-User", "alice")]))[
            0
        ] == 200

        # A new front-proxy CA: the old aggregator certificate stops working, the new one works.
        import trustme

        new_ca = trustme.CA()
        new_aggregator = new_ca.issue_cert("front-proxy-client", common_name="front-proxy-client")
        env.fake.update(
            env.pki.configmap(**{"requestheader-client-ca-file": new_ca.cert_pem.bytes().decode()})
        )
        await wait_for(
            lambda: (
                env.tls.context.cert_store_stats()["x509_ca"] == 2
                and env.runtime.trust.settings is not None
                and env.runtime.trust.settings.request_header is not None
                and env.runtime.trust.settings.request_header.allowed_names == ("front-proxy-client",)
            )
        )
        assert (await env.call("/metrics", cert=new_aggregator, headers=who))[0] == 200
        with pytest.raises(aiohttp.ClientError):
            await env.call("/metrics", cert=env.pki.aggregator, headers=who)


class _NoObjects:
    def get(self, ref: object) -> None:
        return None

    def presets(self, namespace: str) -> list[object]:
        return []


async def test_caller_access_reviews_each_read_as_the_caller_once(tmp_path: Path) -> None:
    """The tenancy gate's SubjectAccessReviews: the caller's identity, the read's attributes, the
    answers cached as the request's own; refused is kube-apiserver's 403, no answer a 503."""
    from apiserver.auth.access import CallerAccess
    from apiserver.auth.identity import UserInfo
    from apiserver.sources.access import Read

    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="alice", resource="virtualmachinepreferences")
        env.reviews.deny(user="alice", resource="controllerrevisions")
        env.reviews.rules.append(Rule("error", user="alice", resource="persistentvolumeclaims"))
        alice = UserInfo("alice", groups=("system:authenticated",))
        access = CallerAccess(env.runtime.gate, alice)
        pref = Read("get", "instancetype.kubevirt.io", "virtualmachinepreferences", "ns1", "pref")
        rev = Read("get", "apps", "controllerrevisions", "ns1", "rev-1")
        presets = Read("list", "kubevirt.io", "virtualmachineinstancepresets", "ns1")
        assert await access.review(pref) is None
        refusal = await access.review(rev)
        assert refusal is not None and refusal["code"] == 403
        assert refusal["message"] == (
            'controllerrevisions.apps "rev-1" is forbidden: User "alice" cannot get resource '
            '"controllerrevisions" in API group "apps" in the namespace "ns1"'
        )
        refusal = await access.review(presets)
        assert refusal is not None and refusal["message"] == (
            'virtualmachineinstancepresets.kubevirt.io is forbidden: User "alice" cannot list resource '
            '"virtualmachineinstancepresets" in API group "kubevirt.io" in the namespace "ns1"'
        )
        assert await access.review(pref) is None and (await access.review(rev) or {}).get("code") == 403
        asked = [(r["spec"]["user"], r["spec"]["resourceAttributes"]) for r in env.reviews.access_reviews]
        assert asked == [
            ("alice", {"namespace": "ns1", "verb": "get", "group": "instancetype.kubevirt.io",
                       "resource": "virtualmachinepreferences", "name": "pref"}),
            ("alice", {"namespace": "ns1", "verb": "get", "group": "apps", "resource": "controllerrevisions",
                       "name": "rev-1"}),
            ("alice", {"namespace": "ns1", "verb": "list", "group": "kubevirt.io",
                       "resource": "virtualmachineinstancepresets"}),
        ]  # fmt: skip
        pvc = Read("get", "", "persistentvolumeclaims", "ns2", "disk")
        failed = await access.review(pvc)
        assert failed is not None and failed["code"] == 503 and failed["details"]["retryAfterSeconds"] == 3


async def test_authorize_references_checks_the_instancetype_read(tmp_path: Path) -> None:
    from apiserver.auth.config import TrustOptions
    from apiserver.auth.options import AuthOptions
    from tests.support.http_helpers import MemorySource

    instancetype = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "small", "namespace": "ns1"},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}},
    }
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm1", "namespace": "ns1"},
        "spec": {
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": "small"},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }
    options = AuthOptions(trust=TrustOptions(), authorize_references=True)
    async with auth_env(tmp_path, options=options, source=MemorySource([instancetype, vm])) as env:
        env.reviews.deny(user="alice", resource="virtualmachineinstancetypes")
        env.reviews.allow(user="alice")
        who = [("X-Remote-User", "alice")]
        code, _, body = await env.call(EXPAND, cert=env.pki.aggregator, headers=who)
        assert code == 403, body
        assert body["message"].startswith(
            'virtualmachineinstancetypes.instancetype.kubevirt.io "small" is forbidden: '
            'User "alice" cannot get'
        )
        attrs = env.reviews.access_reviews[-1]["spec"]["resourceAttributes"]
        assert attrs == {
            "namespace": "ns1",
            "verb": "get",
            "group": "instancetype.kubevirt.io",
            "resource": "virtualmachineinstancetypes",
            "name": "small",
        }
        env.reviews.rules.clear()
        env.reviews.allow(user="bob")
        code, _, body = await env.call(EXPAND, cert=env.pki.aggregator, headers=[("X-Remote-User", "bob")])
        assert code == 200, body


async def test_trust_settings_arriving_after_the_listener_started_apply_to_new_connections(
    tmp_path: Path,
) -> None:
    """What a deployed server lives through: it listens before the ConfigMap has been read.

    The serving context is built before the trust settings are known, as in ``serve``; the
    certificates of the aggregator and of a client-CA user must then be asked for and believed.
    """
    async with auth_env(tmp_path, configmap=False) as env:
        assert env.runtime.trust.settings is None or env.runtime.trust.settings.request_header is None
        env.fake.create(env.pki.configmap())
        await wait_for(
            lambda: (
                env.runtime.trust.settings is not None
                and env.runtime.trust.settings.request_header is not None
            )
        )
        env.reviews.allow(user="alice", path="/metrics")
        code, _, _ = await env.call("/metrics", cert=env.pki.aggregator, headers=PROXY_HEADERS)
        assert code == 200
        assert env.reviews.access_reviews[-1]["spec"]["user"] == "alice"

        env.reviews.allow(user="carol", path="/metrics")
        code, _, _ = await env.call("/metrics", cert=env.pki.carol)
        assert code == 200
        assert env.reviews.access_reviews[-1]["spec"]["user"] == "carol"


async def test_serving_before_the_configmap_is_read_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The listener starts before the trust ConfigMap has been read (always; for long when kube-apiserver
    is away): one INFO line says what callers meet meanwhile. Trust already known: no such line."""
    caplog.set_level(logging.INFO, logger="apiserver.auth.tls")
    pki = PKI(tmp_path)
    waiting = TrustState(TrustOptions())
    tls = ServingTLS(str(pki.cert_file), str(pki.key_file), trust=waiting)
    await tls.start()
    await tls.close()
    lines = [r.getMessage() for r in caplog.records if "before the trust settings" in r.getMessage()]
    assert lines == [
        "TLS serving starts before the trust settings are known (configmap "
        "kube-system/extension-apiserver-authentication not read yet): client certificates fail the "
        "handshake and other requests get 503 until they are read"
    ]
    assert [r.levelno for r in caplog.records if r.getMessage() in lines] == [logging.INFO]
    caplog.clear()
    known = TrustState(TrustOptions())
    await known.apply_configmap(pki.configmap()["data"])
    tls = ServingTLS(str(pki.cert_file), str(pki.key_file), trust=known)
    await tls.start()
    await tls.close()
    assert not [r for r in caplog.records if "before the trust settings" in r.getMessage()]
