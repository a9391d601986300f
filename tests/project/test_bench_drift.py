"""hack/benchmarks/drift.py runs end to end (tiny settings: this checks it works, not how fast anything is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_drift_bench_times_the_three_settings_against_the_baseline(tmp_path: Path) -> None:
    out = tmp_path / "drift.json"
    proc = subprocess.run(
        [sys.executable, "-m", "hack.benchmarks.drift", "--vms=20", "--rounds=1", f"--json={out}"],
        capture_output=True,
        cwd=ROOT,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    # Half the fleet is on the edited instancetype: those, and only those, are stale.
    assert result["stale"] == {"baseline": 0, "current": 0, "stale": 10}
    assert result["ratio"]["baseline"] == 1.0
    assert all(result["median_ms"][name] > 0 for name in ("baseline", "current", "stale"))
    assert "stale" in proc.stdout and "x  (10 stale)" in proc.stdout
