"""Denial of service by callers without credentials, or with only the right to expand (issue 15, items 5-9),
against the server as the Deployment runs it, registered behind the real kube-apiserver's aggregator.

The floods are kept small (a 2-core machine shared with other work): the server runs with smaller limits
than the Deployment's (64 connections, 8 TLS handshakes, an 8Mi body budget, a 3 s body timeout, one
TokenReview a second per address with bursts of 5), so that a few dozen connections reach them. The big
floods, with RSS and latency figures, are ``hack/benchmarks/dos.py``.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.realk8s.controlplane import KUBECTL, ControlPlane, Credentials, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import binding, expand_vm_spec, expander_role, store_vm, user
from tests.realk8s.test_collection import RESOURCE, instancetype, modified_rows, populate, wait_listed
from tests.support.patience import patience

GROUP = "subresources.kubevirt.io"
MIB = 1024 * 1024
LIMITS = [
    "--max-connections=64",
    "--max-tls-handshakes=8",
    "--tls-handshake-timeout=2s",
    "--max-body-bytes-in-flight=8Mi",
    "--body-timeout=3s",
    "--token-review-qps=1",
    "--token-review-burst=5",
]


@pytest.fixture(scope="module")
def guarded(
    isolated_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeployedServer]:
    """The deployed server with smaller limits, on the control plane of its own (the fault tests' too,
    one module after the other), registered and Available."""
    server = DeployedServer(isolated_plane, tmp_path_factory.mktemp("guarded"), extra_args=LIMITS)
    server.install()
    server.start()
    try:
        server.register()
        yield server
    finally:
        server.stop()


def rss_mib(server: DeployedServer) -> float:
    assert server.process is not None
    for line in open(f"/proc/{server.process.pid}/status").read().splitlines():  # noqa: SIM115
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def kubelet_probe(server: DeployedServer, probe: dict[str, Any]) -> tuple[int, bytes]:
    """What a kubelet's httpGet probe does: a new connection to the pod's port, plain HTTP for scheme
    HTTP, its User-Agent, Connection: close, at most ``timeoutSeconds``; 2xx-3xx is success."""
    get = probe["httpGet"]
    assert get["scheme"] == "HTTP"
    ports = {p["name"]: p["containerPort"] for p in server.container["ports"]}
    assert ports[get["port"]] == 8081  # the container's probe port, here at a free port on loopback
    with socket.create_connection(
        ("127.0.0.1", server.probe_port), timeout=probe.get("timeoutSeconds", 1)
    ) as sock:
        sock.sendall(
            f"GET {get['path']} HTTP/1.1\r\nHost: 10.0.0.1:8081\r\nUser-Agent: kube-probe/1.28\r\n"
            "Accept: */*\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def tls_to(port: int, context: ssl.SSLContext, source: str) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(source, 0))
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def hold_every_place(server: DeployedServer, source: str, most: int = 100) -> list[ssl.SSLSocket]:
    """TLS connections from ``source``, opened until the server refuses one (it then holds every place
    the others leave it)."""
    held: list[ssl.SSLSocket] = []
    for _ in range(most):
        try:
            held.append(tls_to(server.port, server.ssl_context(), source))
        except (ConnectionError, ssl.SSLError):
            return held
    raise AssertionError(f"{most} connections from {source} and none refused")


def test_probes_and_the_aggregator_get_through_while_another_address_holds_every_connection(
    guarded: DeployedServer,
) -> None:
    """Items 5 and 6: 127.0.0.2 takes every place the aggregator leaves of the 64 (TLS connections, then
    idle) and opens 30 more that never start TLS. The kubelet's probes (the Deployment's own, on the probe
    port), a new connection from 127.0.0.1 and the aggregator are answered throughout; RSS grows by the
    connections' worth, no more."""
    before = rss_mib(guarded)
    held = hold_every_place(guarded, "127.0.0.2")
    silent = [
        socket.create_connection(("127.0.0.1", guarded.port), source_address=("127.0.0.2", 0))
        for _ in range(30)
    ]
    try:
        # A moment for the server to take in the connections before RSS is read: the window is what is
        # measured. (Its connection count cannot be read without a connection of its own, which would
        # take the place of one of 127.0.0.2's.)
        time.sleep(0.5)
        during = rss_mib(guarded)
        for _ in range(3):
            for probe in ("readinessProbe", "livenessProbe"):
                assert kubelet_probe(guarded, guarded.container[probe]) == (200, b"ok")
            # On the API port too: the new connection takes the place of one of 127.0.0.2's.
            assert guarded.direct("/readyz")[0] == 200
            # A user's request through the aggregator.
            reply = guarded.cluster.request(f"/apis/{GROUP}/v1")
            assert reply.status == 200, reply.body[:300]
            time.sleep(0.5)  # rounds spread over a while: answered throughout, not just once
        print(f"\nRSS {before:.0f} MiB, {during:.0f} MiB with {len(held)} held and 30 silent connections")
        assert len(held) >= 32 and during - before < 30
    finally:
        for sock in (*held, *silent):
            sock.close()
    guarded.ensure_available()


def test_a_watch_through_the_aggregator_lives_through_the_flood_and_past_the_body_timeout(
    guarded: DeployedServer,
) -> None:
    """The collection's watches are long-lived and mostly idle: `kubectl get -w` through kube-apiserver,
    idle through 127.0.0.2's flood (every place it can take, 30 silent connections) and twice the 3 s
    --body-timeout, still shows an instancetype edit as it happens. Neither the pool (its connection
    serves a request) nor the slow-reader rules (it writes nothing while idle) let it go."""
    cluster = guarded.cluster
    namespace = cluster.new_namespace("dos-watch")
    populate(cluster, namespace)
    wait_listed(cluster, namespace, 6)
    assert KUBECTL is not None
    watch = subprocess.Popen(
        [
            *(KUBECTL, "--kubeconfig", str(cluster.admin_kubeconfig), "get", RESOURCE, "-n", namespace),
            *("-w", "--output-watch-events", "--no-headers"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    held: list[ssl.SSLSocket] = []
    silent: list[socket.socket] = []
    try:
        assert watch.stdout is not None
        listed = [watch.stdout.readline() for _ in range(6)]
        assert all(line.startswith("ADDED") for line in listed), listed
        held = hold_every_place(guarded, "127.0.0.2")
        silent = [
            socket.create_connection(("127.0.0.1", guarded.port), source_address=("127.0.0.2", 0))
            for _ in range(30)
        ]
        time.sleep(2 * 3)  # twice --body-timeout, the watch idle
        assert watch.poll() is None, watch.stderr.read() if watch.stderr else ""
        cluster.apply(instancetype(namespace, "small", 4))
        modified = modified_rows(watch, 4, patience(30))
        assert sorted(r[1] for r in modified) == ["vm-0", "vm-1", "vm-2", "vm-3"]
        assert {r[4] for r in modified} == {"4"}
    finally:
        for sock in (*held, *silent):
            sock.close()
        watch.terminate()
        watch.wait(10)
    guarded.ensure_available()


def slow_put(cluster: ControlPlane, who: Credentials, path: str, declared: int) -> ssl.SSLSocket:
    """A PUT through kube-apiserver that declares ``declared`` bytes and sends one."""
    tls = tls_to(int(cluster.url.rsplit(":", 1)[1]), cluster.ssl_for(who), "127.0.0.1")
    tls.sendall(
        f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\n\r\n{{".encode()
    )
    return tls


def body_bytes_held(server: DeployedServer) -> float:
    """kubevirt_expand_body_bytes_held, read from the server's /metrics as the cluster admin."""
    admin = server.cluster.pki.admin
    code, body = server.direct("/metrics", cert=(admin.cert_file, admin.key_file))
    assert code == 200
    line = next(x for x in body.decode().splitlines() if x.startswith("kubevirt_expand_body_bytes_held "))
    return float(line.split()[1])


def test_one_user_holding_slow_bodies_does_not_429_another_through_the_aggregator(
    guarded: DeployedServer,
) -> None:
    """Item 7: alice's slow 3 MiB PUTs, through kube-apiserver, hold her share of the 8Mi budget (one
    body; the second is answered 429); bob's PUTs are answered meanwhile; the server cuts alice's body
    off after the 3 s body timeout (408) and gives her bytes back.

    kube-apiserver does not pass an answer on while its client is still sending the body (Go's server
    cannot write a response while another goroutine reads the request body), so alice herself sees her
    429 and 408 only at kube-apiserver's own timeout: what is asserted is the server's side, its access
    log and its bytes held."""
    cluster = guarded.cluster
    namespace = cluster.new_namespace("dos")
    expected = store_vm(cluster, namespace)
    cluster.apply(
        expander_role(namespace),
        binding(namespace, "expanders", {"kind": "Role", "name": "expander"}, user("alice"), user("bob")),
    )
    alice, bob = cluster.pki.client("alice"), cluster.pki.client("bob")
    path = expand_vm_spec(namespace)
    vm = json.dumps(cluster.get_json("virtualmachine", "vm1", "-n", namespace)).encode()
    json_type = {"Content-Type": "application/json"}

    def bob_puts() -> Any:
        return cluster.request(path, method="PUT", body=vm, credentials=bob, headers=json_type)

    deadline = time.monotonic() + 10
    while (reply := bob_puts()).status == 403:
        assert time.monotonic() < deadline, "RBAC never reached kube-apiserver's authorizer"
        time.sleep(0.1)  # the RoleBinding reaches kube-apiserver's authorizer in a moment
    assert reply.status == 200 and json.loads(reply.body) == expected

    log_start = guarded.log_size()
    slow = [slow_put(cluster, alice, path, 3 * MIB)]
    started = time.monotonic()
    try:
        # Her first body is held at its declared length once its headers are in; the second is refused.
        poll("alice's first body held", lambda: body_bytes_held(guarded), lambda held: held == 3 * MIB)
        slow.append(slow_put(cluster, alice, path, 3 * MIB))  # over her share
        guarded.wait_access(log_start, method="PUT", user="alice", code=429)
        assert body_bytes_held(guarded) == 3 * MIB
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: bob_puts(), range(4)))
        assert [a.status for a in answers] == [200] * 4
        lines = guarded.wait_log(log_start, lambda line: '"code":408' in line and "alice" in line, timeout=15)
        waited = time.monotonic() - started
        assert body_bytes_held(guarded) == 0
    finally:
        for tls in slow:
            tls.close()
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    alices = [(e["code"], e["latency_ms"]) for e in entries if e.get("user") == "alice"]
    assert [code for code, _ in alices] == [429, 408]
    assert alices[0][1] < 1000 and 2900 < alices[1][1] < 15000
    print(f"\nalice: 429 at once, 408 after {alices[1][1] / 1000:.1f}s (seen {waited:.1f}s in); bob: 4 x 200")


def token_reviews(cluster: ControlPlane) -> float:
    """TokenReviews kube-apiserver has answered (its apiserver_request_total)."""
    total = 0.0
    for line in cluster.request("/metrics").body.decode().splitlines():
        if line.startswith("apiserver_request_total{") and 'resource="tokenreviews"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_invented_tokens_cost_a_few_token_reviews_and_a_real_token_still_works(
    guarded: DeployedServer,
) -> None:
    """Item 9: 15 distinct garbage tokens from one address: 5 TokenReviews (its burst), the rest 429
    without one; the same garbage token again costs none (refusals are cached); a ServiceAccount
    token from another address is reviewed and let in."""
    cluster = guarded.cluster
    namespace = cluster.new_namespace("dos")
    cluster.kubectl("create", "serviceaccount", "reader", "-n", namespace)
    token = cluster.token("reader", namespace)
    discovery = f"/apis/{GROUP}/v1"

    def call(source: str, bearer: str) -> tuple[int, str | None]:
        with tls_to(guarded.port, guarded.ssl_context(), source) as tls:
            tls.sendall(
                f"GET {discovery} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {bearer}\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
        head = data.partition(b"\r\n\r\n")[0].decode()
        retry = next(
            (
                line.split(":", 1)[1].strip()
                for line in head.split("\r\n")
                if line.lower().startswith("retry-after")
            ),
            None,
        )
        return int(head.split()[1]), retry

    before = token_reviews(cluster)
    answers = [call("127.0.0.2", f"invented-{i}-{time.monotonic_ns()}") for i in range(15)]
    assert answers[:5] == [(401, None)] * 5
    assert answers[5:] == [(429, "1")] * 10
    assert token_reviews(cluster) - before == 5
    garbage = f"again-{time.monotonic_ns()}"
    assert [call("127.0.0.4", garbage)[0] for _ in range(3)] == [401] * 3
    assert token_reviews(cluster) - before == 6
    assert call("127.0.0.3", token) == (200, None)
    assert token_reviews(cluster) - before == 7
