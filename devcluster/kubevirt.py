"""KubeVirt's own control plane beside a :class:`~devcluster.controlplane.ControlPlane`: virt-api serving its
mutating and validating admission webhooks, and virt-controller with all its controllers, as processes on
127.0.0.1. With it a VM written to the cluster is defaulted and validated by KubeVirt, its instancetype and
preference are captured as ControllerRevisions, a running VM gets its VMI and virt-launcher Pod, and an edit of
a running VM is patched into the VMI or marked ``RestartRequired``: the state KubeVirt itself writes, which the
drift, the change preview and launch-spec are about. ``hack/dev-cluster.sh up`` and tests/kubevirt run it.

What it is not: no scheduler, kubelet or virt-handler run, so virt-launcher Pods stay Pending, VMIs
``Scheduling`` and nothing is ever migratable (a memory change always needs a restart here); no garbage
collector or namespace controller (deleting a VM works: virt-controller removes its VMI and Pod itself).

The binaries are KubeVirt's, unmodified: ``$KUBEVIRT_BIN`` (a folder holding ``virt-api`` and
``virt-controller``), else ``../shared/oracle/kubevirt/bin``, else ``~/.cache/kubevirt-oracle/bin`` (where
``../shared/oracle/build.sh`` builds them). docs/development.md says how to build or extract them. The set-up
follows ``../shared/oracle/kubevirt/run.sh``: certificates (each pair in a folder of its own, since KubeVirt's
certificate manager watches the folder), the CRDs with status subresources, the KubeVirt CR and the status
virt-operator would write, one ServiceAccount per binary (virt-api lets only KubeVirt's own accounts write
VMI status), and the webhooks registered by URL as virt-operator's ``components/webhooks.go`` registers them.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trustme

from devcluster.controlplane import (
    ControlPlane,
    ProcessError,
    _start,
    _stop,
    free_port,
    kubeconfig,
    tail,
    write_pem,
)
from devcluster.crds import plane_crds
from devcluster.paths import SHARED_K8S
from devcluster.patience import patience

BIN_ENV: Final = "KUBEVIRT_BIN"
BINARIES: Final = ("virt-api", "virt-controller")
PLACES: Final = (
    SHARED_K8S.parent / "oracle" / "kubevirt" / "bin",
    Path.home() / ".cache" / "kubevirt-oracle" / "bin",
)
NAMESPACE: Final = "kubevirt"  # where both binaries look for the KubeVirt CR outside a cluster
CR_NAME: Final = "kubevirt"
API_ACCOUNT: Final = "kubevirt-apiserver"
CONTROLLER_ACCOUNT: Final = "kubevirt-controller"
MUTATING: Final = "virt-api-mutator-kubevirt-expand"
VALIDATING: Final = "virt-api-validator-kubevirt-expand"
APISERVICE: Final = "v1.subresources.kubevirt.io"
FIELD_MANAGER: Final = "kubevirt-expand-devcluster"
# Nothing pulls it: no kubelet runs. virt-controller writes it into every virt-launcher Pod.
LAUNCHER_IMAGE: Final = "quay.io/kubevirt/virt-launcher:kubevirt-expand-devcluster"
# The configuration the plane runs with. ImageVolume (Beta, on by default in this KubeVirt) makes container disks
# Pod ``image:`` volumes, which kube-apiserver 1.28 drops (the Pod would be created wrong); LiveUpdate is
# KubeVirt's default rollout strategy and what the change preview is about.
CONFIGURATION: Final[dict[str, Any]] = {
    "vmRolloutStrategy": "LiveUpdate",
    "developerConfiguration": {"featureGates": [], "disabledFeatureGates": ["ImageVolume"]},
}
# What virt-operator writes into the CR's status; both binaries read spec.configuration only once phase is set.
STATUS: Final = {
    "phase": "Deployed",
    "defaultArchitecture": "amd64",
    "observedKubeVirtVersion": "devcluster",
    "targetKubeVirtVersion": "devcluster",
}
# (webhook name, path, group, versions, resource, operations): virt-operator's components/webhooks.go, for the
# kinds this plane serves (VM, VMI, VM status, the four instancetype and preference kinds).
_KV = ("v1", "v1alpha3")
_IT = "instancetype.kubevirt.io"
MUTATING_WEBHOOKS: Final = (
    ("virtualmachines-mutator.kubevirt.io", "/virtualmachines-mutate", "kubevirt.io", _KV, "virtualmachines", ("CREATE", "UPDATE")),
    ("virtualmachineinstances-mutator.kubevirt.io", "/virtualmachineinstances-mutate", "kubevirt.io", _KV, "virtualmachineinstances", ("CREATE", "UPDATE")),
)  # fmt: skip
VALIDATING_WEBHOOKS: Final = (
    ("virtualmachineinstances-create-validator.kubevirt.io", "/virtualmachineinstances-validate-create", "kubevirt.io", _KV, "virtualmachineinstances", ("CREATE",)),
    ("virtualmachineinstances-update-validator.kubevirt.io", "/virtualmachineinstances-validate-update", "kubevirt.io", _KV, "virtualmachineinstances", ("UPDATE",)),
    ("virtualmachine-validator.kubevirt.io", "/virtualmachines-validate", "kubevirt.io", _KV, "virtualmachines", ("CREATE", "UPDATE")),
    ("kubevirt-crd-status-validator.kubevirt.io", "/status-validate", "kubevirt.io", _KV, "virtualmachines/status", ("CREATE", "UPDATE")),
    (f"virtualmachineinstancetype-validator.{_IT}", "/virtualmachineinstancetypes-validate", _IT, ("v1beta1",), "virtualmachineinstancetypes", ("CREATE", "UPDATE")),
    (f"virtualmachineclusterinstancetype-validator.{_IT}", "/virtualmachineclusterinstancetypes-validate", _IT, ("v1beta1",), "virtualmachineclusterinstancetypes", ("CREATE", "UPDATE")),
    (f"virtualmachinepreference-validator.{_IT}", "/virtualmachinepreferences-validate", _IT, ("v1beta1",), "virtualmachinepreferences", ("CREATE", "UPDATE")),
    (f"virtualmachineclusterpreference-validator.{_IT}", "/virtualmachineclusterpreferences-validate", _IT, ("v1beta1",), "virtualmachineclusterpreferences", ("CREATE", "UPDATE")),
)  # fmt: skip


@dataclass(frozen=True)
class Binaries:
    virt_api: Path
    virt_controller: Path

    @property
    def folder(self) -> Path:
        return self.virt_api.parent


def places(given: Path | None = None) -> list[Path]:
    """The folders looked at, in order: ``given``, else ``$KUBEVIRT_BIN`` alone, else the defaults."""
    if given is not None:
        return [given]
    if os.environ.get(BIN_ENV):
        return [Path(os.environ[BIN_ENV])]
    return list(PLACES)


def find_binaries(given: Path | None = None) -> Binaries | None:
    """virt-api and virt-controller from the first folder holding both, or None."""
    for folder in places(given):
        found = [folder / name for name in BINARIES]
        if all(os.access(path, os.X_OK) for path in found):
            return Binaries(*found)
    return None


def unavailable(given: Path | None = None) -> str | None:
    """Why KubeVirt's control plane cannot run here (in one line), or None when it can."""
    if find_binaries(given) is None:
        where = " or ".join(str(p) for p in places(given))
        return (
            f"KubeVirt's virt-api and virt-controller are not in {where} (set {BIN_ENV} to a folder holding "
            "both; docs/development.md says how to build or extract them)"
        )
    return None


def _pair(leaf: trustme.LeafCert, folder: Path) -> tuple[Path, Path]:
    """A certificate and key as ``tls.crt``/``tls.key`` in a folder of their own."""
    folder.mkdir(parents=True, exist_ok=True)
    return (
        write_pem(folder / "tls.crt", *(b.bytes() for b in leaf.cert_chain_pems)),
        write_pem(folder / "tls.key", leaf.private_key_pem.bytes()),
    )


def _webhook(
    ca_bundle: str, url: str, entry: tuple[str, str, str, tuple[str, ...], str, tuple[str, ...]]
) -> dict[str, Any]:
    name, path, group, versions, resource, operations = entry
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "clientConfig": {"url": url + path, "caBundle": ca_bundle},
        "rules": [
            {
                "operations": list(operations),
                "apiGroups": [group],
                "apiVersions": list(versions),
                "resources": [resource],
            }
        ],
    }


class KubeVirtPlane:
    """virt-api and virt-controller against ``cluster``, their files (certificates, kubeconfigs, logs) in
    ``workdir``. ``apiservice`` also registers virt-api as ``v1.subresources.kubevirt.io`` (its expand-spec
    and the other subresources), which the server's kubevirt-group overlay would otherwise hold."""

    def __init__(
        self,
        cluster: ControlPlane,
        workdir: Path,
        binaries: Binaries | None = None,
        *,
        apiservice: bool = False,
    ) -> None:
        found = binaries or find_binaries()
        if found is None:
            raise ProcessError(unavailable() or "KubeVirt's binaries are missing")
        self.binaries = found
        self.cluster = cluster
        self.workdir = workdir
        self.apiservice = apiservice
        workdir.mkdir(parents=True, exist_ok=True)
        self.api_log = workdir / "virt-api.log"
        self.controller_log = workdir / "virt-controller.log"
        self.api_port = free_port()
        self.controller_port = free_port()
        self.api_url = f"https://127.0.0.1:{self.api_port}"
        self.controller_url = f"https://127.0.0.1:{self.controller_port}"
        self.virt_api: subprocess.Popen[bytes] | None = None
        self.virt_controller: subprocess.Popen[bytes] | None = None
        self.ca = trustme.CA()
        self.ca_file = write_pem(workdir / "ca.crt", self.ca.cert_pem.bytes())
        self.seconds: dict[str, float] = {}

    # -- start ---------------------------------------------------------------------------------

    def start(self, timeout: float = 120) -> None:
        """Set up the cluster objects, start both binaries and wait until virt-api serves its webhooks
        (then register them) and virt-controller leads. Stops both when any of it fails."""
        began = time.monotonic()
        try:
            self._install()
            self.virt_api = _start(self._api_command(), self.api_log)
            self.virt_controller = _start(self._controller_command(), self.controller_log)
            self._wait_webhooks_served(timeout)
            self.seconds["virt-api"] = time.monotonic() - began
            self._register()
            self._wait_leader(timeout)
            self.seconds["virt-controller"] = time.monotonic() - began
        except BaseException:
            self.stop()
            raise

    def _install(self) -> None:
        cluster = self.cluster
        cluster.kubectl("apply", "-f", "-", stdin=json.dumps(plane_crds()))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        accounts = [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": n, "namespace": NAMESPACE}}
            for n in (API_ACCOUNT, CONTROLLER_ACCOUNT)
        ]
        # Both binaries act for KubeVirt on every kind it owns; virt-operator gives each a narrower role.
        bindings = [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{n}-kubevirt-expand-devcluster"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [{"kind": "ServiceAccount", "name": n, "namespace": NAMESPACE}],
            }
            for n in (API_ACCOUNT, CONTROLLER_ACCOUNT)
        ]
        self._server_side_apply(namespace, *accounts, *bindings)
        self.configure({})
        for account, name in ((API_ACCOUNT, "virt-api"), (CONTROLLER_ACCOUNT, "virt-controller")):
            kubeconfig(
                self.workdir / f"{name}.kubeconfig",
                cluster.url,
                cluster.pki.ca_file,
                token=cluster.token(account, NAMESPACE, duration="8760h"),
            )
        names = ("virt-api.kubevirt.svc", "virt-api.kubevirt.svc.cluster.local", "localhost", "127.0.0.1")
        self.serving = _pair(
            self.ca.issue_cert(*names, common_name="virt-api.kubevirt.svc"), self.workdir / "virt-api-certs"
        )
        self.handler = _pair(
            self.ca.issue_cert("virt-handler.kubevirt.svc", "127.0.0.1"), self.workdir / "handler-certs"
        )
        self.metrics = _pair(
            self.ca.issue_cert("virt-controller.kubevirt.svc", "127.0.0.1"), self.workdir / "controller-certs"
        )

    def _server_side_apply(self, *objects: dict[str, Any]) -> None:
        """Server-side apply under a manager of its own, so a later client-side ``kubectl apply`` of the same
        objects (examples/kubevirt.yaml) merges with what the plane needs instead of removing it."""
        self.cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            f"--field-manager={FIELD_MANAGER}",
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
        )

    def configure(self, configuration: dict[str, Any]) -> dict[str, Any]:
        """Make the KubeVirt CR's ``spec.configuration`` the plane's own settings with ``configuration``
        merged over them (server-side apply: fields others set stay), and its status what virt-operator
        writes. Both binaries and the server take it from their watches. Returns the CR as stored."""
        merged = {**CONFIGURATION, **configuration}
        cr = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": CR_NAME, "namespace": NAMESPACE},
            "spec": {"configuration": merged},
        }
        self._server_side_apply(cr)
        self.cluster.kubectl(
            "patch",
            "kubevirt",
            "-n",
            NAMESPACE,
            CR_NAME,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": STATUS}),
        )
        stored: dict[str, Any] = self.cluster.get_json("kubevirt", "-n", NAMESPACE, CR_NAME)
        return stored

    def _api_command(self) -> list[str]:
        cert, key = self.serving
        handler_cert, handler_key = self.handler
        return [
            str(self.binaries.virt_api),
            f"--kubeconfig={self.workdir / 'virt-api.kubeconfig'}",
            "--listen=127.0.0.1",
            f"--port={self.api_port}",
            f"--tls-cert-file={cert}",
            f"--tls-key-file={key}",
            f"--handler-cert-file={handler_cert}",
            f"--handler-key-file={handler_key}",
        ]

    def _controller_command(self) -> list[str]:
        cert, key = self.metrics
        return [
            str(self.binaries.virt_controller),
            f"--kubeconfig={self.workdir / 'virt-controller.kubeconfig'}",
            "--listen=127.0.0.1",
            f"--port={self.controller_port}",
            f"--launcher-image={LAUNCHER_IMAGE}",
            f"--exporter-image={LAUNCHER_IMAGE}",
            f"--prom-cert-file={cert}",
            f"--prom-key-file={key}",
        ]

    def _context(self) -> ssl.SSLContext:
        # virt-controller serves /leader with a certificate of its own making, not the one given for its
        # metrics: both are our own processes on loopback, so the probe does not verify.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def _status(self, url: str) -> tuple[int, bytes]:
        """GET ``url`` of one of the binaries: (status, body); (0, b"") when nothing answers yet."""
        try:
            with urllib.request.urlopen(url, timeout=2, context=self._context()) as resp:
                return int(resp.status), resp.read()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read()
        except (OSError, urllib.error.URLError):
            return 0, b""

    def _check_alive(self) -> None:
        for name, process, log in (
            ("virt-api", self.virt_api, self.api_log),
            ("virt-controller", self.virt_controller, self.controller_log),
        ):
            if process is not None and process.poll() is not None:
                raise ProcessError(f"{name} exited with {process.returncode}:\n{tail(log, 20)}")

    def _wait_webhooks_served(self, timeout: float) -> None:
        # virt-api answers its webhook paths once its informers synced: a GET gets 400 (not a POST of an
        # AdmissionReview) then. Never probe with POST {}: the admitter dereferences a nil request and panics.
        limit = patience(timeout)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            self._check_alive()
            if self._status(f"{self.api_url}/virtualmachines-validate")[0] == 400:
                return
            time.sleep(0.2)
        raise ProcessError(
            f"virt-api is not serving its webhooks after {limit:.0f} s:\n{tail(self.api_log, 20)}"
        )

    def _wait_leader(self, timeout: float) -> None:
        limit = patience(timeout)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            self._check_alive()
            status, body = self._status(f"{self.controller_url}/leader")
            if status == 200 and (json.loads(body or b"{}").get("apiserver") or {}).get("leader") == "true":
                return
            time.sleep(0.2)
        raise ProcessError(
            f"virt-controller did not become leader in {limit:.0f} s:\n{tail(self.controller_log, 20)}"
        )

    def _register(self) -> None:
        bundle = base64.b64encode(self.ca.cert_pem.bytes()).decode()
        objects: list[dict[str, Any]] = [
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": MUTATING},
                "webhooks": [_webhook(bundle, self.api_url, w) for w in MUTATING_WEBHOOKS],
            },
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": VALIDATING},
                "webhooks": [_webhook(bundle, self.api_url, w) for w in VALIDATING_WEBHOOKS],
            },
        ]
        if self.apiservice:
            # As KubeVirt's tools/peer does outside a cluster: the aggregator dials localhost:<port> and checks
            # the serving certificate against virt-api.kubevirt.svc.
            objects += [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "virt-api", "namespace": NAMESPACE},
                    "spec": {
                        "type": "ExternalName",
                        "externalName": "localhost",
                        "ports": [{"name": "https", "port": self.api_port, "protocol": "TCP"}],
                    },
                },
                {
                    "apiVersion": "apiregistration.k8s.io/v1",
                    "kind": "APIService",
                    "metadata": {"name": APISERVICE},
                    "spec": {
                        "group": "subresources.kubevirt.io",
                        "version": "v1",
                        "groupPriorityMinimum": 1000,
                        "versionPriority": 15,
                        "caBundle": bundle,
                        "service": {"name": "virt-api", "namespace": NAMESPACE, "port": self.api_port},
                    },
                },
            ]
        self.cluster.apply(*objects)

    # -- use -----------------------------------------------------------------------------------

    def new_namespace(self, prefix: str) -> str:
        """A fresh namespace ready for VMs: with the ServiceAccount ``default`` that the ServiceAccount
        admission plugin wants for every virt-launcher Pod (no controller-manager creates it here)."""
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.prepare_namespace(name)
        return name

    def prepare_namespace(self, name: str) -> None:
        self._server_side_apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": name},
            },
        )

    @property
    def running(self) -> bool:
        return all(p is not None and p.poll() is None for p in (self.virt_api, self.virt_controller))

    def pids(self) -> dict[str, int]:
        return {
            name: process.pid
            for name, process in (("virt-api", self.virt_api), ("virt-controller", self.virt_controller))
            if process is not None
        }

    def logs(self, lines: int = 20) -> str:
        return f"virt-api:\n{tail(self.api_log, lines)}\nvirt-controller:\n{tail(self.controller_log, lines)}"

    # -- stop ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop both, then remove the webhook configurations: with failurePolicy Fail they would refuse every
        VM, VMI, instancetype and preference write once virt-api is gone."""
        _stop(self.virt_controller)
        _stop(self.virt_api)
        if self.cluster.apiserver_running:
            kinds = ["mutatingwebhookconfiguration", MUTATING, "validatingwebhookconfiguration", VALIDATING]
            self.cluster.kubectl("delete", kinds[0], kinds[1], "--ignore-not-found", check=False)
            self.cluster.kubectl("delete", kinds[2], kinds[3], "--ignore-not-found", check=False)
            if self.apiservice:
                self.cluster.kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
