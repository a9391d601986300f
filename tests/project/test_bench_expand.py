"""hack/benchmarks/engine.py runs and divides only by figures of its own run (tiny settings: this checks
what it prints, not how fast anything is)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import shared
from tests.support.oracle import find_oracle

ROOT = Path(__file__).resolve().parents[2]
ORACLE = find_oracle()


def _run(*args: str) -> list[str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hack.benchmarks.engine",
            "--limit",
            "3",
            "--ops",
            "4",
            "--trials",
            "1",
            "--catalog",
            "10",
            *args,
        ],
        capture_output=True,
        cwd=ROOT,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _measured(lines: list[str]) -> set[str]:
    return {m.group(1) for line in lines if (m := re.match(r"^  (\S+)\s+geomean\s+[\d.]+", line))}


def _ratios(lines: list[str], measured: set[str]) -> list[str]:
    ratios = [line for line in lines if re.search(r"\d\.\d\dx  \(", line)]
    for line in ratios:
        # Every ratio divides two rows measured in this run.
        top, bottom = re.match(r"^  (\S+) / (\S+):", line).groups()  # type: ignore[union-attr]
        assert top in measured and bottom in measured, line
    return ratios


@shared.needs_shared(shared.CASES_DIR)
def test_without_go_the_go_figures_are_a_reference_only() -> None:
    lines = _run("--no-go")
    measured = _measured(lines)
    assert {"api-ignore", "api-strict", "render", "json-in/json-out", "orjson", "stdlib-json"} <= measured
    assert {"api-expander", "api-ignore+catalog", "expander+catalog"} <= measured
    assert {"api-fresh", "expander-fresh", "api-json", "expander-json"} <= measured
    assert not {"go-server", "go-stateless"} & measured
    ratios = _ratios(lines, measured)
    assert len(ratios) == 12
    # A VM decoded afresh per call, against the server's render path of the same run.
    assert any(line.startswith("  api-fresh / json-in/json-out:") for line in ratios)
    assert any(line.startswith("  api-json / json-in/json-out:") for line in ratios)
    assert any(
        line.startswith("  api-ignore+catalog / api-ignore:") and "10 more objects" in line for line in ratios
    )
    # The Go figure from another machine is printed as a reference, never divided into.
    (go_line,) = [line for line in lines if "KubeVirt's Go was not timed" in line]
    assert "--no-go" in go_line and "Reference from elsewhere, not measured here" in go_line
    assert re.search(r"load average [\d.]+", lines[0])


@pytest.mark.skipif(ORACLE is None, reason="no expand-oracle binary (../shared/oracle builds it)")
@shared.needs_shared(shared.CASES_DIR)
def test_with_the_oracle_go_is_timed_in_the_same_run() -> None:
    lines = _run()
    measured = _measured(lines)
    assert {"api-ignore", "api-strict", "go-server", "go-stateless"} <= measured
    ratios = _ratios(lines, measured)
    assert any(line.startswith("  api-ignore / go-server:") for line in ratios)
    assert any(line.startswith("  api-strict / go-server:") for line in ratios)
    assert any(line.startswith("  api-expander / go-server:") for line in ratios)
    assert any(line.startswith("  api-fresh / go-server:") for line in ratios)
    assert any(line.startswith("  json-in/json-out / go-server:") for line in ratios)
    assert not [line for line in lines if "Reference from elsewhere" in line]
