"""The fake API server (tests/fakekube) against a real kube-apiserver, request by request, in raw HTTP.

The same objects are written to both, the same request is sent to both, and what our clients depend on
is compared: status code, Content-Type, the Status' kind/reason/code/details and message (namespace,
names and numbers made neutral), list metadata, watch events. Each behaviour here was once a difference
(see "The fake API server and the real one" in docs/development.md), fixed in the fake.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.realk8s.controlplane import ControlPlane
from tests.support.clusters import LIMIT_RANGES, RESOURCES, Cluster, FakeCluster, RealCluster
from tests.support.fakekube import FakeKube
from tests.support.fakekube.reviews import Reviews
from tests.support.fakekube.testing import obj

IT = "instancetype.kubevirt.io/v1beta1"
IT_PATH = "/apis/instancetype.kubevirt.io/v1beta1"


@dataclass
class Answer:
    status: int
    content_type: str  # the header as sent
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Side:
    """One API server: the cluster (for writes) and a raw HTTP session as its admin."""

    cluster: Cluster
    url: str
    http: aiohttp.ClientSession

    @property
    def ns(self) -> str:
        return self.cluster.namespace

    async def call(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        async with self.http.request(
            method, self.url + path, params=params, json=body, headers=headers
        ) as resp:
            return Answer(
                resp.status, resp.headers.get("Content-Type", ""), dict(resp.headers), await resp.read()
            )

    async def watch(
        self, path: str, params: dict[str, str], seconds: float, opened: asyncio.Event | None = None
    ) -> tuple[Answer, list[Any]]:
        """The events of one watch, read for at most ``seconds`` (the server's ``timeoutSeconds`` ends it);
        ``opened`` is set once its answer's head is in: both servers send it once the watch is registered
        (kube-apiserver's watch handler writes it after the watch cache took the watcher; the fake after
        adding its watch), so a change made after that is a live event of the watch."""
        events: list[Any] = []
        async with self.http.get(self.url + path, params={**params, "watch": "true"}) as resp:
            head = Answer(resp.status, resp.headers.get("Content-Type", ""), dict(resp.headers), b"")
            if opened is not None:
                opened.set()
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                try:
                    line = await asyncio.wait_for(resp.content.readline(), left)
                except TimeoutError:
                    break
                if not line:
                    break
                events.append(json.loads(line))
        return head, events

    def neutral(self, text: str) -> str:
        """``text`` without what differs between the two servers by construction."""
        text = text.replace(self.ns, "<ns>").replace(self.cluster.suffix, "<sfx>")
        return re.sub(r"\b\d+\b", "N", text)


def shape(side: Side, answer: Answer) -> dict[str, Any]:
    """What a client of ours may depend on in an answer."""
    out: dict[str, Any] = {"http": answer.status, "content-type": answer.content_type}
    if not answer.content_type.startswith("application/json"):
        out["text"] = answer.body.decode()
        return out
    body = answer.json()
    out["kind"] = body.get("kind")
    if body.get("kind") == "Status":
        out |= {k: body.get(k) for k in ("apiVersion", "status", "reason", "code")}
        out["message"] = side.neutral(str(body.get("message")))
        out["details"] = neutral_strings(side, body.get("details"))
        out["retry-after"] = answer.headers.get("Retry-After")
    return out


def neutral_strings(side: Side, value: Any) -> Any:
    if isinstance(value, str):
        return side.neutral(value)
    if isinstance(value, dict):
        return {k: neutral_strings(side, v) for k, v in value.items()}
    if isinstance(value, list):
        return [neutral_strings(side, v) for v in value]
    return value


@pytest.fixture
async def sides(
    real_control_plane: ControlPlane, tmp_path: Path
) -> AsyncIterator[tuple[Side, Side, Reviews]]:
    fake = FakeKube([*RESOURCES, LIMIT_RANGES])
    reviews = Reviews.install(fake)
    await fake.start()
    (tmp_path / "fake").mkdir()
    (tmp_path / "real").mkdir()
    fake_cluster = FakeCluster(tmp_path / "fake", fake)
    real_cluster = RealCluster(tmp_path / "real", real_control_plane)
    await real_cluster.start()
    fake_http = aiohttp.ClientSession()
    real_http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=real_control_plane.ssl_for()))
    try:
        yield (
            Side(fake_cluster, fake.url, fake_http),
            Side(real_cluster, real_control_plane.url, real_http),
            reviews,
        )
    finally:
        await fake_http.close()
        await real_http.close()
        await fake_cluster.close()
        await real_cluster.close()


async def on_both(sides: tuple[Side, Side, Reviews], method: str, path: str, **kw: Any) -> dict[str, Any]:
    """Send the request (``{ns}`` in ``path`` is each side's namespace) to both; assert the same shape."""
    fake, real, _ = sides
    got = []
    for side in (fake, real):
        answer = await side.call(method, path.format(ns=side.ns), **kw)
        got.append(shape(side, answer))
    assert got[0] == got[1], f"fake: {got[0]}\nreal: {got[1]}"
    return got[1]


async def create_on_both(sides: tuple[Side, Side, Reviews], *objects: dict[str, Any]) -> None:
    for side in sides[:2]:
        for o in objects:
            o = json.loads(json.dumps(o).replace("{ns}", side.ns))
            await side.cluster.create(o)


def instancetype(name: str) -> dict[str, Any]:
    return obj(
        "VirtualMachineInstancetype", name, "{ns}", spec={"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}}
    )


async def test_missing_objects_are_a_not_found_status(sides: tuple[Side, Side, Reviews]) -> None:
    got = await on_both(sides, "GET", IT_PATH + "/namespaces/{ns}/virtualmachineinstancetypes/nope")
    assert got["http"] == 404 and got["content-type"] == "application/json"
    assert got["message"] == 'virtualmachineinstancetypes.instancetype.kubevirt.io "nope" not found'
    got = await on_both(sides, "GET", "/api/v1/namespaces/{ns}/persistentvolumeclaims/nope")
    assert got["details"] == {"name": "nope", "kind": "persistentvolumeclaims"}


@pytest.mark.parametrize(
    "path",
    [
        "/apis/flavor.kubevirt.io/v1alpha1",  # discovery of a group that is not installed
        "/apis/flavor.kubevirt.io/v1alpha1/virtualmachineflavors",  # its collection
        "/apis/flavor.kubevirt.io/v1alpha1/namespaces/{ns}/virtualmachineflavors/x",  # an object
        "/apis/cdi.kubevirt.io/v1beta1/namespaces/{ns}/datavolumes/x",
        IT_PATH + "/nothings",  # a resource an installed group does not have
        IT_PATH + "/namespaces/{ns}/virtualmachineclusterinstancetypes/x",  # cluster-scoped, in a namespace
        IT_PATH + "/virtualmachineinstancetypes/x",  # namespaced, by name without its namespace
    ],
)
async def test_paths_no_api_serves_are_a_plain_text_404(sides: tuple[Side, Side, Reviews], path: str) -> None:
    got = await on_both(sides, "GET", path)
    assert got == {"http": 404, "content-type": "text/plain; charset=utf-8", "text": "404 page not found\n"}


async def test_discovery_of_the_installed_groups(sides: tuple[Side, Side, Reviews]) -> None:
    """What the cluster source reads to learn whether a kind is installed: the group and its version's
    resources (their name, scope, kind and that they can be listed and watched)."""
    got = []
    for side in sides[:2]:
        group = (await side.call("GET", "/apis/instancetype.kubevirt.io")).json()
        version = await side.call("GET", IT_PATH)
        resources = {
            r["name"]: (
                r["singularName"],
                r["namespaced"],
                r["kind"],
                {"get", "list", "watch"} <= set(r["verbs"]),
            )
            for r in version.json()["resources"]
        }
        got.append((group, version.content_type, version.json()["groupVersion"], resources))
    assert got[0] == got[1], f"fake: {got[0]}\nreal: {got[1]}"


async def test_lists_and_their_metadata(sides: tuple[Side, Side, Reviews]) -> None:
    fake, real, _ = sides
    await create_on_both(sides, instancetype("a"), instancetype("b"))
    for side in (fake, real):
        for kind in ("cm-a", "cm-b"):
            await side.cluster.create(obj("ConfigMap", kind, side.ns, api="v1"))
    shapes = []
    for side in (fake, real):
        out: dict[str, Any] = {}
        for what, path in (
            ("cr", f"{IT_PATH}/namespaces/{side.ns}/virtualmachineinstancetypes"),
            ("builtin", f"/api/v1/namespaces/{side.ns}/configmaps"),
        ):
            whole = await side.call("GET", path)
            page1 = await side.call("GET", path, {"limit": "1"})
            cont = page1.json()["metadata"]["continue"]
            page2 = await side.call("GET", path, {"limit": "1", "continue": cont})
            out[what] = {
                "content-type": whole.content_type,
                "kind": whole.json()["kind"],
                "metadata": sorted(whole.json()["metadata"]),
                "continue": whole.json()["metadata"].get("continue"),
                "item keys": sorted({k for i in whole.json()["items"] for k in i}),
                "page1": (sorted(page1.json()["metadata"]), page1.json()["metadata"]["remainingItemCount"]),
                "page2": (
                    sorted(page2.json()["metadata"]),
                    [i["metadata"]["name"] for i in page2.json()["items"]],
                ),
            }
        shapes.append(out)
    assert shapes[0] == shapes[1], f"fake: {shapes[0]}\nreal: {shapes[1]}"
    assert shapes[1]["cr"]["continue"] == "" and "continue" not in shapes[1]["builtin"]["metadata"]
    assert "kind" in shapes[1]["cr"]["item keys"] and "kind" not in shapes[1]["builtin"]["item keys"]


async def test_bad_continue_tokens_and_field_labels_are_a_bad_request(
    sides: tuple[Side, Side, Reviews],
) -> None:
    cr = IT_PATH + "/namespaces/{ns}/virtualmachineinstancetypes"
    got = await on_both(sides, "GET", cr, params={"limit": "1", "continue": "garbage"})
    assert got["http"] == 400 and got["reason"] == "BadRequest"
    assert got["message"].startswith("invalid continue token: continue key is not valid: ")
    got = await on_both(sides, "GET", cr, params={"fieldSelector": "spec.cpu=1"})
    assert got["message"] == "field label not supported: spec.cpu"
    got = await on_both(
        sides, "GET", "/api/v1/namespaces/{ns}/configmaps", params={"fieldSelector": "data.x=1"}
    )
    assert (
        got["message"] == '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    # ...and on a watch, before any event.
    got = await on_both(sides, "GET", cr, params={"watch": "true", "fieldSelector": "spec.cpu=1"})
    assert got["http"] == 400
    # The labels every kind supports select on both.
    await create_on_both(sides, instancetype("a"), instancetype("b"))
    for side in sides[:2]:
        found = await side.call("GET", cr.format(ns=side.ns), {"fieldSelector": "metadata.name!=a"})
        assert [i["metadata"]["name"] for i in found.json()["items"]] == ["b"]


async def test_label_selectors(sides: tuple[Side, Side, Reviews]) -> None:
    fake, real, _ = sides
    labelled = {"a": {"env": "prod", "tier": "db"}, "b": {"env": "dev"}, "c": {}}
    for name, labels in labelled.items():
        await create_on_both(sides, obj("ConfigMap", name, "{ns}", api="v1", metadata={"labels": labels}))
    for selector, expected in (
        ("env", ["a", "b"]),
        ("!env", ["c"]),
        ("env=prod", ["a"]),
        ("env==prod,tier", ["a"]),
        ("env!=prod", ["b", "c"]),
        ("env in (dev, qa)", ["b"]),
        ("env notin (dev),!tier", ["c"]),
    ):
        for side in (fake, real):
            found = await side.call(
                "GET", f"/api/v1/namespaces/{side.ns}/configmaps", {"labelSelector": selector}
            )
            names = [i["metadata"]["name"] for i in found.json()["items"]]
            assert names == expected, (side.cluster.name, selector, names)
    got = []
    for side in (fake, real):
        answer = await side.call(
            "GET", f"/api/v1/namespaces/{side.ns}/configmaps", {"labelSelector": "a===b"}
        )
        body = answer.json()
        got.append(
            (answer.status, body["reason"], body["message"].startswith("unable to parse requirement: "))
        )
    assert got[0] == got[1] == (400, "BadRequest", True)


async def test_a_resource_version_in_the_future(sides: tuple[Side, Side, Reviews]) -> None:
    cr = IT_PATH + "/namespaces/{ns}/virtualmachineinstancetypes"
    future = {"resourceVersion": "999999999"}
    got = await on_both(sides, "GET", cr, params=future)
    assert got["http"] == 504 and got["reason"] == "Timeout" and got["retry-after"] == "1"
    assert got["message"] == "Timeout: Too large resource version: N, current: N"
    assert got["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    await on_both(sides, "GET", cr + "/x", params=future)
    got = await on_both(sides, "GET", cr, params={**future, "resourceVersionMatch": "Exact"})
    assert got["http"] == 500 and got["message"] == "etcdserver: mvcc: required revision is a future revision"


async def test_a_watch_sees_create_change_and_delete_with_rising_versions(
    sides: tuple[Side, Side, Reviews],
) -> None:
    """What the cluster source's caches rely on: ADDED, MODIFIED, DELETED in order, each with a newer
    resourceVersion (the DELETED object's is the deletion's own), and a spec change bumping generation."""

    async def events(side: Side) -> list[tuple[str, int, bool]]:
        path = f"{IT_PATH}/namespaces/{side.ns}/virtualmachineinstancetypes"
        listed = (await side.call("GET", path)).json()["metadata"]["resourceVersion"]

        opened = asyncio.Event()

        async def write() -> None:
            await opened.wait()  # the changes are live events of the watch
            await side.cluster.create(json.loads(json.dumps(instancetype("a")).replace("{ns}", side.ns)))
            changed = json.loads(json.dumps(instancetype("a")).replace("{ns}", side.ns))
            changed["spec"]["cpu"]["guest"] = 2
            await side.cluster.replace(changed)
            await side.cluster.delete(IT, "VirtualMachineInstancetype", "a", side.ns)

        (_, seen), _ = await asyncio.gather(
            side.watch(path, {"resourceVersion": listed, "timeoutSeconds": "2"}, 4, opened), write()
        )
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in seen]
        after = int((await side.call("GET", path)).json()["metadata"]["resourceVersion"])
        assert rvs == sorted(set(rvs)) and rvs[-1] <= after, (side.cluster.name, rvs, after)
        return [
            (e["type"], e["object"]["metadata"]["generation"], e["object"]["spec"]["cpu"]["guest"])
            for e in seen
        ]

    got = await asyncio.gather(events(sides[0]), events(sides[1]))
    assert got[0] == got[1] == [("ADDED", 1, 1), ("MODIFIED", 2, 2), ("DELETED", 2, 2)]


async def test_watching_from_a_version_not_reached_yet_is_silent(sides: tuple[Side, Side, Reviews]) -> None:
    """No error, no event: the watch waits (until its timeout) for a version the server has not reached."""

    async def watch(side: Side) -> tuple[int, str, list[Any]]:
        path = f"{IT_PATH}/namespaces/{side.ns}/virtualmachineinstancetypes"
        params = {"resourceVersion": "999999999", "timeoutSeconds": "2", "allowWatchBookmarks": "true"}
        head, seen = await side.watch(path, params, 4)
        return head.status, head.content_type, seen

    got = await asyncio.gather(watch(sides[0]), watch(sides[1]))
    assert got[0] == got[1] == (200, "application/json", [])


async def test_watching_from_before_a_restart_is_410_expired(sides: tuple[Side, Side, Reviews]) -> None:
    """A version from before the API server (re)started its watch cache: the ERROR event with 410."""
    fake, real, _ = sides
    await create_on_both(sides, instancetype("a"), instancetype("b"))
    assert isinstance(fake.cluster, FakeCluster)
    await fake.cluster.fake.stop()
    await fake.cluster.fake.start()  # the real one started before this test: version 1 is older
    got = []
    for side in (fake, real):
        path = f"{IT_PATH}/namespaces/{side.ns}/virtualmachineinstancetypes"
        head, events = await side.watch(path, {"resourceVersion": "1", "timeoutSeconds": "2"}, 5)
        got.append(
            (
                head.status,
                head.content_type,
                [(e["type"], neutral_strings(side, e["object"])) for e in events],
            )
        )
    assert got[0] == got[1], f"fake: {got[0]}\nreal: {got[1]}"
    status, content_type, events = got[1]
    assert (status, content_type) == (200, "application/json") and [t for t, _ in events] == ["ERROR"]
    assert events[0][1] == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "too old resource version: N (N)",
        "reason": "Expired",
        "code": 410,
    }


async def bookmark_cases(side: Side) -> dict[str, Any]:
    """The events of four watches of a kind nobody else writes (each ended by a 3 s timeout)."""
    path = f"/api/v1/namespaces/{side.ns}/limitranges"
    spec = {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}
    params = {"allowWatchBookmarks": "true", "timeoutSeconds": "3"}

    async def watch(rv: str, opened: asyncio.Event | None = None) -> list[tuple[str, str, str]]:
        _, events = await side.watch(path, {**params, "resourceVersion": rv}, 5, opened)
        return [(e["type"], e["object"]["kind"], e["object"]["metadata"]["resourceVersion"]) for e in events]

    opened = asyncio.Event()

    async def create_soon() -> str:
        await opened.wait()  # made while the "live" watch is open
        made = await side.cluster.create(obj("LimitRange", "lr", side.ns, api="v1", spec=spec))
        return str(made["metadata"]["resourceVersion"])

    listed = (await side.call("GET", path)).json()["metadata"]["resourceVersion"]
    quiet = await watch(listed)
    live, rv = await asyncio.gather(watch(listed, opened), create_soon())
    since, replayed = await asyncio.gather(watch(rv), watch(listed))

    def neutral(events: list[tuple[str, str, str]]) -> list[tuple[str, str, bool]]:
        return [(t, k, v == rv) for t, k, v in events]

    # Real sends one or two bookmarks (2 s before the timeout, then as the watch ends): one is enough.
    return {
        "quiet": quiet,
        "live": sorted(set(neutral(live))),
        "since it changed": since,
        "replayed": neutral(replayed),
    }


async def test_bookmarks_only_with_a_version_newer_than_the_watch_has(
    sides: tuple[Side, Side, Reviews],
) -> None:
    """kube-apiserver bookmarks a watch (every minute, and 2 s before its timeout) only with a version of
    the kind newer than the watch's own (its resourceVersion, or the last event replayed to it): a kind
    that did not change since gets no line at all, one that changed while watched gets bookmarks with its
    last change's version."""
    fake, real, _ = sides
    got = await asyncio.gather(bookmark_cases(fake), bookmark_cases(real))
    assert got[0] == got[1], f"fake: {got[0]}\nreal: {got[1]}"
    assert got[1] == {
        "quiet": [],
        "live": [("ADDED", "LimitRange", True), ("BOOKMARK", "LimitRange", True)],
        "since it changed": [],
        "replayed": [("ADDED", "LimitRange", True)],
    }


async def test_token_reviews(sides: tuple[Side, Side, Reviews]) -> None:
    path = "/apis/authentication.k8s.io/v1/tokenreviews"
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    fake, real, _ = sides
    answers = []
    for side in (fake, real):
        answer = await side.call("POST", path, body={**review, "spec": {"token": "not-a-token"}})
        answers.append((answer.status, answer.content_type, answer.json()["status"]))
    assert (
        answers[0] == answers[1] == (201, "application/json", {"user": {}, "error": "invalid bearer token"})
    )
    got = await on_both(sides, "POST", path, body={**review, "spec": {}})
    assert got["http"] == 400 and got["message"] == "token is required for TokenReview in authentication"


async def test_subject_access_reviews(sides: tuple[Side, Side, Reviews]) -> None:
    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview"}
    got = await on_both(sides, "POST", path, body={**review, "spec": {"user": "alice"}})
    assert got["http"] == 422 and got["reason"] == "Invalid"
    assert got["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
            "field": "spec.resourceAttributes",
        }
    ]
    attrs = {"verb": "get", "group": "subresources.kubevirt.io", "resource": "virtualmachines"}
    fake, real, _ = sides
    answers = []
    for side in (fake, real):
        answer = await side.call(
            "POST", path, body={**review, "spec": {"user": "alice", "resourceAttributes": attrs}}
        )
        answers.append((answer.status, answer.content_type, answer.json()["status"]))
    assert answers[0] == answers[1] == (201, "application/json", {"allowed": False})


async def test_rbac_refusals(sides: tuple[Side, Side, Reviews], real_control_plane: ControlPlane) -> None:
    """A user RBAC allows only listing instancetypes: 403 Forbidden for anything else, in kube-apiserver's
    words; discovery stays open."""
    fake, real, _ = sides
    rules = [("instancetype.kubevirt.io", "virtualmachineinstancetypes", ("list",))]
    await fake.cluster.kubeconfig_for("bob", rules)
    await real.cluster.kubeconfig_for("bob", rules)
    creds = real_control_plane.pki.client("bob")
    ctx = real_control_plane.ssl_for(creds)
    as_bob = {
        "fake": Side(fake.cluster, fake.url, fake.http),
        "real": Side(real.cluster, real.url, aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx))),
    }
    headers = {"fake": {"Authorization": "Bearer token-bob"}, "real": {}}
    try:
        for path, expected in (
            (IT_PATH + "/namespaces/{ns}/virtualmachineinstancetypes/x", 403),
            (IT_PATH + "/virtualmachineclusterinstancetypes", 403),
            ("/apis/apps/v1/namespaces/{ns}/controllerrevisions/rev", 403),
            ("/api/v1/namespaces/{ns}/persistentvolumeclaims/disk", 403),
            (IT_PATH + "/namespaces/{ns}/virtualmachineinstancetypes", 200),  # allowed
            (IT_PATH, 200),  # discovery
        ):
            got = []
            for name, side in as_bob.items():
                answer = await side.call("GET", path.format(ns=side.ns), headers=headers[name])
                got.append(shape(side, answer))
            assert got[0] == got[1], f"{path}\nfake: {got[0]}\nreal: {got[1]}"
            assert got[1]["http"] == expected
    finally:
        await as_bob["real"].http.close()


async def test_unauthenticated(sides: tuple[Side, Side, Reviews]) -> None:
    fake, real, _ = sides
    assert isinstance(fake.cluster, FakeCluster)
    fake.cluster.fake.token = "the-token"
    got = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as anonymous:
        for side in (fake, real):
            answer = await Side(side.cluster, side.url, anonymous).call(
                "GET", "/api/v1/namespaces/default/configmaps", headers={"Authorization": "Bearer wrong"}
            )
            got.append(shape(side, answer))
    assert got[0] == got[1]
    assert got[1]["http"] == 401 and got[1]["message"] == "Unauthorized"
