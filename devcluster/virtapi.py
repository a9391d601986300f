"""KubeVirt's own virt-api beside the server, behind the same kube-apiserver: the real server whose
expand-spec and expand-vm-spec answers ours must equal (tests/virtapi, hack/benchmarks/virtapi.py).

``../shared/oracle/build.sh`` builds virt-api from KubeVirt's source, unmodified, at the commit the golden
cases match; ``../shared/oracle/virt-api/run.sh`` runs it on 127.0.0.1 outside a cluster and registers it as
``v1.subresources.kubevirt.io`` (so ours is deployed with the own-group overlay beside it). This module finds
the binary, runs that script against a :class:`~devcluster.controlplane.ControlPlane`, sets the KubeVirt
CR's configuration both servers read, and stops the process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Final

from devcluster.controlplane import KUBECTL, ControlPlane, ProcessError, tail
from devcluster.paths import REPO, SHARED_K8S
from devcluster.patience import patience

ENV: Final = "KUBEVIRT_VIRT_API"
PLACES: Final = (
    Path.home() / ".cache" / "kubevirt-oracle" / "bin" / "virt-api",  # build.sh's default OUT
    REPO.parent / "oracle" / "bin" / "virt-api",
    REPO.parent / "oracle-bin" / "virt-api",
)
RUN_SCRIPT: Final = SHARED_K8S.parent / "oracle" / "virt-api" / "run.sh"
NAMESPACE: Final = "kubevirt"  # run.sh's: virt-api's namespace, and its KubeVirt CR's
CR_NAME: Final = "kubevirt"
APISERVICE: Final = "v1.subresources.kubevirt.io"
# virt-api's client-side token buckets (200 QPS, burst 400 by default; one for its API client, one for
# SubjectAccessReviews) cap it near 70 GET expand-spec/s; run.sh documents lifting them so, live.
UNLIMITED: Final = {"tokenBucketRateLimiter": {"qps": 100000, "burst": 100000}}
RATE_LIMITS: Final = {
    "apiConfiguration": {"restClient": {"rateLimiter": UNLIMITED}},
    "webhookConfiguration": {"restClient": {"rateLimiter": UNLIMITED}},
}


def find_virt_api(given: str | None = None) -> Path | None:
    """The virt-api binary: ``given``, else ``$KUBEVIRT_VIRT_API``, else where build.sh puts it; None when
    there is none."""
    given = given or os.environ.get(ENV)
    if given:
        return Path(given) if Path(given).is_file() else None
    return next((p for p in PLACES if p.is_file()), None)


def unavailable(given: str | None = None) -> str | None:
    """Why virt-api cannot run here, or None when it can."""
    if find_virt_api(given) is None:
        where = given or os.environ.get(ENV) or " or ".join(str(p) for p in PLACES)
        return (
            f"KubeVirt's virt-api is not built (looked at {where}; set {ENV}, see ../shared/oracle/build.sh)"
        )
    if not RUN_SCRIPT.is_file():
        return f"no {RUN_SCRIPT} (../shared/oracle)"
    if KUBECTL is None:
        return "kubectl is not installed"
    return None


def architecture(configuration: dict[str, Any]) -> str:
    """``status.defaultArchitecture`` as virt-operator sets it (the golden cases' rule): the configured
    default architecture, else amd64."""
    arch = (configuration.get("architectureConfiguration") or {}).get("defaultArchitecture")
    return str(arch) if arch else "amd64"


class VirtApi:
    """virt-api started by run.sh against ``cluster`` (the admin's kubeconfig), its files in ``workdir``."""

    def __init__(self, cluster: ControlPlane, workdir: Path, binary: Path | None = None) -> None:
        found = binary or find_virt_api()
        if found is None:
            raise ProcessError(unavailable() or "no virt-api")
        self.binary = found
        self.cluster = cluster
        self.workdir = workdir
        self.log_file = workdir / "virt-api.log"
        self.pid: int | None = None
        self.port: int | None = None

    def start(self, timeout: float = 180) -> None:
        """Run run.sh (certificates, the objects virt-api needs, the process, its APIService) and wait until
        the aggregator reports it Available; then lift its client rate limits."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        env.update(KUBECONFIG=str(self.cluster.admin_kubeconfig), BIN=str(self.binary), DIR=str(self.workdir))
        env["PATH"] = f"{Path(str(KUBECTL)).parent}:{env.get('PATH', '')}"
        result = subprocess.run(
            ["bash", str(RUN_SCRIPT)],
            env=env,
            capture_output=True,
            text=True,
            timeout=patience(timeout),
            check=False,
        )
        pid_file = self.workdir / "virt-api.pid"
        if pid_file.is_file():
            self.pid = int(pid_file.read_text().strip())
        if result.returncode != 0:
            self.stop()
            raise ProcessError(
                f"run.sh exited {result.returncode}: {result.stderr.strip()}\n{tail(self.log_file)}"
            )
        self.port = int((self.workdir / "virt-api.port").read_text().strip())
        self.configure({})
        self.wait_available(timeout)

    def wait_available(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + patience(timeout)
        while time.monotonic() < deadline:
            if not self.running:
                raise ProcessError(f"virt-api exited:\n{tail(self.log_file)}")
            obj = self.cluster.get_json("apiservice", APISERVICE)
            conditions = (obj.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Available" and c["status"] == "True" for c in conditions):
                return
            time.sleep(0.25)
        raise ProcessError(f"APIService {APISERVICE} not Available\n{tail(self.log_file)}")

    def configure(self, configuration: dict[str, Any]) -> dict[str, Any]:
        """Make ``configuration`` (a KubeVirtConfiguration) the KubeVirt CR's, with virt-api's rate limits
        lifted (which no expansion reads), and its status as virt-operator would write it; returns the CR
        as stored. virt-api and the server both take it from their watches."""
        cr = self.cluster.get_json("kubevirt", "-n", NAMESPACE, CR_NAME)
        spec = dict(cr.get("spec") or {})
        spec["configuration"] = {**configuration, **RATE_LIMITS}
        cr["spec"] = spec
        cr["status"] = {"phase": "Deployed", "defaultArchitecture": architecture(configuration)}
        for member in ("managedFields", "resourceVersion"):
            cr["metadata"].pop(member, None)
        self.cluster.kubectl("replace", "-f", "-", stdin=json.dumps(cr))
        stored: dict[str, Any] = self.cluster.get_json("kubevirt", "-n", NAMESPACE, CR_NAME)
        return stored

    @property
    def running(self) -> bool:
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        # A zombie of ours (run.sh's child, reparented) counts as gone.
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM (virt-api exits 5-10 s later), then SIGKILL after ``timeout``."""
        if self.pid is None or not self.running:
            return
        os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.running:
            os.kill(self.pid, signal.SIGKILL)

    def log(self) -> str:
        return tail(self.log_file, 15)
