"""The server as ``apiservice/`` deploys it, run as a process beside a real control plane.

Everything comes from the manifests themselves (``kubectl kustomize`` of an overlay): the Namespace,
ServiceAccount and RBAC are applied to the real API server, the container's arguments are the
process's arguments, and the APIServices register it with the aggregator. Only what a kubelet and a
Service network would do is done here instead:

- the Secret volume is a folder written the way kubelet's atomic writer writes one (files behind a
  ``..data`` symlink that is swapped on update), and every argument naming a file under a volume mount
  names the same file under that folder;
- the in-cluster configuration (token file, service host) becomes ``--kubeconfig`` holding a token of
  the ServiceAccount, so the server reads the cluster with exactly the manifests' RBAC;
- the Service becomes an ExternalName ``localhost`` (Endpoints refuse loopback addresses) and the
  APIServices point at the process's port; the aggregator then dials ``localhost:<port>`` and checks
  the serving certificate against ``kubevirt-expand.kubevirt-expand.svc``, as in a cluster.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import trustme
import yaml

from devcluster.controlplane import (
    ControlPlane,
    ProcessError,
    Response,
    free_port,
    kubeconfig,
    tail,
)
from devcluster.paths import REPO
from devcluster.patience import patience

OVERLAY = REPO / "apiservice" / "overlays" / "kubevirt-group"
NAMESPACE = "kubevirt-expand"
SERVICE = "kubevirt-expand"
SERVICE_ACCOUNT = "kubevirt-expand"
SERVING_SECRET = "kubevirt-expand-serving-cert"
SERVICE_DNS = f"{SERVICE}.{NAMESPACE}.svc"
ACCESS_LOGGER = "apiserver.access"  # the logger of the access lines (apiserver/http/logging.py)


def rendered_manifests(overlay: Path = OVERLAY) -> list[dict[str, Any]]:
    """The overlay as ``kubectl kustomize`` renders it."""
    result = subprocess.run(
        ["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise ProcessError(f"kubectl kustomize {overlay}: {result.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _container(objects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, "the harness runs the Deployment's one container"
    return containers[0]  # type: ignore[no-any-return]


class SecretVolume:
    """A folder laid out as kubelet lays out a Secret volume, updated atomically the same way."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._generation = 0

    def write(self, files: dict[str, bytes]) -> None:
        self._generation += 1
        data_dir = self.folder / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{self._generation}"
        data_dir.mkdir()
        for name, content in files.items():
            (data_dir / name).write_bytes(content)
        tmp_link = self.folder / "..data_tmp"
        with suppress(FileNotFoundError):
            tmp_link.unlink()
        tmp_link.symlink_to(data_dir.name)
        os.replace(tmp_link, self.folder / "..data")  # the one atomic step
        for name in files:
            link = self.folder / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")


def metric_in(exposition: str, sample: str) -> float:
    """The value of ``sample`` (a name with any labels, as written) in a Prometheus text exposition; 0 when
    absent (a counter not yet incremented)."""
    for line in exposition.splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    return 0.0


class DeployedServer:
    """``kubevirt-expand serve`` with the Deployment's arguments, registered through the overlay's APIServices."""

    def __init__(
        self,
        cluster: ControlPlane,
        workdir: Path,
        *,
        extra_args: Sequence[str] = (),
        without_args: Sequence[str] = (),
        overlay: Path = OVERLAY,
    ) -> None:
        """``extra_args`` are added to the container's; ``without_args`` are left out of them."""
        self.cluster = cluster
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.overlay = overlay
        self.manifests = rendered_manifests(overlay)
        self.container = _container(self.manifests)
        self.port = free_port()
        self.probe_port = free_port()  # --health-probe-bind-address, when the Deployment sets it
        self.url = f"https://127.0.0.1:{self.port}"
        self.serving_ca = trustme.CA()
        self.serving_ca_file = workdir / "serving-ca.crt"
        self.serving_ca_file.write_bytes(self.serving_ca.cert_pem.bytes())
        self.log_file = workdir / "server.log"
        self.mounts = {
            m["mountPath"]: workdir / "volumes" / m["name"] for m in self.container["volumeMounts"]
        }
        for folder in self.mounts.values():
            folder.mkdir(parents=True, exist_ok=True)
        serving_mount = next(m for m in self.container["volumeMounts"] if m["name"] == "serving-cert")
        self.serving_volume = SecretVolume(self.mounts[serving_mount["mountPath"]])
        self.extra_args = list(extra_args)
        self.without_args = set(without_args)
        self.process: subprocess.Popen[bytes] | None = None

    # -- set-up ------------------------------------------------------------------------------

    def issue_serving_certificate(self, ca: trustme.CA | None = None) -> dict[str, bytes]:
        """A serving certificate for the Service's name (and loopback, for direct calls); the files of
        the ``kubernetes.io/tls`` Secret."""
        leaf = (ca or self.serving_ca).issue_cert(
            SERVICE_DNS, f"{SERVICE_DNS}.cluster.local", "localhost", "127.0.0.1"
        )
        return {
            "tls.crt": b"".join(b.bytes() for b in leaf.cert_chain_pems),
            "tls.key": leaf.private_key_pem.bytes(),
        }

    @property
    def group(self) -> str:
        """The API group whose expand-spec the overlay serves (its ``--api-group``): the kubevirt-group overlay
        also registers the collection's group, so the first APIService is not necessarily it."""
        for arg in self.container.get("args", []):
            name, _, value = str(arg).partition("=")
            if name == "--api-group":
                return value
        return str(next(o for o in self.manifests if o["kind"] == "APIService")["spec"]["group"])

    def install(self, token_duration: str = "24h") -> None:
        """Apply the overlay as a cluster would get it, with the Service and APIServices pointed here; the
        server reads the cluster with a token of its ServiceAccount valid for ``token_duration``."""
        files = self.issue_serving_certificate()
        self.serving_volume.write(files)
        objects: list[dict[str, Any]] = []
        for obj in self.manifests:
            obj = json.loads(json.dumps(obj))
            if obj["kind"] == "Service":
                obj["spec"] = {"type": "ExternalName", "externalName": "localhost"}
            elif obj["kind"] == "APIService":
                continue  # registered once the process is ready (see register)
            objects.append(obj)
        self.cluster.apply(*objects)
        self.cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/tls",
                "metadata": {"name": SERVING_SECRET, "namespace": NAMESPACE},
                "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
            }
        )
        token = self.cluster.token(SERVICE_ACCOUNT, NAMESPACE, duration=token_duration)
        self.kubeconfig = kubeconfig(
            self.workdir / "in-cluster.kubeconfig", self.cluster.url, self.cluster.pki.ca_file, token=token
        )

    def apiservices(self) -> list[dict[str, Any]]:
        ca_bundle = base64.b64encode(self.serving_ca.cert_pem.bytes()).decode()
        found = []
        for obj in self.manifests:
            if obj["kind"] != "APIService":
                continue
            obj = json.loads(json.dumps(obj))
            obj["spec"]["service"]["port"] = self.port
            obj["spec"]["caBundle"] = ca_bundle
            found.append(obj)
        return found

    def register(self, timeout: float = 60) -> None:
        """Apply the APIServices and wait until the aggregator reports each Available."""
        services = self.apiservices()
        self.cluster.apply(*services)
        for svc in services:
            self.wait_available(svc["metadata"]["name"], timeout)

    def wait_available(self, name: str, timeout: float = 60) -> None:
        timeout = patience(timeout)
        deadline = time.monotonic() + timeout
        message = ""
        while time.monotonic() < deadline:
            obj = self.cluster.get_json("apiservice", name)
            for cond in (obj.get("status") or {}).get("conditions") or []:
                if cond["type"] == "Available":
                    if cond["status"] == "True":
                        return
                    message = f"{cond.get('reason')}: {cond.get('message')}"
            time.sleep(0.25)
        raise ProcessError(
            f"APIService {name} not Available after {timeout:g} s ({message})\n{tail(self.log_file)}"
        )

    # -- the process ---------------------------------------------------------------------------

    def args(self) -> list[str]:
        """The container's arguments, with file paths under volume mounts moved to the folders here,
        the listeners on loopback at free ports, and the ServiceAccount's kubeconfig."""
        result = []
        for arg in self.container.get("args", []):
            if arg in self.without_args:
                continue
            name, sep, value = arg.partition("=")
            if name == "--bind-address":
                value = "127.0.0.1"
            elif name == "--secure-port":
                value = str(self.port)
            elif name == "--health-probe-bind-address":
                value = f"127.0.0.1:{self.probe_port}"
            else:
                value = self.host_path(value)
            result.append(f"{name}{sep}{value}" if sep else arg)
        return [*result, f"--kubeconfig={self.kubeconfig}", *self.extra_args]

    def host_path(self, value: str) -> str:
        """A path in the container as the same file here (the deepest volume mount holding it)."""
        for mount in sorted(self.mounts, key=len, reverse=True):
            if value == mount or value.startswith(mount + "/"):
                return str(self.mounts[mount]) + value[len(mount) :]
        return value

    def start(self, *, wait_ready: bool = True, timeout: float = 60, detach: bool = False) -> None:
        """Start the process (``detach``: in a session of its own, to outlive this one, as
        ``hack/dev-cluster.sh up`` leaves it running)."""
        command = [sys.executable, "-m", "apiserver.cli", "serve", *self.args()]
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        env["PYTHONUNBUFFERED"] = "1"
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=env,
                start_new_session=detach,
            )
        if wait_ready:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60) -> None:
        timeout = patience(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ProcessError(
                    f"the server exited with {self.process.returncode}:\n{tail(self.log_file)}"
                )
            code, _ = self.direct("/readyz")
            if code == 200:
                return
            time.sleep(0.1)
        raise ProcessError(f"the server was not ready after {timeout:g} s:\n{tail(self.log_file)}")

    def stop(self, timeout: float = 20) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def log_lines_since(self, offset: int) -> Iterator[str]:
        with self.log_file.open("rb") as fh:
            fh.seek(offset)
            yield from fh.read().decode(errors="replace").splitlines()

    def log_size(self) -> int:
        return self.log_file.stat().st_size

    # -- calls straight to the server (not through the aggregator) ------------------------------

    def ssl_context(self, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.serving_ca_file))
        if cert is not None:
            ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        return ctx

    def direct(
        self,
        path: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        cert: tuple[Path, Path] | None = None,
        timeout: float = 10,
    ) -> tuple[int, bytes]:
        """One HTTPS request to the process; (status, body), or (0, b"") when nothing answered."""
        reply = self.call(path, method=method, headers=headers, body=body, cert=cert, timeout=timeout)
        return (0, b"") if reply is None else (reply.status, reply.body)

    def call(
        self,
        path: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        cert: tuple[Path, Path] | None = None,
        timeout: float = 30,
    ) -> Response | None:
        """Like :meth:`direct`, with the answer's headers; None when nothing answered (refused, TLS
        handshake failed, or no answer within ``timeout``)."""
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.ssl_context(cert)) as resp:
                return Response(resp.status, dict(resp.headers.items()), resp.read())
        except urllib.error.HTTPError as err:
            return Response(err.code, dict(err.headers.items()), err.read())
        except (OSError, urllib.error.URLError):
            return None

    def wait_log(self, offset: int, predicate: Callable[[str], bool], timeout: float = 5) -> list[str]:
        """The log lines written since ``offset`` once one satisfies ``predicate`` (access lines are
        written in batches, a moment after the answer); raises with the lines seen on a timeout."""
        timeout = patience(timeout)
        deadline = time.monotonic() + timeout
        while True:
            lines = list(self.log_lines_since(offset))
            if any(predicate(line) for line in lines):
                return lines
            if time.monotonic() > deadline:
                raise AssertionError(f"no such log line after {timeout:g} s:\n" + "\n".join(lines[-20:]))
            time.sleep(0.05)

    def wait_access(self, offset: int, timeout: float = 5, **fields: object) -> list[str]:
        """The log lines written since ``offset`` once the access line of a request is among them: the one
        whose fields include ``fields`` (``method="PUT", user="alice", code=403``). It is the last line a
        request logs, written (in a batch) a moment after the answer."""

        def matches(line: str) -> bool:
            if not line.startswith("{"):
                return False
            try:
                entry = json.loads(line)
            except ValueError:
                return False
            return entry.get("logger") == ACCESS_LOGGER and all(entry.get(k) == v for k, v in fields.items())

        return self.wait_log(offset, matches, timeout)

    def wait_log_written(self, offset: int, timeout: float = 5) -> list[str]:
        """The log lines written since ``offset`` once everything the server logged for the requests
        answered so far is among them: a request of a path of its own, answered (404) after those, has its
        access line written after theirs (lines are written in the order they came)."""
        marker = f"/log-marker-{uuid.uuid4().hex}"
        admin = self.cluster.pki.admin
        self.direct(marker, cert=(admin.cert_file, admin.key_file))
        return self.wait_access(offset, timeout, path=marker)

    def metric(self, sample: str) -> float:
        """A sample of the server's /metrics, read as the cluster admin, by its name with any labels as
        exported (``kubevirt_expand_watches_held``); 0 when it is not exported."""
        admin = self.cluster.pki.admin
        code, body = self.direct("/metrics", cert=(admin.cert_file, admin.key_file))
        if code != 200:
            raise ProcessError(f"/metrics answered {code}: {body[:300]!r}")
        return metric_in(body.decode(), sample)

    def apiservice_available(self) -> bool:
        """Whether the aggregator reports every APIService of the overlay Available right now."""
        for svc in self.apiservices():
            obj = self.cluster.get_json("apiservice", svc["metadata"]["name"])
            conditions = (obj.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Available" and c["status"] == "True" for c in conditions):
                return False
        return True

    def ensure_available(self, timeout: float = 30) -> None:
        """Have the aggregator check every APIService now and wait until each is Available: a test that
        made the server refuse the aggregator for a moment leaves it usable for the next. (Any update
        of an APIService queues an availability check; otherwise one comes only every 30 s or so.)"""
        stamp = f"kubevirt-expand.test/checked={time.monotonic_ns()}"
        for svc in self.apiservices():
            self.cluster.kubectl("annotate", "--overwrite", "apiservice", svc["metadata"]["name"], stamp)
        for svc in self.apiservices():
            self.wait_available(svc["metadata"]["name"], timeout)
