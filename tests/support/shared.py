"""Where ``../shared`` is, and the one way a test that needs it behaves when it is not there.

``../shared`` (beside the repository, or wherever ``KUBEVIRT_EXPAND_SHARED`` points) holds KubeVirt's
golden cases, its Go types and OpenAPI document, and a real kube-apiserver with etcd. A clone without it
still runs every other test: those that need it carry the ``needs_shared`` mark and skip with one reason,
which pytest's summary folds into one line. When it must be there (``CI`` or
``KUBEVIRT_EXPAND_REQUIRE_SHARED`` set), its absence stops the run before the first test, so a run never
passes by skipping; and a ``../shared`` that is there but lacks a part fails the tests needing that part.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

SHARED_ENV = "KUBEVIRT_EXPAND_SHARED"
CASES_ENV = "KUBEVIRT_EXPAND_CONFORMANCE"
REQUIRE_ENVS = ("KUBEVIRT_EXPAND_REQUIRE_SHARED", "CI")
MARK = "needs_shared"
PLANE_MARK = "needs_control_plane"

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get(SHARED_ENV) or REPO.parent / "shared").absolute()
# KUBEVIRT_EXPAND_CONFORMANCE points at another cases folder (the held-back cases, built the same way).
CASES_DIR = Path(os.environ.get(CASES_ENV) or SHARED / "conformance" / "cases").absolute()
CASES_DIR_IS_SHARED = not os.environ.get(CASES_ENV)
# KUBEVIRT_EXPAND_ADMISSION_CASES points at another folder of admission cases (the held-back ones).
ADMISSION_CASES_ENV = "KUBEVIRT_EXPAND_ADMISSION_CASES"
ADMISSION_CASES_DIR = Path(
    os.environ.get(ADMISSION_CASES_ENV) or SHARED / "conformance-admission" / "cases"
).absolute()
TYPES_DIR = SHARED / "spec" / "kubevirt-types"
K8S_DIR = SHARED / "k8s"

MISSING: str | None = (
    None
    if SHARED.is_dir()
    else (
        f"../shared not found at {SHARED}: tests needing KubeVirt's golden cases, Go types or the real "
        f"control plane are skipped (put shared/ beside the repository or set {SHARED_ENV})"
    )
)


def demanded_by() -> str | None:
    """The environment variable that says ``../shared`` must be there, if one is set (not empty, not 0)."""
    for name in REQUIRE_ENVS:
        if os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no"):
            return name
    return None


def problem(path: Path) -> tuple[bool, str] | None:
    """Why ``path`` cannot be used: (True, reason) to skip, (False, reason) to fail; None when it is there."""
    if path.exists():
        return None
    if MISSING is not None and path.is_relative_to(SHARED):
        return True, MISSING
    if path == CASES_DIR and os.environ.get(CASES_ENV):
        return False, f"{CASES_ENV} names {path}, which does not exist"
    if path == ADMISSION_CASES_DIR and os.environ.get(ADMISSION_CASES_ENV):
        return False, f"{ADMISSION_CASES_ENV} names {path}, which does not exist"
    return False, f"{path} not found, although {SHARED} is there (an incomplete shared/?)"


def needs_shared(path: Path = SHARED) -> pytest.MarkDecorator:
    """Mark a test (or a parameter) as reading ``path`` in ``../shared``."""
    return getattr(pytest.mark, MARK)(path)


def needs_control_plane() -> pytest.MarkDecorator:
    """Mark a test as running etcd and kube-apiserver (tests/realk8s/controlplane.py): where they cannot
    run (no binaries, no kubectl) it skips for that one reason, or fails where ``../shared`` is demanded."""
    return getattr(pytest.mark, PLANE_MARK)


def parametrize(
    argnames: str | Sequence[str], values: Sequence[Any], ids: Sequence[str], *, needs: Path = CASES_DIR
) -> Callable[[Callable[..., Any]], Any]:
    """``pytest.mark.parametrize`` over values read from ``needs``, marked ``needs_shared(needs)``; when that
    is absent, one placeholder that skips (or fails) for the shared reason, instead of pytest's "got empty
    parameter set"."""
    if problem(needs) is None:
        parametrized = pytest.mark.parametrize(argnames, values, ids=ids)
    else:
        names = argnames.split(",") if isinstance(argnames, str) else argnames
        count = len([name for name in names if name.strip()])
        parametrized = pytest.mark.parametrize(argnames, [pytest.param(*([None] * count), id="needs-shared")])

    def decorate(test: Callable[..., Any]) -> Any:
        return needs_shared(needs)(parametrized(test))

    return decorate
