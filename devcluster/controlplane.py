"""A real Kubernetes control plane: etcd and kube-apiserver on loopback, the aggregation layer on. The tests
(tests/realk8s, tests/parity) and ``hack/dev-cluster.sh`` start theirs with this one harness.

The binaries come from a folder named by ``KUBEBUILDER_ASSETS`` (controller-runtime envtest's
convention: a folder holding ``etcd`` and ``kube-apiserver``), else ``../shared/k8s/bin`` beside the
repository (``KUBEVIRT_EXPAND_SHARED`` names another shared/). The flags are those of a kubeadm cluster's API server that matter here: RBAC, a client CA,
service-account tokens, and the front-proxy (request-header) settings it publishes in the ConfigMap
``kube-system/extension-apiserver-authentication``. Certificates are made here with ``trustme``.

Only etcd and kube-apiserver run: no controller-manager (namespaces stay Terminating, no default
ServiceAccounts), no kubelet. kube-apiserver can be stopped, killed and started again on the same port
and data, which is how the fault tests reach a real 410 Gone and a real connection refused.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from devcluster.paths import ASSETS_ENV, CRDS_FILE, assets_dir
from devcluster.patience import patience

KUBECTL = shutil.which("kubectl")

FRONT_PROXY_CN = "front-proxy-client"
# kube-apiserver v1.28 serves ValidatingAdmissionPolicy (beta, off by default) with these flags: pass them as
# ControlPlane(extra_args=...) or `hack/dev-cluster.sh up --apiserver-arg=...` (docs/cost.md's policy recipe).
VALIDATING_ADMISSION_POLICY_ARGS = (
    "--feature-gates=ValidatingAdmissionPolicy=true",
    "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
)

T = TypeVar("T")


def unavailable() -> str | None:
    """Why the real-control-plane tests cannot run here, or None when they can."""
    folder = assets_dir()
    for name in ("etcd", "kube-apiserver"):
        if not os.access(folder / name, os.X_OK):
            return (
                f"no {name} in {folder} (set {ASSETS_ENV} to a folder holding etcd and kube-apiserver, "
                "or put ../shared/k8s/bin beside the repository)"
            )
    if not CRDS_FILE.is_file():
        return f"the KubeVirt CRDs are not at {CRDS_FILE}"
    if KUBECTL is None:
        return "kubectl is not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def poll(what: str, probe: Callable[[], T], accept: Callable[[T], bool], timeout: float = 10) -> T:
    """``probe()`` every 50 ms until ``accept`` takes its result; fails with the last one seen."""
    timeout = patience(timeout)
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if accept(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s; last seen: {result!r}")
        time.sleep(0.05)


def write_pem(path: Path, *blobs: bytes) -> Path:
    path.write_bytes(b"".join(blobs))
    path.chmod(0o600)
    return path


@dataclass
class Credentials:
    """A client certificate and its key, as files (what kubeconfigs and curl take)."""

    cert_file: Path
    key_file: Path

    @classmethod
    def write(cls, leaf: trustme.LeafCert, folder: Path, name: str) -> Credentials:
        return cls(
            write_pem(folder / f"{name}.crt", *(b.bytes() for b in leaf.cert_chain_pems)),
            write_pem(folder / f"{name}.key", leaf.private_key_pem.bytes()),
        )


@dataclass
class ClusterPKI:
    """The certificates of a kubeadm-like cluster: cluster CA (serving and clients), front-proxy CA."""

    folder: Path
    ca: trustme.CA = field(default_factory=trustme.CA)
    front_proxy_ca: trustme.CA = field(default_factory=trustme.CA)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ca_file = write_pem(self.folder / "ca.crt", self.ca.cert_pem.bytes())
        self.front_proxy_ca_file = write_pem(
            self.folder / "front-proxy-ca.crt", self.front_proxy_ca.cert_pem.bytes()
        )
        self.apiserver = Credentials.write(
            self.ca.issue_cert(
                "127.0.0.1", "localhost", "kubernetes", "kubernetes.default.svc", common_name="kube-apiserver"
            ),
            self.folder,
            "apiserver",
        )
        self.admin = self.client("kubernetes-admin", "system:masters")
        self.front_proxy_client = Credentials.write(
            self.front_proxy_ca.issue_cert(FRONT_PROXY_CN, common_name=FRONT_PROXY_CN),
            self.folder,
            "front-proxy-client",
        )
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.sa_key_file = write_pem(
            self.folder / "sa.key",
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
        self.sa_pub_file = write_pem(
            self.folder / "sa.pub",
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        )

    def client(self, user: str, *groups: str) -> Credentials:
        """A client certificate of the cluster CA: kube-apiserver (and the server) take it as ``user``."""
        leaf = self.ca.issue_cert(user, common_name=user, organization_name=",".join(groups) or None)
        return Credentials.write(leaf, self.folder, f"client-{user}")


def kubeconfig(path: Path, server: str, ca_file: Path, **user: str) -> Path:
    """Write a kubeconfig for ``server``; ``user`` is its user entry (token=..., or client-certificate=...)."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": server, "certificate-authority": str(ca_file)}}
                ],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    path.chmod(0o600)
    return path


class ProcessError(RuntimeError):
    pass


def _start(command: Sequence[str], log_file: Path) -> subprocess.Popen[bytes]:
    with log_file.open("ab") as log:
        return subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(process: subprocess.Popen[bytes] | None, *, kill: bool = False, timeout: float = 20) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class ControlPlane:
    """etcd + kube-apiserver in ``workdir``; ``start()`` blocks until ``/readyz`` says ok."""

    def __init__(self, workdir: Path, assets: Path | None = None, extra_args: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.assets = assets or assets_dir()
        self.extra_args = list(extra_args)  # more kube-apiserver flags
        self.pki = ClusterPKI(workdir / "pki")
        self.etcd_port = free_port()
        self.etcd_peer_port = free_port()
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.etcd: subprocess.Popen[bytes] | None = None
        self.apiserver: subprocess.Popen[bytes] | None = None
        self.etcd_log = workdir / "etcd.log"
        self.apiserver_log = workdir / "kube-apiserver.log"
        self.admin_kubeconfig = kubeconfig(
            workdir / "admin.kubeconfig",
            self.url,
            self.pki.ca_file,
            **{
                "client-certificate": str(self.pki.admin.cert_file),
                "client-key": str(self.pki.admin.key_file),
            },
        )

    # -- processes ---------------------------------------------------------------------------

    def start(self) -> None:
        self.start_etcd()
        self.start_apiserver()

    def start_etcd(self) -> None:
        url = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        self.etcd = _start(
            [
                str(self.assets / "etcd"),
                "--name=test",
                f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={url}",
                f"--advertise-client-urls={url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=test={peer}",
                "--initial-cluster-state=new",
                "--unsafe-no-fsync",  # a test cluster: durability across power loss is not the point
                "--logger=zap",
                "--log-outputs=stderr",
            ],
            self.etcd_log,
        )
        deadline = time.monotonic() + patience(30)
        while time.monotonic() < deadline:
            if self.etcd.poll() is not None:
                raise ProcessError(f"etcd exited with {self.etcd.returncode}:\n{tail(self.etcd_log)}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as resp:
                    if json.loads(resp.read()).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise ProcessError(f"etcd not healthy after {patience(30):.0f} s:\n{tail(self.etcd_log)}")

    def apiserver_args(self) -> list[str]:
        pki = self.pki
        return [
            str(self.assets / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki.apiserver.cert_file}",
            f"--tls-private-key-file={pki.apiserver.key_file}",
            f"--client-ca-file={pki.ca_file}",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub_file}",
            f"--service-account-signing-key-file={pki.sa_key_file}",
            "--enable-aggregator-routing=false",
            f"--proxy-client-cert-file={pki.front_proxy_client.cert_file}",
            f"--proxy-client-key-file={pki.front_proxy_client.key_file}",
            f"--requestheader-client-ca-file={pki.front_proxy_ca_file}",
            f"--requestheader-allowed-names={FRONT_PROXY_CN}",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-username-headers=X-Remote-User",
            "--profiling=false",
            "--v=1",
            *self.extra_args,
        ]

    def start_apiserver(self, timeout: float = 90) -> None:
        """Start kube-apiserver (again, after ``stop_apiserver``: same port, same etcd, fresh watch cache)."""
        if self.apiserver is not None and self.apiserver.poll() is None:
            raise ProcessError("kube-apiserver is already running")
        self.apiserver = _start(self.apiserver_args(), self.apiserver_log)
        timeout = patience(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.apiserver.poll() is not None:
                raise ProcessError(
                    f"kube-apiserver exited with {self.apiserver.returncode}:\n{tail(self.apiserver_log)}"
                )
            if self.ready():
                return
            time.sleep(0.2)
        raise ProcessError(f"kube-apiserver not ready after {timeout:g} s:\n{tail(self.apiserver_log)}")

    def stop_apiserver(self, *, kill: bool = False) -> None:
        _stop(self.apiserver, kill=kill)

    def stop_etcd(self) -> None:
        """Kill etcd (kube-apiserver keeps running on what it has cached); ``start_etcd`` brings it back
        on the same data."""
        _stop(self.etcd, kill=True)

    def freeze_apiserver(self) -> None:
        """SIGSTOP kube-apiserver: its port still accepts connections (the kernel completes them) but
        nothing answers, which is what a hung or overloaded API server looks like to a client."""
        assert self.apiserver is not None and self.apiserver.poll() is None, "kube-apiserver is not running"
        self.apiserver.send_signal(signal.SIGSTOP)

    def thaw_apiserver(self) -> None:
        if self.apiserver is not None and self.apiserver.poll() is None:
            self.apiserver.send_signal(signal.SIGCONT)

    @property
    def apiserver_running(self) -> bool:
        return self.apiserver is not None and self.apiserver.poll() is None

    # -- etcd, behind kube-apiserver's back ----------------------------------------------------

    def etcd_call(self, endpoint: str, body: dict[str, Any]) -> Any:
        """One call to etcd's v3 JSON gateway (``/v3/kv/range``, ``/v3/kv/put``, ...); keys and values
        travel base64-encoded."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.etcd_port}/v3/{endpoint}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    @staticmethod
    def storage_key(group: str, plural: str, name: str, namespace: str = "") -> str:
        """Where kube-apiserver keeps an object of a custom resource in etcd (default ``--etcd-prefix``)."""
        return "/".join(["/registry", group, plural, *([namespace] if namespace else []), name])

    def etcd_edit(self, key: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Change a stored custom resource (kept as JSON) in etcd itself, as another writer would while
        this kube-apiserver is down: kube-apiserver learns of it only by reading etcd again."""
        encoded = base64.b64encode(key.encode()).decode()
        found = self.etcd_call("kv/range", {"key": encoded}).get("kvs") or []
        assert len(found) == 1, f"{key} is not in etcd"
        obj = json.loads(base64.b64decode(found[0]["value"]))
        change(obj)
        value = base64.b64encode(json.dumps(obj).encode()).decode()
        self.etcd_call("kv/put", {"key": encoded, "value": value})

    def etcd_delete(self, key: str) -> None:
        """Delete a stored object in etcd itself (see :meth:`etcd_edit`)."""
        encoded = base64.b64encode(key.encode()).decode()
        answer = self.etcd_call("kv/deleterange", {"key": encoded})
        assert int(answer.get("deleted", 0)) == 1, f"{key} was not in etcd: {answer}"

    def close(self) -> None:
        _stop(self.apiserver)
        _stop(self.etcd)

    def admin_ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_file))
        ctx.load_cert_chain(str(self.pki.admin.cert_file), str(self.pki.admin.key_file))
        return ctx

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=2, context=self.admin_ssl()) as resp:
                return bool(resp.read() == b"ok")
        except (OSError, urllib.error.URLError):
            return False

    # -- kubectl -----------------------------------------------------------------------------

    def new_namespace(self, prefix: str) -> str:
        """A fresh namespace for one test (never deleted: without a controller-manager it would stay
        Terminating)."""
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.kubectl("create", "namespace", name)
        return name

    def kubectl(
        self,
        *args: str,
        stdin: bytes | str | None = None,
        kubeconfig: Path | None = None,
        check: bool = True,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl as the cluster admin (or with ``kubeconfig``); ``check`` raises with its stderr."""
        assert KUBECTL is not None
        data = stdin.decode() if isinstance(stdin, bytes) else stdin
        result = subprocess.run(
            [
                KUBECTL,
                "--kubeconfig",
                str(kubeconfig or self.admin_kubeconfig),
                "--request-timeout=30s",
                *args,
            ],
            input=data if data is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise ProcessError(
                f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}"
            )
        return result

    def apply(self, *objects: dict[str, Any]) -> None:
        """``kubectl apply`` these objects (server-side validation by the real API server)."""
        self.kubectl(
            "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        )

    def get_json(self, *args: str, kubeconfig: Path | None = None) -> Any:
        """Objects as kube-apiserver stores them (kubectl hides managedFields unless asked)."""
        read = ("get", *args, "-o", "json", "--show-managed-fields")
        return json.loads(self.kubectl(*read, kubeconfig=kubeconfig).stdout)

    def token(self, service_account: str, namespace: str, duration: str = "2h") -> str:
        return self.kubectl(
            "create", "token", service_account, "-n", namespace, f"--duration={duration}"
        ).stdout.strip()

    # -- raw HTTPS calls (what kubectl --raw cannot show: status, headers) --------------------

    def ssl_for(self, credentials: Credentials | None = None) -> ssl.SSLContext:
        """A context trusting the cluster CA, presenting ``credentials`` (default: the admin's)."""
        creds = credentials or self.pki.admin
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_file))
        ctx.load_cert_chain(str(creds.cert_file), str(creds.key_file))
        return ctx

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        credentials: Credentials | None = None,
        timeout: float = 30,
    ) -> Response:
        """One request to kube-apiserver (as the admin unless ``credentials``); never raises on a status."""
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.ssl_for(credentials)) as resp:
                return Response(resp.status, dict(resp.headers.items()), resp.read())
        except urllib.error.HTTPError as err:
            return Response(err.code, dict(err.headers.items()), err.read())


@dataclass
class Response:
    """An HTTP answer: status, headers (as sent; look up with ``header``), body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)
