"""Every script in hack/ (benchmarks, oracle tools, generators: run as modules, ``python -m hack.x.y``)
answers ``--help`` with its usage, as a newcomer tries first (never a traceback, never a run: the
generators must not write their output for it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.http_helpers import REPO
from tests.support.patience import patience

SCRIPTS = sorted(p for p in (REPO / "hack").glob("*/*.py") if p.name != "__init__.py")


def module_of(script: Path) -> str:
    return ".".join(script.relative_to(REPO).with_suffix("").parts)


def test_hack_holds_python_scripts() -> None:
    assert len(SCRIPTS) >= 5


def test_hack_is_sorted_by_purpose() -> None:
    """Python scripts live in benchmarks/, oracle/ and generators/; only the shell scripts at the top."""
    assert {p.parent.name for p in SCRIPTS} == {"benchmarks", "oracle", "generators"}
    assert not [p for p in (REPO / "hack").glob("*.py") if p.name != "__init__.py"]
    assert all("sys.path" not in p.read_text() for p in SCRIPTS), "run as modules, no sys.path edits"


@pytest.mark.parametrize("script", SCRIPTS, ids=[module_of(p) for p in SCRIPTS])
def test_help_prints_the_usage(script: Path) -> None:
    generated = {
        p: p.stat().st_mtime_ns for p in [*REPO.glob("apiserver/**/*.json"), *REPO.glob("docs/**/*.md")]
    }
    result = subprocess.run(
        [sys.executable, "-m", module_of(script), "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=patience(60),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: "), result.stdout
    assert "Traceback" not in result.stderr
    assert {
        p: p.stat().st_mtime_ns for p in [*REPO.glob("apiserver/**/*.json"), *REPO.glob("docs/**/*.md")]
    } == generated
