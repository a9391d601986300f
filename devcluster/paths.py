"""Where the control plane's parts are found (standard library only, so ``--help`` needs no virtualenv)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The same folder tests/support/shared.py reads: ../shared beside the repository, or where the variable points.
SHARED_ENV = "KUBEVIRT_EXPAND_SHARED"
SHARED_K8S = Path(os.environ.get(SHARED_ENV) or REPO.parent / "shared").absolute() / "k8s"
ASSETS_ENV = "KUBEBUILDER_ASSETS"
CRDS_FILE = SHARED_K8S / "kubevirt-crds.yaml"


def assets_dir() -> Path:
    """The folder holding etcd and kube-apiserver: ``$KUBEBUILDER_ASSETS``, else ../shared/k8s/bin."""
    return Path(os.environ.get(ASSETS_ENV) or SHARED_K8S / "bin")
