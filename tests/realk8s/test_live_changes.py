"""Trust and serving certificate changed while the server runs behind the real aggregator: each takes
effect without a restart, and nothing in flight is dropped.

Both tests change what every other test shares (the trust ConfigMap, the serving certificate and the
APIServices' caBundle) and put it back exactly before they end, also when they fail.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import trustme

from tests.realk8s.controlplane import ControlPlane, Credentials, Response, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import expand_spec, store_vm

TRUST_CM = ("-n", "kube-system", "configmap", "extension-apiserver-authentication")
ALLOWED_NAMES = "requestheader-allowed-names"
REQUESTHEADER_CA = "requestheader-client-ca-file"


class Connection:
    """One keep-alive HTTPS connection straight to the server, kept open across a change."""

    def __init__(self, deployed: DeployedServer, creds: Credentials) -> None:
        ctx = deployed.ssl_context((creds.cert_file, creds.key_file))
        self.conn = http.client.HTTPSConnection("127.0.0.1", deployed.port, context=ctx, timeout=10)
        self.sockets: list[socket.socket] = []  # every socket it used (kept, so none is mistaken for another)

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        self.conn.request("GET", path, headers=headers or {})
        resp = self.conn.getresponse()
        assert self.conn.sock is not None
        if not any(known is self.conn.sock for known in self.sockets):
            self.sockets.append(self.conn.sock)
        return resp.status, resp.read()

    def close(self) -> None:
        self.conn.close()


# -- the trust ConfigMap ----------------------------------------------------------------------------


def trust_data(cluster: ControlPlane) -> dict[str, str]:
    return dict(cluster.get_json(*TRUST_CM)["data"])


@contextmanager
def trust_edited(cluster: ControlPlane, changes: dict[str, str]) -> Iterator[dict[str, str]]:
    """Patch the trust ConfigMap; put its data back exactly afterwards. Yields the original data."""
    original = trust_data(cluster)
    cluster.kubectl("patch", *TRUST_CM, "--type=merge", "-p", json.dumps({"data": changes}))
    try:
        yield original
    finally:
        cluster.kubectl("patch", *TRUST_CM, "--type=merge", "-p", json.dumps({"data": original}))
        # kube-apiserver merges its own settings back in; with the original data nothing is added.
        poll("trust ConfigMap restored", lambda: trust_data(cluster), lambda data: data == original)


def test_allowed_names_edited_live(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    """kube-apiserver keeps its own front-proxy name in ``requestheader-allowed-names``: its
    cluster-authentication-trust controller merges it back within milliseconds of any edit (the fake
    never did). So the edit that lasts is a name added: a second front proxy becomes trusted at once,
    and loses that trust again as soon as the ConfigMap is put back, with no restart, while a
    connection opened before keeps working throughout."""
    expected = store_vm(control_plane, namespace)
    pki = control_plane.pki
    other = Credentials.write(
        pki.front_proxy_ca.issue_cert("other-proxy", common_name="other-proxy"), pki.folder, "other-proxy"
    )
    as_admin = {"X-Remote-User": f"trust-{namespace}", "X-Remote-Group": "system:masters"}
    path = expand_spec(namespace)

    def other_proxy() -> int:
        return deployed.direct(path, headers=as_admin, cert=(other.cert_file, other.key_file))[0]

    kept = Connection(deployed, pki.front_proxy_client)
    try:
        code, body = kept.get(path, as_admin)
        assert (code, json.loads(body)) == (200, expected)
        assert other_proxy() == 401
        log_start = deployed.log_size()
        with trust_edited(control_plane, {ALLOWED_NAMES: '["other-proxy"]'}):
            merged = poll(
                "kube-apiserver merges its own name back",
                lambda: trust_data(control_plane)[ALLOWED_NAMES],
                lambda names: "front-proxy-client" in json.loads(names),
            )
            assert json.loads(merged) == ["other-proxy", "front-proxy-client"]
            poll("the second front proxy is trusted", other_proxy, lambda code: code == 200)
            deployed.wait_log(
                log_start, lambda line: "allowed names ['other-proxy', 'front-proxy-client']" in line
            )
            assert kept.get(path, as_admin)[0] == 200
            # The aggregator's CN was out of the list for a moment: make sure the APIService is Available
            # (an availability probe in that moment would have failed) before going through it.
            deployed.ensure_available()
            assert json.loads(control_plane.kubectl("get", "--raw", path).stdout) == expected
        poll("the second front proxy is refused again", other_proxy, lambda code: code == 401)
        assert kept.get(path, as_admin)[0] == 200
        assert len(kept.sockets) == 1, "the connection was dropped"
    finally:
        kept.close()
        deployed.ensure_available()
    assert json.loads(control_plane.kubectl("get", "--raw", path).stdout) == expected


def test_request_header_ca_added_live(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    """A front proxy of a new CA is refused in the TLS handshake until the CA is added to the
    ConfigMap, accepted once it is, and refused again once the ConfigMap is put back."""
    store_vm(control_plane, namespace)
    new_ca = trustme.CA()
    pki = control_plane.pki
    proxy = Credentials.write(
        new_ca.issue_cert("front-proxy-client", common_name="front-proxy-client"), pki.folder, "new-ca-proxy"
    )
    as_admin = {"X-Remote-User": f"trust-{namespace}", "X-Remote-Group": "system:masters"}
    path = expand_spec(namespace)

    def new_proxy() -> int:
        return deployed.direct(path, headers=as_admin, cert=(proxy.cert_file, proxy.key_file))[0]

    assert new_proxy() == 0  # the handshake itself is refused
    original = trust_data(control_plane)[REQUESTHEADER_CA]
    with trust_edited(control_plane, {REQUESTHEADER_CA: original + new_ca.cert_pem.bytes().decode()}):
        poll("the new CA's front proxy is trusted", new_proxy, lambda code: code == 200)
    poll("the new CA's front proxy is refused again", new_proxy, lambda code: code == 0)
    deployed.ensure_available()


# -- the serving certificate ------------------------------------------------------------------------


class AggregatorLoad:
    """Requests through kube-apiserver's aggregator, one after another, in a thread, until stopped."""

    def __init__(self, cluster: ControlPlane, path: str) -> None:
        self.cluster = cluster
        self.path = path
        self.results: list[Response] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.results.append(self.cluster.request(self.path, timeout=10))

    def __enter__(self) -> AggregatorLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def wait_for(self, count: int, timeout: float = 20) -> None:
        """Until ``count`` more requests have been answered."""
        target = len(self.results) + count
        poll(f"{count} more requests", lambda: len(self.results), lambda n: n >= target, timeout)


def served_by(deployed: DeployedServer, ca: trustme.CA, folder: Path) -> bool:
    """Whether a new connection to the server verifies against ``ca`` alone."""
    ca_file = folder / "probe-ca.crt"
    ca_file.write_bytes(ca.cert_pem.bytes())
    ctx = ssl.create_default_context(cafile=str(ca_file))
    try:
        with (
            socket.create_connection(("127.0.0.1", deployed.port), timeout=5) as raw,
            ctx.wrap_socket(raw, server_hostname="kubevirt-expand.kubevirt-expand.svc"),
        ):
            return True
    except ssl.SSLCertVerificationError:
        return False


def set_ca_bundle(cluster: ControlPlane, deployed: DeployedServer, *cas: trustme.CA) -> None:
    bundle = base64.b64encode(b"".join(ca.cert_pem.bytes() for ca in cas)).decode()
    for svc in deployed.apiservices():
        cluster.kubectl(
            "patch",
            "apiservice",
            svc["metadata"]["name"],
            "--type=merge",
            "-p",
            json.dumps({"spec": {"caBundle": bundle}}),
        )


def rotate(
    cluster: ControlPlane,
    deployed: DeployedServer,
    load: AggregatorLoad,
    old: trustme.CA,
    new: trustme.CA,
    folder: Path,
) -> None:
    """A rotation as a cluster does one: trust old and new, switch the certificate, drop the old CA."""
    set_ca_bundle(cluster, deployed, old, new)
    # The aggregator learns the bundle through its informer (milliseconds); a real rotation (cert-manager
    # renews well before expiry) gives it far longer than these requests take.
    load.wait_for(20)
    deployed.serving_volume.write(deployed.issue_serving_certificate(new))
    poll("the server presents the new certificate", lambda: served_by(deployed, new, folder), bool)
    load.wait_for(20)
    set_ca_bundle(cluster, deployed, new)
    load.wait_for(20)


def test_serving_certificate_rotated_under_load(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    expected = store_vm(control_plane, namespace)
    path = expand_spec(namespace)
    original_ca = deployed.serving_ca
    new_ca = trustme.CA()
    admin = control_plane.pki.client(f"rotation-{namespace}", "system:masters")
    kept = Connection(deployed, admin)
    try:
        assert kept.get(path)[0] == 200
        with AggregatorLoad(control_plane, path) as load:
            try:
                rotate(control_plane, deployed, load, original_ca, new_ca, tmp_path)
                assert deployed.apiservice_available()
                # The connection opened before the rotation still has the old certificate, and works.
                assert kept.get(path)[0] == 200
            finally:
                rotate(control_plane, deployed, load, new_ca, original_ca, tmp_path)
        assert kept.get(path)[0] == 200
        assert len(kept.sockets) == 1, "the connection was dropped"
    finally:
        kept.close()
    codes = [r.status for r in load.results]
    assert len(codes) >= 120
    failed = [(r.status, r.body[:200]) for r in load.results if r.status != 200]
    assert not failed, f"{len(failed)} of {len(codes)} requests failed: {failed[:3]}"
    assert all(r.json() == expected for r in load.results)
    assert served_by(deployed, original_ca, tmp_path)
    deployed.ensure_available()
