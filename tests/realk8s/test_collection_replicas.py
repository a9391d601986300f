"""Two replicas of the server behind the real aggregator, as a Deployment with a Service runs them: the
collection's resourceVersions mean the same on both, so a list from one replica and a watch from the
other work (kube-proxy balances per connection; here a round-robin TCP balancer does)."""

from __future__ import annotations

import copy
import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from tests.realk8s.controlplane import ControlPlane, free_port, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_collection import RESOURCE, instancetype, populate, wait_listed

APISERVICE = "v1.expand.kubevirt-expand.io"
BASE = "/apis/expand.kubevirt-expand.io/v1"


class RoundRobin:
    """A TCP balancer: each new connection goes to the next backend port, as kube-proxy spreads them."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.port = free_port()
        self.count = 0
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            backend = socket.create_connection(("127.0.0.1", self.ports[self.count % len(self.ports)]))
            self.count += 1
            for a, b in ((client, backend), (backend, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.closed = True
        self.listener.close()


@contextmanager
def second_replica(deployed: DeployedServer) -> Iterator[DeployedServer]:
    replica = copy.copy(deployed)
    replica.port = free_port()
    replica.probe_port = free_port()  # both processes run on this host: their probe listeners too
    replica.url = f"https://127.0.0.1:{replica.port}"
    replica.log_file = deployed.workdir / "replica.log"
    replica.process = None
    replica.start()
    try:
        yield replica
    finally:
        replica.stop()


@contextmanager
def balanced(deployed: DeployedServer, replica: DeployedServer) -> Iterator[RoundRobin]:
    balancer = RoundRobin([deployed.port, replica.port])
    (service,) = [s for s in deployed.apiservices() if s["metadata"]["name"] == APISERVICE]
    moved = json.loads(json.dumps(service))
    moved["spec"]["service"]["port"] = balancer.port
    deployed.cluster.apply(moved)
    try:
        deployed.ensure_available()
        yield balancer
    finally:
        deployed.cluster.apply(service)
        deployed.ensure_available()
        balancer.close()


def _resumable(server: DeployedServer, namespace: str, version: str) -> bool:
    events = _watch(
        server,
        f"{BASE}/namespaces/{namespace}/{RESOURCE}?watch=true&resourceVersion={version}&timeoutSeconds=1",
        1,
        5,
    )
    return not any(e["type"] == "ERROR" for e in events)


def _unversioned(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(items))
    for item in out:
        del item["metadata"]["resourceVersion"]
    return out


def _direct(server: DeployedServer, path: str) -> Any:
    creds = server.cluster.pki.front_proxy_client
    headers = {"X-Remote-User": "replica-test", "X-Remote-Group": "system:masters"}
    code, body = server.direct(path, headers=headers, cert=(creds.cert_file, creds.key_file))
    assert code == 200, body[:300]
    return json.loads(body)


def _watch(server: DeployedServer, path: str, want: int, timeout: float = 30) -> list[dict[str, Any]]:
    """The first ``want`` events of a watch straight to ``server``."""
    creds = server.cluster.pki.front_proxy_client
    conn = http.client.HTTPSConnection(
        "127.0.0.1",
        server.port,
        context=server.ssl_context((creds.cert_file, creds.key_file)),
        timeout=timeout,
    )
    conn.request("GET", path, headers={"X-Remote-User": "replica-test", "X-Remote-Group": "system:masters"})
    resp = conn.getresponse()
    if resp.status != 200:  # 504 Too large resource version: this replica has not caught up
        conn.close()
        return [{"type": "ERROR", "object": json.loads(resp.read() or b"{}")}]
    events = []
    deadline = time.monotonic() + timeout
    try:
        while len(events) < want and time.monotonic() < deadline:
            line = resp.readline()
            if not line:
                break
            if line.strip():
                events.append(json.loads(line))
    finally:
        conn.close()
    return events


def test_list_on_one_replica_watch_on_the_other(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    with second_replica(deployed) as replica:
        populate(control_plane, namespace)
        wait_listed(control_plane, namespace, 6)
        # Both replicas reach a version the other can resume from once each has confirmed its quiet
        # caches past the other's start (a probe every few seconds, see WatchCache.probe_progress).
        listed = poll(
            "a version the other replica resumes from",
            lambda: _direct(deployed, f"{BASE}/namespaces/{namespace}/{RESOURCE}"),
            lambda doc: _resumable(replica, namespace, doc["metadata"]["resourceVersion"]),
            timeout=30,
        )
        version = listed["metadata"]["resourceVersion"]
        assert len(listed["items"]) == 6
        # The other replica reaches the same version (it saw the same changes) and takes it.
        same = _direct(replica, f"{BASE}/namespaces/{namespace}/{RESOURCE}?resourceVersion={version}")
        assert [i["metadata"]["name"] for i in same["items"]] == [
            i["metadata"]["name"] for i in listed["items"]
        ]
        # The same items; each item's own resourceVersion says when this replica last rendered it.
        assert _unversioned(same["items"]) == _unversioned(listed["items"])
        events: list[dict[str, Any]] = []
        watcher = threading.Thread(
            target=lambda: events.extend(
                _watch(
                    replica,
                    f"{BASE}/namespaces/{namespace}/{RESOURCE}?watch=true&resourceVersion={version}",
                    4,
                )
            )
        )
        watcher.start()
        # The watch holds its place once it has its starting point: the change below comes after it.
        poll("the watch open", lambda: replica.metric("kubevirt_expand_watches_held"), lambda n: n == 1)
        control_plane.apply(instancetype(namespace, "small", 4))
        watcher.join(40)
        assert sorted(e["object"]["metadata"]["name"] for e in events) == ["vm-0", "vm-1", "vm-2", "vm-3"]
        assert {e["type"] for e in events} == {"MODIFIED"}
        # And the first replica, watched from the last event's version, has nothing more to send.
        last = events[-1]["object"]["metadata"]["resourceVersion"]
        more = _watch(
            deployed,
            f"{BASE}/namespaces/{namespace}/{RESOURCE}?watch=true&resourceVersion={last}&timeoutSeconds=2",
            1,
            timeout=10,
        )
        assert more == []

        # Through the aggregator, every connection to a replica of its own: list and watch with kubectl.
        with balanced(deployed, replica) as balancer:
            for _ in range(4):
                out = control_plane.kubectl("get", RESOURCE, "-n", namespace, "-o", "name").stdout.split()
                assert len(out) == 6
            cycle = control_plane.kubectl(
                "get",
                RESOURCE,
                "-n",
                namespace,
                "-w",
                "--request-timeout=3s",
                "--output-watch-events",
                check=False,
            )
            assert cycle.stdout.count("ADDED") == 6, cycle.stderr
            assert balancer.count >= 2, "every request went to one replica"


@pytest.mark.parametrize("replicas", [2])
def test_a_version_from_the_future_waits_then_is_refused(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str, replicas: int
) -> None:
    listed = _direct(deployed, f"{BASE}/{RESOURCE}?limit=1")
    parts = [int(p) for p in listed["metadata"]["resourceVersion"].split(".")]
    parts[0] += 1_000_000
    future = ".".join(map(str, parts))
    creds = deployed.cluster.pki.front_proxy_client
    started = time.monotonic()
    code, body = deployed.direct(
        f"{BASE}/{RESOURCE}?resourceVersion={future}",
        headers={"X-Remote-User": "replica-test", "X-Remote-Group": "system:masters"},
        cert=(creds.cert_file, creds.key_file),
    )
    assert code == 504 and b"Too large resource version" in body
    assert time.monotonic() - started >= 2.5
