"""The server as apiservice/ deploys it beside a real control plane, now in devcluster/deployed.py
(hack/dev-cluster.sh registers it the same way): these names stay importable from here."""

from __future__ import annotations

from devcluster.deployed import (
    NAMESPACE,
    OVERLAY,
    SERVICE,
    SERVICE_ACCOUNT,
    SERVICE_DNS,
    SERVING_SECRET,
    DeployedServer,
    SecretVolume,
    rendered_manifests,
)

__all__ = [
    "NAMESPACE",
    "OVERLAY",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "SERVICE_DNS",
    "SERVING_SECRET",
    "DeployedServer",
    "SecretVolume",
    "rendered_manifests",
]
