"""hack/bench_expand.py runs and divides only by baselines of its own run (tiny settings: this checks
what it prints, not how fast anything is)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests import shared

ROOT = Path(__file__).resolve().parents[1]


@shared.needs_shared(shared.CASES_DIR)
def test_ratios_only_against_baselines_of_the_same_run() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "hack/bench_expand.py"), "--limit", "3", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    measured = {m.group(1) for line in lines if (m := re.match(r"^  (\S+)\s+median\s+[\d.]+", line))}
    assert {"json-in/json-out", "orjson", "stdlib-json"} <= measured
    ratios = [line for line in lines if re.search(r"\d\.\dx$", line)]
    assert len(ratios) == 3
    for line in ratios:
        # Every ratio names two rows measured in this run.
        names = re.findall(r"[a-z][a-z/-]+(?:-[a-z]+)*", line.split("(")[0])
        assert sum(name in measured for name in names) == 2, line
    # The Go figure from another machine is printed as a reference, never divided into.
    (go_line,) = [line for line in lines if "Go" in line]
    assert go_line.startswith("reference from elsewhere, not measured here")
    assert not go_line.endswith("x")
