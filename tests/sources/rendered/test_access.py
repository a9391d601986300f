"""The tenancy model over the collection's store (apiserver/sources/access.py Reviews): the store renders
every VM with the server's account, inferFromVolume included, and each caller is shown an item, or GET
expand-spec's answer from the store, only after the same SubjectAccessReviews a rendering for them
would have asked (the same cached reviews). Over the fake API server with the real auth middleware;
the same behind kube-apiserver's aggregator: tests/realk8s/test_tenancy.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from apiserver.auth.config import TrustOptions
from apiserver.auth.options import AuthOptions
from apiserver.http.endpoints.expandedvms import REDACTED_MESSAGE
from apiserver.render import ExpandError
from apiserver.sources import reads
from apiserver.sources.access import Read
from apiserver.sources.cluster import ClusterSource
from apiserver.sources.rendered.items import make_item, redacted, same_redacted
from tests.support.auth_fixtures import GROUP, AuthEnv, auth_env
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import instancetype, kubeconfig, obj, preference, stored_vm, synced
from tests.support.patience import patience
from tests.support.revisions import captured, status_ref

NS, OTHER = "ns-a", "ns-b"
SECRET = "top-secret-pvc-label"
ITEMS = "/apis/expand.kubevirt-expand.io/v1/namespaces/ns-a/expandedvirtualmachines"
PVC_READ = Read("get", "", "persistentvolumeclaims", OTHER, "secret-pvc")


def expand_path(name: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{NS}/virtualmachines/{name}/expand-spec"


def vm(name: str, **spec: Any) -> dict[str, Any]:
    template = spec.pop("template", {"spec": {"domain": {"devices": {}}}})
    return obj("VirtualMachine", name, NS, api="kubevirt.io/v1", spec={"template": template, **spec})


PLAIN = vm(
    "plain",
    instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a"},
    preference={"kind": "VirtualMachinePreference", "name": "pref-a"},
)
INFERRING = vm(
    "inferring",
    instancetype={"inferFromVolume": "root"},
    template={
        "spec": {"domain": {"devices": {}}, "volumes": [{"name": "root", "dataVolume": {"name": "dv"}}]}
    },
    dataVolumeTemplates=[
        {"metadata": {"name": "dv"}, "spec": {"source": {"pvc": {"namespace": OTHER, "name": "secret-pvc"}}}}
    ],
)
# The PVC's labels name the instancetype; the mark shows if anything of the PVC leaks.
PVC = obj(
    "PersistentVolumeClaim",
    "secret-pvc",
    OTHER,
    api="v1",
    metadata={
        "labels": {
            "instancetype.kubevirt.io/default-instancetype": "it-a",
            "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineInstancetype",
            "mark": SECRET,
        }
    },
)


@asynccontextmanager
async def served(
    tmp_path: Path, *, all_references: bool = False, extra: tuple[dict[str, Any], ...] = ()
) -> AsyncIterator[tuple[AuthEnv, Any]]:
    """The auth middleware over a ClusterSource with the VM cache (the Deployment's flags), its store
    rendered; SubjectAccessReviews answered by ``env.reviews`` rules the test adds."""
    async with served_on(tmp_path, all_references=all_references, extra=extra) as (env, store, _):
        yield env, store


@asynccontextmanager
async def served_on(
    tmp_path: Path, *, all_references: bool = False, extra: tuple[dict[str, Any], ...] = ()
) -> AsyncIterator[tuple[AuthEnv, Any, FakeKube]]:
    """:func:`served`, with the fake API server the source reads (to change objects under it)."""
    async with FakeKube() as data:
        for item in (
            instancetype("it-a", NS, cpus=2),
            preference("pref-a", NS),
            PVC,
            PLAIN,
            INFERRING,
            *extra,
        ):
            if item["kind"] == "VirtualMachine":
                stored_vm(data, item)  # its status as virt-controller writes it, through /status
            else:
                data.create(item)
        source = ClusterSource(  # type: ignore[arg-type]
            kubeconfig=kubeconfig(data, tmp_path / "kc"), vm_cache=True, backoff=(0.02, 0.2), read_timeout=2.0
        )
        options = AuthOptions(trust=TrustOptions(), authorize_references=all_references)
        async with auth_env(tmp_path, options=options, source=source) as env:
            await synced(source, data)
            assert source.rendered is not None
            await asyncio.wait_for(source.rendered.ready.wait(), patience(5))
            yield env, source.rendered, data


async def call(env: AuthEnv, user: str, path: str, **kw: Any) -> tuple[int, Any]:
    headers = [("X-Remote-User", user), ("Content-Type", "application/json")]
    code, _, body = await env.call(path, cert=env.pki.aggregator, headers=headers, **kw)
    return code, body


def allow_expand_and_list(env: AuthEnv, user: str) -> None:
    env.reviews.allow(user=user, resource="virtualmachines", subresource="expand-spec", namespace=NS)
    env.reviews.allow(user=user, resource="expand-vm-spec", namespace=NS)
    env.reviews.allow(user=user, resource="expandedvirtualmachines", namespace=NS)


def by_name(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["metadata"]["name"]: i for i in listing["items"]}


async def test_the_store_renders_inferfromvolume_with_its_own_account_and_shows_it_per_caller(
    tmp_path: Path,
) -> None:
    """The store's rendering of a VM whose instancetype comes from a PVC succeeds (it is the server's
    cache); alice, who may not get that PVC, gets the item without the rendering (Rendered=Unknown,
    Forbidden), nothing of the PVC in it; carol, who may, gets it whole. A VM that reads only its
    instancetype and preference is whole for both."""
    async with served(tmp_path) as (env, store):
        item = store._items[(NS, "inferring")]
        assert item.error is None and item.rendered is not None
        assert item.reviews.model == (PVC_READ,)
        assert store._items[(NS, "plain")].reviews.model == ()
        for user in ("alice", "carol"):
            allow_expand_and_list(env, user)
        env.reviews.allow(user="carol", resource="persistentvolumeclaims", namespace=OTHER, name="secret-pvc")

        code, listing = await call(env, "alice", ITEMS)
        assert code == 200, listing
        items = by_name(listing)
        assert items["plain"] == json.loads(store._items[(NS, "plain")].body)
        hidden = items["inferring"]
        assert "virtualMachine" not in hidden and "cpu" not in hidden["summary"]
        [condition] = hidden["status"]["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "Rendered",
            "Unknown",
            "Forbidden",
        )
        assert condition["message"] == REDACTED_MESSAGE  # the same whatever was read, or exists
        assert SECRET not in json.dumps(listing) and "secret-pvc" not in condition["message"]
        asked = [
            r["spec"]["resourceAttributes"]
            for r in env.reviews.access_reviews
            if r["spec"]["user"] == "alice"
        ]
        assert {
            "namespace": OTHER,
            "verb": "get",
            "resource": "persistentvolumeclaims",
            "name": "secret-pvc",
        } in asked

        code, listing = await call(env, "carol", ITEMS)
        assert code == 200 and by_name(listing)["inferring"] == json.loads(item.body)
        # One item (GET on the collection) follows the same rule.
        code, one = await call(env, "alice", f"{ITEMS}/inferring")
        assert code == 200 and "virtualMachine" not in one and SECRET not in json.dumps(one)
        code, one = await call(env, "carol", f"{ITEMS}/inferring")
        assert code == 200 and one == json.loads(item.body)


async def test_get_expand_spec_of_an_inferring_vm_needs_the_pvc_review_as_a_fresh_rendering_does(
    tmp_path: Path,
) -> None:
    """GET expand-spec never hands out the store's rendering of an inferFromVolume VM: alice gets the
    403 for the PVC read that a rendering for her meets (the same as PUT of the same VM, which renders
    on request), every time (the dispatcher's shortcut included); carol gets the rendering."""
    async with served(tmp_path) as (env, store):
        for user in ("alice", "carol"):
            allow_expand_and_list(env, user)
        env.reviews.allow(user="carol", resource="persistentvolumeclaims", namespace=OTHER, name="secret-pvc")
        put_code, put_body = await call(
            env, "alice", f"/apis/{GROUP}/v1/namespaces/{NS}/expand-vm-spec", method="PUT", body=INFERRING
        )
        assert put_code == 403, put_body
        assert put_body["message"].startswith(
            'persistentvolumeclaims "secret-pvc" is forbidden: User "alice"'
        )
        for _ in range(3):
            code, body = await call(env, "alice", expand_path("inferring"))
            assert (code, body) == (put_code, put_body)
            assert SECRET not in json.dumps(body)
        code, body = await call(env, "carol", expand_path("inferring"))
        assert code == 200 and body == json.loads(store._items[(NS, "inferring")].rendered)


async def test_authorize_references_reviews_the_store_served_get_and_each_list_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --authorize-references the store still answers GET expand-spec (nothing is rendered for
    the request), but only after the caller passes the review of each object the rendering read, in
    the order a rendering for them would ask: bob, who may not get the instancetype, gets its 403 on
    every GET (never the store's answer from the dispatcher's shortcut) and the item without the
    rendering in a list; dave, who may get everything, gets the store's answer."""
    async with served(tmp_path, all_references=True) as (env, store):
        item = store._items[(NS, "plain")]
        assert [r.resource for r in item.reviews.every] == [
            "virtualmachineinstancetypes",
            "virtualmachinepreferences",
        ]

        async def no_rendering(*_a: Any, **_k: Any) -> Any:
            raise AssertionError("GET expand-spec rendered instead of answering from the store")

        monkeypatch.setattr(reads, "render_and_record", no_rendering)
        for user in ("bob", "dave"):
            allow_expand_and_list(env, user)
        env.reviews.allow(user="dave", namespace=NS)
        env.reviews.allow(user="bob", resource="virtualmachinepreferences", namespace=NS)
        for _ in range(3):
            code, body = await call(env, "bob", expand_path("plain"))
            assert code == 403, body
            assert body["message"].startswith(
                'virtualmachineinstancetypes.instancetype.kubevirt.io "it-a" is forbidden: User "bob" cannot get'
            )
        code, body = await call(env, "dave", expand_path("plain"))
        assert code == 200 and body == json.loads(item.rendered or b"")
        code, listing = await call(env, "bob", ITEMS)
        hidden = by_name(listing)["plain"]
        assert "virtualMachine" not in hidden and hidden["status"]["conditions"][0]["reason"] == "Forbidden"
        assert "source" not in hidden["summary"]["instancetype"]
        code, listing = await call(env, "dave", ITEMS)
        assert by_name(listing)["plain"] == json.loads(item.body)


# A VM pinned to a revision of it-a taken before it-a was edited (1 vCPU then, 2 now): stale.
OLD_REVISION = captured("pinned", NS, instancetype("it-a", NS, cpus=1))
PINNED = obj(
    "VirtualMachine",
    "pinned",
    NS,
    api="kubevirt.io/v1",
    spec={
        "template": {"spec": {"domain": {"devices": {}}}},
        "instancetype": {"kind": "VirtualMachineInstancetype", "name": "it-a"},
    },
    status={
        "instancetypeRef": status_ref({"kind": "VirtualMachineInstancetype", "name": "it-a"}, OLD_REVISION)
    },
)


async def test_drift_is_shown_and_selected_only_for_who_may_read_the_live_object(tmp_path: Path) -> None:
    """With --authorize-references, whether a pinned VM is stale comes from the live instancetype, which
    its rendering did not read: the item's reviews include that read. bob, who may get the revision but
    not the instancetype, gets the item redacted with nothing of its drift, and a selector on
    status.stale (true or false) never selects it; dave gets it whole and selected."""
    async with served(tmp_path, all_references=True, extra=(OLD_REVISION, PINNED)) as (env, store):
        item = store._items[(NS, "pinned")]
        assert [r.resource for r in item.reviews.every] == [
            "controllerrevisions",
            "virtualmachineinstancetypes",
        ]
        assert json.loads(item.body)["summary"]["stale"] is True
        for user in ("bob", "dave"):
            allow_expand_and_list(env, user)
        env.reviews.allow(user="dave", namespace=NS)
        env.reviews.allow(user="bob", resource="controllerrevisions", namespace=NS)
        env.reviews.allow(user="bob", resource="virtualmachinepreferences", namespace=NS)

        code, listing = await call(env, "dave", f"{ITEMS}?fieldSelector=status.stale%3Dtrue")
        assert code == 200 and list(by_name(listing)) == ["pinned"]
        assert by_name(listing)["pinned"] == json.loads(item.body)

        code, listing = await call(env, "bob", ITEMS)
        hidden = by_name(listing)["pinned"]
        assert "stale" not in hidden["summary"] and "stale" not in hidden["summary"]["instancetype"]
        assert [c["type"] for c in hidden["status"]["conditions"]] == ["Rendered"]
        for wanted in ("true", "false"):
            code, listing = await call(env, "bob", f"{ITEMS}?fieldSelector=status.stale%3D{wanted}")
            assert code == 200 and "pinned" not in by_name(listing), wanted
        # A selector on what the VM itself says (its matcher) selects it, redacted.
        code, listing = await call(env, "bob", f"{ITEMS}?fieldSelector=spec.instancetype.name%3Dit-a")
        assert sorted(by_name(listing)) == ["pinned", "plain"]
        # GET expand-spec of the pinned VM reads only its revision, as KubeVirt's does: bob, who may get
        # the revision, gets the rendering whole, though not the drift the collection compares.
        assert [r.resource for r in item.get_reviews.every] == ["controllerrevisions"]
        code, body = await call(env, "bob", expand_path("pinned"))
        assert code == 200 and body == json.loads(item.rendered or b""), body


# -- a redacted item is a fixed point (issue 37, finding 1) ------------------------------------------------

# A VM of ns-a whose instancetype is inferred from a PVC of ns-b, whose label names an instancetype of ns-a
# that does not exist yet: the store's rendering depends on it, so creating it re-renders the VM.
PROBE_PVC = obj(
    "PersistentVolumeClaim",
    "probe-pvc",
    OTHER,
    api="v1",
    metadata={
        "labels": {
            "instancetype.kubevirt.io/default-instancetype": "it-hidden-3",
            "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineInstancetype",
        }
    },
)
PROBING = vm(
    "probing",
    instancetype={"inferFromVolume": "root"},
    template={
        "spec": {"domain": {"devices": {}}, "volumes": [{"name": "root", "dataVolume": {"name": "dv"}}]}
    },
    dataVolumeTemplates=[
        {"metadata": {"name": "dv"}, "spec": {"source": {"pvc": {"namespace": OTHER, "name": "probe-pvc"}}}}
    ],
)
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def watch_events(env: AuthEnv, user: str, path: str, seconds: int) -> list[dict[str, Any]]:
    """The events of a watch of ``path`` as ``user`` for ``seconds``."""
    headers = [("X-Remote-User", user)]
    async with env.session(env.pki.aggregator) as session:
        url = f"{env.url}{path}&watch=1&timeoutSeconds={seconds}"
        async with session.get(url, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            return [json.loads(line) for line in (await resp.read()).splitlines() if line.strip()]


async def versions_seen(env: AuthEnv, user: str) -> tuple[str, str, str, str]:
    """The probing item's resourceVersion in a list, a get, a Table row and a Table get, as ``user``."""
    _, listing = await call(env, user, ITEMS)
    _, one = await call(env, user, f"{ITEMS}/probing")
    headers = [("X-Remote-User", user), ("Accept", TABLE)]
    _, _, rows = await env.call(ITEMS, cert=env.pki.aggregator, headers=headers)
    _, _, row = await env.call(f"{ITEMS}/probing", cert=env.pki.aggregator, headers=headers)
    [in_rows] = [r for r in rows["rows"] if r["cells"][0] == "probing"]
    return (
        by_name(listing)["probing"]["metadata"]["resourceVersion"],
        one["metadata"]["resourceVersion"],
        in_rows["object"]["metadata"]["resourceVersion"],
        row["metadata"]["resourceVersion"],
    )


async def test_a_redacted_item_does_not_move_when_only_what_its_caller_may_not_read_changes(
    tmp_path: Path,
) -> None:
    """alice may not get ns-b's PVC; creating instancetypes it-hidden-1..5 in her namespace re-renders the
    VM inferring from it only for it-hidden-3 (the PVC's label). carol, who may get the PVC, sees that
    event; alice sees none, and the item's resourceVersion in her list, get and Tables stays the same,
    so she learns nothing of the PVC's label. A change of the VM itself (a label) still reaches her, with
    a new version, and a watch from her item's version is answered (the version is a real one)."""
    async with served_on(tmp_path, extra=(PROBE_PVC, PROBING)) as (env, store, data):
        for user in ("alice", "carol"):
            allow_expand_and_list(env, user)
        env.reviews.allow(user="carol", resource="persistentvolumeclaims", namespace=OTHER, name="probe-pvc")
        before = await versions_seen(env, "alice")
        assert len(set(before)) == 1, before
        renders = store.renders
        _, listing = await call(env, "alice", ITEMS)
        since = listing["metadata"]["resourceVersion"]
        watches = [
            asyncio.ensure_future(watch_events(env, user, f"{ITEMS}?resourceVersion={since}", 3))
            for user in ("alice", "carol")
        ]
        await asyncio.sleep(0.5)
        for n in range(1, 6):
            data.create(instancetype(f"it-hidden-{n}", NS, cpus=n))
        alice_events, carol_events = await asyncio.gather(*watches)
        assert store.renders > renders  # the store did re-render the VM for it-hidden-3
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in carol_events] == [
            ("MODIFIED", "probing")
        ]
        assert carol_events[0]["object"]["summary"]["cpu"]["vcpus"] == 3
        assert alice_events == []
        assert await versions_seen(env, "alice") == before
        # carol is shown the new rendering under its new version.
        _, one = await call(env, "carol", f"{ITEMS}/probing")
        assert one["metadata"]["resourceVersion"] != before[0]

        # What alice may see changes: she gets the event and a new version.
        watch = asyncio.ensure_future(watch_events(env, "alice", f"{ITEMS}?resourceVersion={before[0]}", 3))
        await asyncio.sleep(0.5)
        changed = json.loads(json.dumps(PROBING))
        changed["metadata"]["labels"] = {"team": "a"}
        data.update(changed)
        events = [e for e in await watch if e["object"]["metadata"]["name"] == "probing"]
        assert [e["type"] for e in events] == ["MODIFIED"], events
        assert events[0]["object"]["metadata"]["labels"] == {"team": "a"}
        assert "virtualMachine" not in events[0]["object"]
        after = await versions_seen(env, "alice")
        assert len(set(after)) == 1 and after != before


def test_what_redaction_leaves_decides_whether_two_renderings_look_the_same_redacted() -> None:
    """The store keeps a redacted item's version when a new rendering looks the same redacted: the same VM
    (a dependency changed), or a VM that changed only where redaction does not show (its status, a
    matcher's revisionName); not when its labels or matchers change."""

    def item(machine: dict[str, Any], version: str = "1") -> Any:
        error = ExpandError.invalid("a rendering that failed")
        return make_item((NS, machine["metadata"]["name"]), machine, None, error, (), {}, version)

    base = json.loads(json.dumps(PLAIN))
    first = item(base)
    assert same_redacted(first, item(base, "2"))
    for change, same in (
        (lambda m: m.update(status={"printableStatus": "Running"}), True),
        (lambda m: m["spec"]["instancetype"].update(revisionName="rev-1"), True),
        (lambda m: m["metadata"].update(labels={"team": "b"}), False),
        (lambda m: m["spec"]["preference"].update(name="pref-b"), False),
    ):
        changed = json.loads(json.dumps(base))
        change(changed)
        assert same_redacted(first, item(changed, "2")) is same, changed
        assert (redacted(first, "") == redacted(item(changed, "2"), "")) is same
