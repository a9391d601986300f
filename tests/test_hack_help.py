"""Every script in hack/ answers ``--help`` with its usage, as a newcomer tries first (never a traceback,
never a run: the generators must not write their output for it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.http_helpers import REPO
from tests.patience import patience

SCRIPTS = sorted((REPO / "hack").glob("*.py"))


def test_hack_holds_python_scripts() -> None:
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_help_prints_the_usage(script: Path) -> None:
    generated = {
        p: p.stat().st_mtime_ns for p in [*REPO.glob("apiserver/**/*.json"), *REPO.glob("docs/**/*.md")]
    }
    result = subprocess.run(
        [sys.executable, str(script), "--help"],
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
