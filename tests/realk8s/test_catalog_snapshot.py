"""``kubevirt-expand catalog snapshot`` against the real control plane: the cluster's instancetypes and
preferences (common-instancetypes' bundle applied as a cluster admin would) and a namespace's own, written
as YAML without what the API server set, and the GitOps fixture's VMs judged against the snapshot exactly as
against the bundle itself (tests/cli/test_gitops.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.cli.test_expand_gate import COMMAND
from tests.cli.test_gitops import BUNDLE, HERE
from tests.realk8s.controlplane import ControlPlane

SERVER_SET = {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"}


def bundle() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((HERE / BUNDLE).read_text()) if d]


def snapshot(cluster: ControlPlane, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *COMMAND,
            "catalog",
            "snapshot",
            "--kubeconfig",
            str(cluster.admin_kubeconfig),
            "-o",
            str(out),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_snapshot_holds_the_clusters_catalog_and_judges_as_the_bundle(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    namespace = control_plane.new_namespace("catalog")
    control_plane.apply(*bundle())
    own = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "team-small", "namespace": namespace, "labels": {"team": "a"}},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": "256Mi"}},
    }
    control_plane.apply(own)
    out = tmp_path / "catalog.yaml"
    proc = snapshot(control_plane, out, "-n", namespace)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(out.read_text()) if d]
    by_key = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
    # The bundle's objects as applied: same type, name, labels, annotations and spec; nothing the server set.
    for obj in [*bundle(), own]:
        key = (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        got = by_key[key]
        assert got["apiVersion"] == obj["apiVersion"]
        assert got["spec"] == obj["spec"]
        assert got["metadata"].get("labels") == obj["metadata"].get("labels")
        assert got["metadata"].get("annotations", {}) == obj["metadata"].get("annotations", {})
    assert not any(SERVER_SET & set(d["metadata"]) for d in docs)
    assert not any("status" in d for d in docs)
    # Cluster-scoped kinds first (instancetypes, then preferences), each sorted by name, then the namespace's.
    kinds = [d["kind"] for d in docs if d["kind"] != "KubeVirt"]
    assert kinds == sorted(
        kinds, key=lambda k: (k.startswith("VirtualMachine") and "Cluster" not in k, "Preference" in k)
    )
    names = [d["metadata"]["name"] for d in docs if d["kind"] == "VirtualMachineClusterInstancetype"]
    assert names == sorted(names)
    # The KubeVirt CR is there when the cluster has one, and said missing when not.
    crs = control_plane.get_json("kubevirts", "-A")["items"]
    assert len([d for d in docs if d["kind"] == "KubeVirt"]) == min(len(crs), 1)
    if not crs:
        assert "Warning: the cluster has no KubeVirt CR" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("catalog: wrote ")
    assert f"to {out}" in proc.stderr

    # Another namespace's instancetypes are not taken, nor are a namespace's without -n.
    alone = tmp_path / "cluster-only.yaml"
    assert snapshot(control_plane, alone).returncode == 0
    assert not any(
        d["metadata"].get("namespace") == namespace for d in yaml.safe_load_all(alone.read_text()) if d
    )

    # The fixture's VMs get the same verdicts against the snapshot as against the bundle.
    def judge(catalog: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *COMMAND,
                "expand",
                "-f",
                "repo",
                "--catalog",
                catalog,
                "--exclude",
                "templates",
                "--validate",
                "-o",
                "jsonl",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=HERE,
        )

    from_snapshot, from_bundle = judge(str(out)), judge(BUNDLE)
    assert from_snapshot.returncode == from_bundle.returncode == 1, from_snapshot.stderr
    assert from_snapshot.stdout == from_bundle.stdout
