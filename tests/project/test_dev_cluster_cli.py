"""hack/dev-cluster.sh's command line without starting anything: its help needs no virtualenv, its errors
name what is missing, it never deletes a folder that is not a dev cluster's, and its built-in CRDs agree
with ../shared's. (tests/realk8s/test_dev_cluster.py brings one up.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from devcluster.crds import kubevirt_crds
from devcluster.paths import CRDS_FILE
from tests.support import shared

REPO = shared.REPO


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120, env={**_env(), **env})


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "KUBEBUILDER_ASSETS"}


def devcluster(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "devcluster", *args, **env)


def test_help_needs_no_virtualenv(tmp_path: Path) -> None:
    for args in ([], ["--help"], ["up", "--help"], ["down", "-h"]):
        proc = run("bash", "hack/dev-cluster.sh", *args, VENV=str(tmp_path / "venv"))
        # No command: the usage on stderr, exit 2 (a usage error), as argparse does.
        assert (proc.stdout if args else proc.stderr).startswith("usage: hack/dev-cluster.sh"), proc.stderr
        assert proc.returncode == (0 if args else 2)
    assert not (tmp_path / "venv").exists()
    text = run("bash", "hack/dev-cluster.sh", "up", "--help").stdout
    for flag in ("--dir", "--assets", "--crds", "--overlay", "--no-examples"):
        assert flag in text
    assert "KUBEBUILDER_ASSETS" in text and "export KUBECONFIG=$(hack/dev-cluster.sh up)" in text


def test_up_names_the_missing_binaries_and_starts_nothing(tmp_path: Path) -> None:
    proc = devcluster("up", "--dir", str(tmp_path / "c"), "--assets", str(tmp_path / "none"))
    assert proc.returncode == 1
    assert f"no etcd in {tmp_path / 'none'}" in proc.stderr and "KUBEBUILDER_ASSETS" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "c").exists()


def test_up_refuses_a_folder_that_is_not_a_dev_clusters(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assets = tmp_path / "assets"
    assets.mkdir()
    for name in ("etcd", "kube-apiserver"):
        (assets / name).write_text("#!/bin/sh\nexit 1\n")
        (assets / name).chmod(0o755)
    proc = devcluster("up", "--dir", str(mine), "--assets", str(assets))
    assert proc.returncode == 1 and "is not a dev cluster's folder" in proc.stderr
    assert (mine / "notes.txt").read_text() == "keep me"


def test_status_and_down_without_a_cluster(tmp_path: Path) -> None:
    status = devcluster("status", "--dir", str(tmp_path))
    assert status.returncode == 1 and f"no dev cluster in {tmp_path}" in status.stderr
    assert f"hack/dev-cluster.sh up --dir {tmp_path}" in status.stderr
    down = devcluster("down", "--dir", str(tmp_path))
    assert down.returncode == 0 and "nothing to stop" in down.stderr
    assert tmp_path.exists()  # not a dev cluster's folder: left alone
    assert devcluster("status", "--", "--v=1").returncode == 2  # flags after -- are for up


@shared.needs_shared(CRDS_FILE)
def test_the_built_in_crds_declare_what_the_shared_ones_do() -> None:
    def essentials(crd: dict) -> tuple:  # type: ignore[type-arg]
        spec = crd["spec"]
        versions = [(v["name"], v["served"], v["storage"]) for v in spec["versions"]]
        names = spec["names"]
        return (
            crd["metadata"]["name"],
            spec["group"],
            spec["scope"],
            names["kind"],
            names["plural"],
            versions,
        )

    shared_crds = [doc for doc in yaml.safe_load_all(CRDS_FILE.read_text()) if doc]
    built_in = kubevirt_crds()["items"]
    assert sorted(map(essentials, built_in)) == sorted(map(essentials, shared_crds))
    # `kubectl get vm` works on either.
    assert all(
        "vm" in c["spec"]["names"]["shortNames"]
        for c in built_in
        if c["spec"]["names"]["kind"] == "VirtualMachine"
    )


def test_up_passes_more_kube_apiserver_flags_on() -> None:
    from devcluster.cli import build_parser
    from devcluster.controlplane import VALIDATING_ADMISSION_POLICY_ARGS

    given = [f"--apiserver-arg={flag}" for flag in VALIDATING_ADMISSION_POLICY_ARGS]
    assert build_parser().parse_args(["up", *given]).apiserver_arg == list(VALIDATING_ADMISSION_POLICY_ARGS)
    assert build_parser().parse_args(["up"]).apiserver_arg == []
