"""The trust ConfigMap is kept by list + watch: no reads while nothing changes, changes applied at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes_asyncio.client import ApiClient, Configuration

from apiserver.auth.config import CONFIGMAP_NAME, CONFIGMAP_NAMESPACE, TrustOptions, TrustState
from apiserver.auth.configmap import ConfigMapWatcher
from tests.support.auth_fixtures import PKI, wait_for
from tests.support.fakekube import FakeKube
from tests.support.patience import patience

CM_PATH = f"/api/v1/namespaces/{CONFIGMAP_NAMESPACE}/configmaps"


@dataclass
class Watched:
    fake: FakeKube
    pki: PKI
    trust: TrustState
    applied: list[Mapping[str, str] | None] = field(default_factory=list)
    watcher: ConfigMapWatcher | None = None

    def watched_version(self) -> str:
        """The resourceVersion the watcher would resume from."""
        assert self.watcher is not None
        return str(self.watcher._rv)

    def reads(self) -> list[str]:
        """Every request but the watches: gets and lists of the ConfigMap."""
        return [r.verb for r in self.fake.log if r.resource == "configmaps" and r.verb != "watch"]

    def watches(self) -> list[dict[str, str]]:
        return [r.query for r in self.fake.log if r.resource == "configmaps" and r.verb == "watch"]

    def allowed_names(self) -> tuple[str, ...] | None:
        settings = self.trust.settings
        if settings is None or settings.request_header is None:
            return None
        return settings.request_header.allowed_names


@asynccontextmanager
async def watched(
    tmp_path: Path, *, present: bool = True, bookmark_interval: float = 0.05
) -> AsyncIterator[Watched]:
    fake = FakeKube(bookmark_interval=bookmark_interval)
    pki = PKI(tmp_path)
    if present:
        fake.create(pki.configmap())
    fake.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "kube-system"}}
    )
    await fake.start()
    api = ApiClient(configuration=Configuration(host=fake.url))
    trust = TrustState(TrustOptions())
    env = Watched(fake, pki, trust)

    async def apply(data: Mapping[str, str] | None) -> None:
        env.applied.append(data)
        await trust.apply_configmap(data)

    watcher = ConfigMapWatcher(api, apply, initial_backoff=0.05, max_backoff=0.2)
    env.watcher = watcher
    await watcher.start()
    try:
        await wait_for(lambda: trust.configmap_seen)
        # ...and its watch open: a watch request still on its way would count as a read made later.
        await wait_for(lambda: fake.open_watches == 1)
        yield env
    finally:
        await watcher.close()
        await api.close()
        await fake.stop()


def names_cm(pki: PKI, *names: str) -> dict[str, object]:
    import json

    return pki.configmap(**{"requestheader-allowed-names": json.dumps(list(names))})


async def test_a_warm_server_reads_nothing_while_nothing_changes(tmp_path: Path) -> None:
    async with watched(tmp_path) as env:
        assert env.allowed_names() == ("front-proxy-client",)
        (query,) = env.watches()
        assert query["fieldSelector"] == f"metadata.name={CONFIGMAP_NAME}"
        assert query["allowWatchBookmarks"] == "true"
        assert query["resourceVersion"] == str(env.fake.current_rv)
        assert 300 <= int(query["timeoutSeconds"]) < 600
        # Another ConfigMap in kube-system changing is not this watch's business, but moves it on by a
        # bookmark: once the watcher has its version, it has seen the change and applied nothing.
        env.fake.update(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "other", "namespace": "kube-system"},
            }
        )
        await wait_for(lambda: env.watched_version() == str(env.fake.current_rv))
        assert len(env.applied) == 1
        # Time passing over a live watch is what is tested: bookmarks come every 0.05 s, a watcher that
        # polled, or re-watched on each, would read in this half second.
        await asyncio.sleep(0.5)
        assert env.reads() == ["list"] and len(env.watches()) == 1
        assert len(env.applied) == 1


async def test_changes_apply_from_the_watch_without_a_read(tmp_path: Path) -> None:
    async with watched(tmp_path) as env:
        env.fake.reset_log()
        env.fake.update(names_cm(env.pki, "aggregator-2"))
        took = await wait_for_value(lambda: env.allowed_names() == ("aggregator-2",))
        assert took < patience(1.0)  # from the watch, not a later read
        assert env.reads() == [] and env.watches() == []


async def test_a_missing_configmap_is_watched_for_and_applied_when_created(tmp_path: Path) -> None:
    async with watched(tmp_path, present=False) as env:
        assert env.applied == [None]
        ready, _ = env.trust.readiness()
        assert ready  # as before: no ConfigMap means no front-proxy or client-CA trust, not "not ready"
        assert env.allowed_names() is None
        # Time passing over the open watch (the fixture waited for it) is what is tested: a watcher that
        # polled for the missing ConfigMap would read in this window.
        await asyncio.sleep(0.3)
        assert env.reads() == ["list"]  # no polling while it is missing
        env.fake.create(env.pki.configmap())
        await wait_for(lambda: env.allowed_names() == ("front-proxy-client",), 1.0)
        assert env.reads() == ["list"]


async def test_a_deleted_configmap_keeps_the_last_settings_until_it_returns(tmp_path: Path) -> None:
    async with watched(tmp_path) as env:
        env.fake.delete("v1", "ConfigMap", CONFIGMAP_NAME, CONFIGMAP_NAMESPACE)
        # The watcher has the deletion's event (its version) before the settings are looked at.
        await wait_for(lambda: env.watched_version() == str(env.fake.current_rv))
        assert env.allowed_names() == ("front-proxy-client",)
        env.fake.create(names_cm(env.pki, "back"))
        await wait_for(lambda: env.allowed_names() == ("back",), 1.0)
        assert env.reads() == ["list"]


async def test_a_watch_that_ends_resumes_from_the_last_version_without_listing(tmp_path: Path) -> None:
    async with watched(tmp_path) as env:
        env.fake.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}}
        )
        seen = env.fake.current_rv
        # A change of another ConfigMap is not this watch's, but a bookmark moves its version on.
        await wait_for(lambda: env.watched_version() == str(seen))
        assert env.fake.drop_watches() == 1
        env.fake.update(names_cm(env.pki, "while-away"))  # between two watches: must not be missed
        await wait_for(lambda: env.allowed_names() == ("while-away",), 1.0)
        await wait_for(lambda: len(env.watches()) == 2)
        assert env.reads() == ["list"]
        assert int(env.watches()[1]["resourceVersion"]) == seen


async def test_an_expired_watch_lists_again_and_misses_nothing(tmp_path: Path) -> None:
    async with watched(tmp_path) as env:
        env.fake.update(names_cm(env.pki, "before"))
        await wait_for(lambda: env.allowed_names() == ("before",), 1.0)
        assert env.fake.expire_watches() == 1
        env.fake.update(names_cm(env.pki, "after-compaction"))
        await wait_for(lambda: env.allowed_names() == ("after-compaction",), 1.0)
        assert env.reads() == ["list", "list"]


async def test_errors_back_off_and_recover(tmp_path: Path) -> None:
    fake_errors = 3
    async with watched(tmp_path, present=True) as env:
        env.fake.fail(500, count=fake_errors, verbs=["watch"])
        env.fake.drop_watches()
        # The change is made while the watches fail: after the first refusal.
        await wait_for(lambda: any(r.verb == "watch" and r.status == 500 for r in env.fake.log))
        env.fake.update(names_cm(env.pki, "recovered"))
        await wait_for(lambda: env.allowed_names() == ("recovered",), 3.0)
        failed = [r for r in env.fake.log if r.verb == "watch" and r.status == 500]
        assert len(failed) == fake_errors
        assert env.reads() == ["list"]  # the versions were still good: no list needed


async def test_a_failing_first_list_is_retried_and_readiness_waits(tmp_path: Path) -> None:
    fake = FakeKube()
    pki = PKI(tmp_path)
    fake.create(pki.configmap())
    fake.fail(403, count=2, verbs=["list"])
    await fake.start()
    api = ApiClient(configuration=Configuration(host=fake.url))
    trust = TrustState(TrustOptions())
    watcher = ConfigMapWatcher(api, trust.apply_configmap, initial_backoff=0.1, max_backoff=0.2)
    try:
        await watcher.start()
        await wait_for(lambda: any(r.status == 403 for r in fake.log))
        ready, why = trust.readiness()
        assert not ready and "not read yet" in why
        await wait_for(lambda: trust.loaded, 3.0)
        assert [r.status for r in fake.log if r.verb == "list"] == [403, 403, 200]
    finally:
        await watcher.close()
        await api.close()
        await fake.stop()


async def wait_for_value(predicate: Callable[[], bool], seconds: float = 5.0) -> float:
    """Wait as ``wait_for`` does; return how long it took."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    await wait_for(predicate, seconds)
    return loop.time() - start
