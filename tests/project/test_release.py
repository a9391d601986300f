"""Releases a user can pin: the version comes from the git tag (setuptools-scm, pyproject.toml), and the
commit with it, in ``kubevirt-expand --version`` and the server's ``/version``. Built here from a temporary
repository holding the package's files (this repository's tags are left alone): tagged ``v1.2.3``, then one
commit later without a tag, as a clone of a branch with no release yet is."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]
# pip builds the wheels in an isolated environment from the package index, as the packaging tests do.
pytestmark = pytest.mark.xdist_group("packaging")


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def built(repo: Path, into: Path) -> Path:
    """The package as pip builds it from ``repo`` (the wheel's files, unpacked into ``into``)."""
    wheels = into / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(repo)],
        capture_output=True,
        text=True,
        timeout=patience(600),
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("SETUPTOOLS_SCM_")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = wheels.glob("*.whl")
    site = into / "site"
    zipfile.ZipFile(wheel).extractall(site)
    return site


def run(site: Path, code: str) -> str:
    """What ``code`` prints with the built package first on the import path (the rest from this venv)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=site,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=patience(120),
        check=True,
    ).stdout


VERSION = "import sys; from apiserver.cli import main; sys.exit(main(['--version']))"
SERVER = (
    "import json; from apiserver.version import server_version_info; print(json.dumps(server_version_info()))"
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("release") / "repo"
    repo.mkdir()
    for name in ("pyproject.toml", "README.md", ".gitignore"):
        shutil.copy2(ROOT / name, repo / name)
    shutil.copytree(
        ROOT / "apiserver", repo / "apiserver", ignore=shutil.ignore_patterns("__pycache__", "_version.py")
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the package")
    return repo


def test_a_tag_is_the_version_and_the_commit_comes_with_it(repo: Path, tmp_path: Path) -> None:
    git(repo, "tag", "-a", "v1.2.3", "-m", "kubevirt-expand-apiserver 1.2.3")
    try:
        site = built(repo, tmp_path)
    finally:
        git(repo, "tag", "-d", "v1.2.3")
    commit = git(repo, "rev-parse", "HEAD")
    assert run(site, VERSION).splitlines()[0] == f"kubevirt-expand 1.2.3 (commit {commit[:12]})"
    info = json.loads(run(site, SERVER))
    assert (info["major"], info["minor"], info["gitVersion"]) == ("1", "2", "v1.2.3")
    assert (info["gitCommit"], info["gitTreeState"]) == (commit, "clean")


def test_without_a_tag_the_version_counts_the_commits(repo: Path, tmp_path: Path) -> None:
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\nA change.\n")
    git(repo, "commit", "-q", "-am", "a change")
    commit = git(repo, "rev-parse", "HEAD")
    site = built(repo, tmp_path)
    version = f"0.1.dev2+g{commit[:9]}"
    assert run(site, VERSION).splitlines()[0] == f"kubevirt-expand {version} (commit {commit[:12]})"
    assert json.loads(run(site, SERVER))["gitVersion"] == f"v0.1.0-dev.2+g{commit[:9]}"
