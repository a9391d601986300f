"""This package's version and the KubeVirt code its output matches.

One place for both, so ``kubevirt-expand --version``, the server's ``/version`` and the README say the
same. The package's version and commit come from git when the package is built or installed
(setuptools-scm, ``[tool.setuptools_scm]`` in pyproject.toml, writes them into ``apiserver/_version.py``):
a tag ``v1.2.3`` gives ``1.2.3``, a commit after it ``1.2.4.devN+gHASH``, a clone without tags
``0.1.devN+gHASH``; a tree without git (the image's build context) says ``0.1.dev0`` unless given one
(Dockerfile: ``--build-arg VERSION=... --build-arg COMMIT=...``). The KubeVirt commit is the one the conformance corpus (``../shared/conformance``) was produced
with; ControllerRevisions in pre-v1beta1 formats are decoded as the release named by ``LEGACY_DECODING``
decoded them.
"""

from __future__ import annotations

import importlib
import platform
import re
import sys
from functools import cache
from typing import Any

__all__ = [
    "KUBEVIRT_COMMIT",
    "KUBEVIRT_DATE",
    "KUBEVIRT_MATCHED",
    "LEGACY_DECODING",
    "kubevirt_info",
    "package_commit",
    "package_version",
    "semantic_version",
    "server_version_info",
    "version_line",
]

PACKAGE = "kubevirt-expand-apiserver"
KUBEVIRT_COMMIT = "d923fdb815cd2016ddaebdaaa51db04133576d72"
KUBEVIRT_DATE = "2026-08-22"
LEGACY_DECODING = "v1.6.6"
KUBEVIRT_MATCHED = (
    f"KubeVirt main at {KUBEVIRT_COMMIT[:12]} ({KUBEVIRT_DATE}); "
    f"legacy ControllerRevisions decoded as {LEGACY_DECODING}"
)


@cache
def _built() -> Any:
    """``apiserver/_version.py`` as setuptools-scm wrote it, or None (a checkout never installed)."""
    try:
        return importlib.import_module("apiserver._version")
    except ImportError:
        return None


@cache
def package_version() -> str:
    """The package's version without a ``v``: what setuptools-scm wrote at the build, else the installed
    distribution's (``0.0.0`` from a checkout that was never installed)."""
    built = _built()
    if built is not None:
        return str(built.VERSION)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:  # pragma: no cover - running from a checkout never installed
        return "0.0.0"


def package_commit() -> tuple[str, bool]:
    """(the full git commit the package was built from, whether that tree had uncommitted changes);
    ("", False) when the build did not know it (no git, no ``COMMIT`` build argument)."""
    built = _built()
    node = str(getattr(built, "NODE", None) or "")
    return node.removeprefix("g"), bool(getattr(built, "DIRTY", False)) and bool(node)


_PEP440 = re.compile(
    r"(?P<release>\d+(?:\.\d+)*)(?:\.?(?P<pre>a|b|rc)\.?(?P<pre_n>\d+))?(?:\.?post\.?(?P<post>\d+))?"
    r"(?:\.?dev\.?(?P<dev>\d+))?(?:\+(?P<local>[A-Za-z0-9.]+))?"
)


def semantic_version(version: str) -> str:
    """A PEP 440 version as the semantic version ``version.Info.gitVersion`` holds, ``v`` included
    (``0.1.dev5+gabc`` is ``v0.1.0-dev.5+gabc``): kubectl refuses a ``gitVersion`` it cannot parse as one."""
    found = _PEP440.fullmatch(version)
    if found is None:
        return "v0.0.0+" + re.sub(r"[^A-Za-z0-9]+", ".", version).strip(".")
    numbers = [*found["release"].split("."), "0", "0"][:3]
    pre = [
        f"{name}.{found[group]}"
        for name, group in ((found["pre"], "pre_n"), ("post", "post"), ("dev", "dev"))
        if name and found[group] is not None
    ]
    text = "v" + ".".join(str(int(n)) for n in numbers)
    if pre:
        text += "-" + ".".join(pre)
    if found["local"]:
        text += "+" + found["local"]
    return text


def version_line() -> str:
    """``kubevirt-expand --version``'s first line: the version and the commit it was built from."""
    commit, dirty = package_commit()
    built = (
        f"commit {commit[:12]}{', with uncommitted changes' if dirty else ''}" if commit else "commit unknown"
    )
    return f"kubevirt-expand {package_version()} ({built})"


def kubevirt_info() -> dict[str, str]:
    """The KubeVirt code the output matches, as ``/version``'s extra ``kubevirt`` member."""
    return {
        "gitVersion": "main",
        "gitCommit": KUBEVIRT_COMMIT,
        "commitDate": KUBEVIRT_DATE,
        "legacyDecoding": LEGACY_DECODING,
    }


def _platform() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return f"{sys.platform}/{arch}"


def base_info(git_version: str, git_commit: str = "", tree_state: str = "") -> dict[str, str]:
    """The members of Go's ``version.Info`` that KubeVirt's virt-api also writes."""
    return {
        "gitVersion": git_version,
        "gitCommit": git_commit,
        "gitTreeState": tree_state,
        "buildDate": "",
        "goVersion": "",
        "compiler": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "platform": _platform(),
    }


def server_version_info() -> dict[str, object]:
    """``/version`` as kube-apiserver writes it (k8s.io/apimachinery ``version.Info``: ``major``,
    ``minor``, ``gitVersion`` ...), for this server, plus the KubeVirt code matched."""
    git_version = semantic_version(package_version())
    major, minor, _ = git_version[1:].split("-")[0].split("+")[0].split(".")
    commit, dirty = package_commit()
    # As Kubernetes' builds say it: "clean" or "dirty" for a build from git, "" when unknown.
    tree_state = ("dirty" if dirty else "clean") if commit else ""
    return {
        "major": major,
        "minor": minor,
        **base_info(git_version, commit, tree_state),
        "kubevirt": kubevirt_info(),
    }
