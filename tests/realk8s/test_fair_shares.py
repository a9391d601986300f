"""Issue 24's reproductions 2 and 3 behind the real aggregator: long-running requests are shared per
user, not per address (every request through the aggregator comes from kube-apiserver's), so one user's
watches cannot take the connections everyone needs, and many users holding slow bodies cannot keep a
newcomer's PUT out.

Each test runs a server of its own on the control plane of its own (the fault tests' and test_dos's,
one module after the other), registered and Available, with the flags the issue's reproduction used.
Callers are client certificates of the cluster CA, which kube-apiserver forwards as X-Remote-User.
"""

from __future__ import annotations

import http.client
import json
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.realk8s.controlplane import ControlPlane, Credentials, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import binding, expand_spec, expand_vm_spec, expander_role, store_vm, user
from tests.realk8s.test_collection import RESOURCE, ROLE, wait_listed
from tests.realk8s.test_dos import MIB, body_bytes_held, rss_mib, slow_put

COLLECTION = "/apis/expand.kubevirt-expand.io/v1"


def served(plane: ControlPlane, tmp: Any, *args: str) -> Iterator[DeployedServer]:
    server = DeployedServer(plane, tmp, extra_args=list(args))
    server.install()
    server.start()
    try:
        server.register()
        yield server
    finally:
        server.stop()


@pytest.fixture
def sixty(isolated_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeployedServer]:
    """The deployed server with --max-connections=60, as the issue's reproduction ran it."""
    yield from served(isolated_plane, tmp_path_factory.mktemp("sixty"), "--max-connections=60")


@pytest.fixture
def slow_bodies(
    isolated_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeployedServer]:
    """The deployed server with its default body budget (64Mi), bodies given 30 s to arrive."""
    yield from served(isolated_plane, tmp_path_factory.mktemp("bodies"), "--body-timeout=30s")


class Watch:
    """A watch through kube-apiserver as ``who``: its connection, and the answer's status and stream."""

    def __init__(self, cluster: ControlPlane, who: Credentials, path: str) -> None:
        host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
        self.conn = http.client.HTTPSConnection(host, int(port), context=cluster.ssl_for(who), timeout=30)
        self.conn.request("GET", path)
        self.reply = self.conn.getresponse()
        self.status = self.reply.status
        if self.status != 200:
            self.reply.read()
            self.conn.close()

    def ended(self) -> bool:
        """Whether the stream ends (within the connection's timeout): read to its end."""
        try:
            self.reply.read()
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        self.conn.close()


def can_watch(cluster: ControlPlane, who: Credentials, path: str) -> bool:
    w = Watch(cluster, who, path)
    w.close()
    return w.status == 200


def metric(server: DeployedServer, name: str) -> float:
    admin = server.cluster.pki.admin
    code, body = server.direct("/metrics", cert=(admin.cert_file, admin.key_file))
    assert code == 200
    line = next(x for x in body.decode().splitlines() if x.startswith(f"kubevirt_expand_{name} "))
    return float(line.split()[1])


def test_one_user_s_watches_leave_other_users_their_gets(sixty: DeployedServer) -> None:
    """Item 2: with --max-connections=60, 70 watches by one user through the aggregator. The user gets
    its places (half the connections by default: 30) and 429 beyond; meanwhile another user's GET
    expand-spec is answered every time; a third user's watch takes the place of one of the first user's,
    which ends as at its timeout. Prints the GETs' p50/p99 and the memory per held watch."""
    cluster = sixty.cluster
    namespace = cluster.new_namespace("fair")
    expected = store_vm(cluster, namespace)
    collection_role = {"kind": "ClusterRole", "name": ROLE}
    cluster.apply(
        expander_role(namespace),
        binding(namespace, "getter", {"kind": "Role", "name": "expander"}, user("getter")),
        binding(namespace, "watchers", collection_role, user("watcher"), user("latecomer")),
    )
    wait_listed(cluster, namespace, 1)
    getter, watcher, latecomer = (cluster.pki.client(n) for n in ("getter", "watcher", "latecomer"))
    path = f"{COLLECTION}/namespaces/{namespace}/{RESOURCE}?watch=1&timeoutSeconds=120"
    poll("RBAC in effect", lambda: can_watch(cluster, watcher, path), bool)
    poll(
        "RBAC in effect",
        lambda: cluster.request(expand_spec(namespace), credentials=getter).status,
        lambda code: code == 200,
    )
    # The probe watches' places are given back when the server sees their connections close.
    poll("the probe watches' places given back", lambda: metric(sixty, "watches_held"), lambda n: n == 0)
    before = rss_mib(sixty)
    watches: list[Watch] = []
    try:
        for _ in range(70):
            watches.append(Watch(cluster, watcher, path))
        during = rss_mib(sixty)
        codes = [w.status for w in watches]
        assert codes.count(200) == 30 and set(codes[30:]) == {429}, codes
        assert metric(sixty, "watches_held") == 30
        latencies = []
        for _ in range(40):
            started = time.perf_counter()
            reply = cluster.request(expand_spec(namespace), credentials=getter)
            latencies.append(time.perf_counter() - started)
            assert reply.status == 200 and json.loads(reply.body) == expected
        # A user holding none takes the place of the oldest of the largest holder's watches, whose
        # stream ends as at its timeout; the others go on.
        late = Watch(cluster, latecomer, path)
        watches.append(late)
        assert late.status == 200
        assert watches[0].ended()
        assert metric(sixty, "watches_displaced_total") == 1 and metric(sixty, "watches_held") == 30
        p50, p99 = statistics.median(latencies), max(latencies)
        per_watch = (during - before) * 1024 / 30
        print(f"\n30 watches held, 40 other GETs all 200: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms;")
        print(f"RSS {before:.0f} -> {during:.0f} MiB: {per_watch:.0f} KiB per held watch")
    finally:
        for w in watches:
            w.close()
    sixty.ensure_available()


def test_many_users_holding_slow_bodies_do_not_keep_a_newcomer_out(slow_bodies: DeployedServer) -> None:
    """Item 3: 8 users each declaring 3 MiB PUT bodies and sending nothing, until the budget refuses
    them, then 11 users with 2 MiB ones (the newcomers' quarter): the budget's 64Mi are held. A new user's
    small PUT is admitted (200), and a body of the user holding the most is cut (429) to make room."""
    cluster = slow_bodies.cluster
    namespace = cluster.new_namespace("bodies")
    expected = store_vm(cluster, namespace)
    names = [f"big-{i}" for i in range(8)] + [f"small-{i}" for i in range(11)] + ["newcomer"]
    cluster.apply(
        expander_role(namespace),
        binding(namespace, "expanders", {"kind": "Role", "name": "expander"}, *(user(n) for n in names)),
    )
    creds = {name: cluster.pki.client(name) for name in names}
    path = expand_vm_spec(namespace)
    vm = json.dumps(cluster.get_json("virtualmachine", "vm1", "-n", namespace)).encode()
    json_type = {"Content-Type": "application/json"}

    def put(name: str) -> Any:
        return cluster.request(path, method="PUT", body=vm, credentials=creds[name], headers=json_type)

    poll("RBAC in effect", lambda: put("newcomer").status, lambda code: code == 200)
    log_start = slow_bodies.log_size()
    slow = []
    try:
        # Staggered a little so the bodies arrive in this order (the big users' first); nothing is asserted
        # between two of them, so nothing to wait for: what is waited for is the budget held, below.
        for name in names[:8] * 3:  # three rounds of 3 MiB each: 48 MiB for callers already holding
            slow.append(slow_put(cluster, creds[name], path, 3 * MIB))
            time.sleep(0.05)
        for name in names[8:19]:
            slow.append(slow_put(cluster, creds[name], path, 2 * MIB))
            time.sleep(0.05)
        poll(
            "the budget held", lambda: body_bytes_held(slow_bodies), lambda held: held >= 62 * MIB, timeout=10
        )
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: put("newcomer"), range(3)))
        assert [a.status for a in answers] == [200] * 3, [a.body[:200] for a in answers]
        assert all(json.loads(a.body) == expected for a in answers)
        lines = slow_bodies.wait_log(log_start, lambda line: '"code":429' in line and "big-" in line)
    finally:
        for tls in slow:
            tls.close()
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    cut = [e["user"] for e in entries if e.get("code") == 429]
    assert cut and all(u.startswith("big-") for u in cut), cut
    print(f"\n{len(slow)} slow bodies held 64Mi; newcomer: 3 x 200; cut for it: {cut}")
