"""The base install (no ``cluster`` or ``server`` extra) asked to read a cluster: each command that reads
one says, in its one ``error:`` line, which module is missing and which extra to install, and exits 2.

The missing module is simulated in a child interpreter (``sys.modules['aiohttp'] = None`` makes its import
fail as an absent package's does); tests/project/test_packaging.py runs a real base install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.http_helpers import REPO

WITHOUT_CLIENT = """
import sys
for name in ("aiohttp", "kubernetes_asyncio"):
    sys.modules[name] = None
from apiserver.cli import main
sys.exit(main(sys.argv[1:]))
"""

EXTRA = "pip install 'kubevirt-expand-apiserver[cluster]'"


@pytest.mark.parametrize(
    "argv",
    [
        ("resources", "--cluster", "-n", "team-a"),
        ("catalog", "snapshot", "-o", "catalog.yaml"),
        ("catalog", "sizes", "--cluster", "--configmap", "kubevirt-expand/vm-sizes"),
    ],
    ids=["resources", "snapshot", "sizes"],
)
def test_reading_a_cluster_without_the_client_names_the_extra(tmp_path: Path, argv: tuple[str, ...]) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\n")
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_CLIENT, *argv, "--kubeconfig", str(config)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "error: reading a cluster needs the cluster client (no module 'aiohttp'); "
        f"install it with: {EXTRA} (the server extra includes it)"
    ]
    assert not (tmp_path / "catalog.yaml").exists()


def test_the_readme_names_the_extra_each_command_needs() -> None:
    readme = (REPO / "README.md").read_text()
    assert (
        "`resources --cluster`, `catalog snapshot`, `catalog sizes --cluster`) needs the `cluster`" in readme
    )
    assert "pip install '.[cluster]'" in readme
