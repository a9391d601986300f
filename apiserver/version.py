"""This package's version and the KubeVirt code its output matches.

One place for both, so ``kubevirt-expand --version``, the server's ``/version`` and the README say the
same. The KubeVirt commit is the one the conformance corpus (``../shared/conformance``) was produced
with; ControllerRevisions in pre-v1beta1 formats are decoded as the release named by ``LEGACY_DECODING``
decoded them.
"""

from __future__ import annotations

import platform
import sys
from functools import cache

__all__ = [
    "KUBEVIRT_COMMIT",
    "KUBEVIRT_DATE",
    "KUBEVIRT_MATCHED",
    "LEGACY_DECODING",
    "kubevirt_info",
    "package_version",
    "server_version_info",
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
def package_version() -> str:
    """The installed distribution's version without a ``v`` (``0.0.0`` from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0.0.0"


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


def base_info(git_version: str) -> dict[str, str]:
    """The members of Go's ``version.Info`` that KubeVirt's virt-api also writes."""
    return {
        "gitVersion": git_version,
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "platform": _platform(),
    }


def server_version_info() -> dict[str, object]:
    """``/version`` as kube-apiserver writes it (k8s.io/apimachinery ``version.Info``: ``major``,
    ``minor``, ``gitVersion`` ...), for this server, plus the KubeVirt code matched."""
    numbers = package_version().split(".")
    major = numbers[0] if numbers and numbers[0].isdigit() else "0"
    minor = numbers[1] if len(numbers) > 1 and numbers[1].isdigit() else "0"
    return {
        "major": major,
        "minor": minor,
        **base_info("v" + package_version()),
        "kubevirt": kubevirt_info(),
    }
