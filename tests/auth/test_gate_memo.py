"""Remembered admissions never outlive what they rest on: review TTLs, trust settings, certificates."""

from __future__ import annotations

import asyncio
import datetime
import json
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from apiserver.auth.cache import DEFAULT_RENEW_WITHIN
from apiserver.auth.config import TrustOptions
from apiserver.auth.options import AuthOptions
from tests.support.auth_fixtures import AuthEnv, auth_env, wait_for
from tests.support.fakekube.reviews import Rule
from tests.support.patience import patience

ALICE = [("X-Remote-User", "alice"), ("X-Remote-Group", "dev")]
BOB = [("X-Remote-User", "bob"), ("X-Remote-Group", "dev")]


def ttl_options(*, allowed: float = 10.0, denied: float = 10.0, token: float = 10.0) -> AuthOptions:
    return AuthOptions(
        trust=TrustOptions(), authorized_ttl=allowed, unauthorized_ttl=denied, token_cache_ttl=token
    )


def rule_for(env: AuthEnv, answer: str, **match: str) -> None:
    env.reviews.rules[:] = [Rule(answer, **match)]  # type: ignore[arg-type]


async def until_status(wanted: int, call: Callable[[], Awaitable[int]], seconds: float = 3.0) -> float:
    """Repeat ``call`` until it answers ``wanted``; return when (monotonic) it first did."""
    deadline = time.monotonic() + patience(seconds)
    while True:
        code = await call()
        if code == wanted:
            return time.monotonic()
        assert time.monotonic() < deadline, f"still {code}, wanted {wanted}"
        await asyncio.sleep(0.02)


async def test_an_allow_is_reused_within_the_authorized_ttl_then_a_deny_for_the_unauthorized_ttl(
    tmp_path: Path,
) -> None:
    ttl = patience(1.0)  # every bound below is a share of it: a slow request must not outlast one
    async with auth_env(tmp_path, options=ttl_options(allowed=ttl, denied=ttl)) as env:
        rule_for(env, "allow", user="alice")
        async with env.session(env.pki.aggregator) as session:

            async def call() -> int:
                async with session.get(env.url + "/metrics", headers=ALICE) as resp:
                    return resp.status

            first = time.monotonic()
            assert await call() == 200
            reviewed = time.monotonic()
            rule_for(env, "deny", user="alice")  # the cluster changes its mind
            while time.monotonic() < first + ttl * 0.6:
                assert await call() == 200  # the allow is cached, as kube-apiserver does
            assert len(env.reviews.access_reviews) == 1
            denied_at = await until_status(403, call)
            # Not before the allow's last fifth, when its use renews it ahead (apiserver/auth/cache.py)
            # and the renewal finds the deny; never after its TTL.
            assert denied_at >= first + ttl * (1 - DEFAULT_RENEW_WITHIN)
            assert denied_at <= reviewed + ttl * 1.05
            assert len(env.reviews.access_reviews) == 2

            rule_for(env, "allow", user="alice")
            allowed_at = await until_status(200, call)  # a deny is never renewed: asked once it expires
            assert allowed_at >= denied_at - 0.05 + ttl * 0.9
            assert len(env.reviews.access_reviews) == 3


async def test_an_allow_in_use_is_renewed_ahead_though_the_memo_answers_every_request(
    tmp_path: Path,
) -> None:
    """Remembered admissions spare the review caches' lookups, not their renewals: requests answered from
    the memo in the last fifth of the allow's time renew it (and the token's review) in the background,
    so the first request after the first allow's TTL finds the renewed one and waits for no review."""
    ttl = patience(1.0)
    async with auth_env(tmp_path, options=ttl_options(allowed=ttl, token=ttl)) as env:
        env.reviews.tokens["tok-1"] = ("dave", [])
        rule_for(env, "allow", user="dave")
        bearer = {"Authorization": "Bearer tok-1"}
        async with env.session() as session:

            async def call() -> int:
                async with session.get(env.url + "/metrics", headers=bearer) as resp:
                    return resp.status

            first = time.monotonic()
            assert await call() == 200
            while time.monotonic() < first + ttl * 0.95:
                assert await call() == 200
            assert len(env.reviews.access_reviews) == 2  # the first, and its renewal ahead
            assert len(env.reviews.token_reviews) == 2
            # Both renewed answers stand past the first ones' time: nothing asked on the way.
            while time.monotonic() < first + ttl * 1.3:
                assert await call() == 200
            assert len(env.reviews.access_reviews) == 2
            assert len(env.reviews.token_reviews) == 2


async def test_a_revoked_token_is_refused_once_its_review_expires(tmp_path: Path) -> None:
    async with auth_env(tmp_path, options=ttl_options(token=0.5)) as env:
        env.reviews.tokens["tok-1"] = ("dave", [])
        rule_for(env, "allow", user="dave")
        bearer = {"Authorization": "Bearer tok-1"}
        async with env.session() as session:

            async def call() -> int:
                async with session.get(env.url + "/metrics", headers=bearer) as resp:
                    return resp.status

            start = time.monotonic()
            assert await call() == 200
            del env.reviews.tokens["tok-1"]
            refused_at = await until_status(401, call)
            # Not before the token's answer is renewed ahead, in the last fifth of its time, while in use
            assert refused_at - start >= 0.5 * (1 - DEFAULT_RENEW_WITHIN)
            assert len(env.reviews.token_reviews) == 2


async def test_a_dropped_review_cache_is_not_outlived_by_the_memo(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        rule_for(env, "allow", user="alice")
        assert (await env.call("/metrics", cert=env.pki.aggregator, headers=ALICE))[0] == 200
        rule_for(env, "deny", user="alice")
        assert (await env.call("/metrics", cert=env.pki.aggregator, headers=ALICE))[0] == 200  # cached
        reviewer = env.runtime.gate.reviewer
        assert reviewer is not None
        reviewer._cache.clear()  # as an eviction would: the next request must be reviewed again
        assert (await env.call("/metrics", cert=env.pki.aggregator, headers=ALICE))[0] == 403


async def test_a_trust_change_applies_to_the_next_request_on_an_open_connection(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        rule_for(env, "allow")
        async with env.session(env.pki.aggregator) as session:

            async def call() -> int:
                async with session.get(env.url + "/metrics", headers=ALICE) as resp:
                    return resp.status

            for _ in range(3):
                assert await call() == 200
            settings = env.runtime.trust.settings
            env.fake.update(
                env.pki.configmap(**{"requestheader-allowed-names": json.dumps(["someone-else"])})
            )
            await wait_for(lambda: env.runtime.trust.settings is not settings)
            assert await call() == 401  # the same connection, certificate and headers: no longer trusted
            env.fake.update(env.pki.configmap())
            await wait_for(
                lambda: (
                    env.runtime.trust.settings is not None
                    and env.runtime.trust.settings.request_header is not None
                    and env.runtime.trust.settings.request_header.allowed_names == ("front-proxy-client",)
                )
            )
            assert await call() == 200


async def test_each_certificate_and_header_set_gets_its_own_decision(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="alice")
        env.reviews.deny(user="bob")
        async with env.session(env.pki.aggregator) as session:
            for who, expected in ((ALICE, 200), (BOB, 403)) * 3:
                async with session.get(env.url + "/metrics", headers=who) as resp:
                    assert resp.status == expected, who
            assert len(env.reviews.access_reviews) == 2
            # One more identity header makes another identity, reviewed on its own.
            env.reviews.rules.insert(0, Rule("deny", user="alice", group="dev", path="/metrics"))
            extra = [*ALICE, ("X-Remote-Extra-Scopes", "x")]
            async with session.get(env.url + "/metrics", headers=extra) as resp:
                assert resp.status == 403
            assert env.reviews.access_reviews[-1]["spec"]["extra"] == {"scopes": ["x"]}
            async with session.get(env.url + "/metrics", headers=ALICE) as resp:
                assert resp.status == 200  # alice without it: still the cached allow
        # The same headers from a certificate the front proxy does not use: not believed.
        for _ in range(2):
            assert (await env.call("/metrics", cert=env.pki.wrong_cn, headers=ALICE))[0] == 401
        # Without a certificate, the same headers plus a token: the token's user, not alice.
        env.reviews.tokens["tok-2"] = ("bob", [])
        code, _, _ = await env.call("/metrics", headers=[*ALICE, ("Authorization", "Bearer tok-2")])
        assert code == 403
        assert env.reviews.access_reviews[-1]["spec"]["user"] == "bob"


async def test_a_front_proxy_certificate_that_expires_on_an_open_connection(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.reviews.allow(user="alice")
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        life = datetime.timedelta(seconds=round(patience(2)))  # the first handshake is done well before
        short = env.pki.front_proxy_ca.issue_cert(
            "front-proxy-client",
            common_name="front-proxy-client",
            not_before=now - datetime.timedelta(minutes=1),
            not_after=now + life,
        )
        connections: list[object] = []
        trace = aiohttp.TraceConfig()

        async def created(*args: object) -> None:
            connections.append(args)

        trace.on_connection_create_end.append(created)
        connector = aiohttp.TCPConnector(ssl=env.client_context(short), limit=1)
        async with aiohttp.ClientSession(connector=connector, trace_configs=[trace]) as session:

            async def call() -> int:
                async with session.get(env.url + "/metrics", headers=ALICE) as resp:
                    return resp.status

            assert await call() == 200
            assert await call() == 200
            await until_status(401, call, seconds=5.0)
            assert datetime.datetime.now(datetime.UTC) > now + life
            assert len(connections) == 1  # one connection: its handshake was long done when it expired


async def test_other_headers_share_a_decision_configured_identity_headers_do_not(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        env.fake.update(
            env.pki.configmap(
                **{
                    "requestheader-username-headers": json.dumps(["X-Proxy-User"]),
                    "requestheader-group-headers": json.dumps(["X-Proxy-Group"]),
                    "requestheader-extra-headers-prefix": json.dumps(["X-Proxy-Extra-"]),
                }
            )
        )
        await wait_for(
            lambda: (
                env.runtime.trust.settings is not None
                and env.runtime.trust.settings.request_header is not None
                and env.runtime.trust.settings.request_header.username_headers == ("X-Proxy-User",)
            )
        )
        env.reviews.allow(user="alice", group="dev")
        env.reviews.deny(user="alice")
        async with env.session(env.pki.aggregator) as session:

            async def call(*headers: tuple[str, str]) -> int:
                async with session.get(env.url + "/metrics", headers=list(headers)) as resp:
                    return resp.status

            alice = ("X-Proxy-User", "alice")
            for n in range(3):  # differing only in headers that carry no identity: one review
                assert await call(alice, ("X-Proxy-Group", "dev"), ("X-Forwarded-For", f"10.0.0.{n}")) == 200
            assert len(env.reviews.access_reviews) == 1
            assert await call(alice, ("X-Proxy-Group", "ops"), ("X-Forwarded-For", "10.0.0.1")) == 403
            assert await call(alice, ("X-Proxy-Group", "dev"), ("X-Proxy-Extra-Scope", "a")) == 200
            assert env.reviews.access_reviews[-1]["spec"]["extra"] == {"scope": ["a"]}
            assert await call(("X-Proxy-User", "bob"), ("X-Proxy-Group", "dev")) == 403
            assert len(env.reviews.access_reviews) == 4


async def test_serving_contexts_refuse_renegotiation_so_a_connection_keeps_its_certificate(
    tmp_path: Path,
) -> None:
    async with auth_env(tmp_path) as env:
        before = env.tls.context
        env.fake.update(env.pki.configmap(**{"requestheader-allowed-names": json.dumps(["x"])}))
        await wait_for(lambda: env.tls.context is not before)
        for ctx in (before, env.tls.context):
            assert ctx.options & ssl.OP_NO_RENEGOTIATION
