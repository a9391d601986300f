"""The real control plane of the tests, now in devcluster/controlplane.py (hack/dev-cluster.sh starts the same
one): these names stay importable from here."""

from __future__ import annotations

from devcluster.controlplane import (
    FRONT_PROXY_CN,
    KUBECTL,
    ClusterPKI,
    ControlPlane,
    Credentials,
    ProcessError,
    Response,
    free_port,
    kubeconfig,
    poll,
    tail,
    unavailable,
    write_pem,
)
from devcluster.paths import ASSETS_ENV, CRDS_FILE, REPO, SHARED_K8S, assets_dir

__all__ = [
    "ASSETS_ENV",
    "CRDS_FILE",
    "FRONT_PROXY_CN",
    "KUBECTL",
    "REPO",
    "SHARED_K8S",
    "ClusterPKI",
    "ControlPlane",
    "Credentials",
    "ProcessError",
    "Response",
    "assets_dir",
    "free_port",
    "kubeconfig",
    "poll",
    "tail",
    "unavailable",
    "write_pem",
]
