"""Suite-wide hooks: the fuzz profile and seed in the terminal summary, so a run can be repeated."""

from __future__ import annotations

import sys

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    fuzzing = sys.modules.get("tests.fuzzing")
    if fuzzing is None or not any(fuzzing.RAN.values()):
        return
    ran = ", ".join(f"{target}: {n}" for target, n in fuzzing.RAN.items() if n)
    terminalreporter.write_line(
        f"fuzz: profile {fuzzing.PROFILE}, seed {fuzzing.SEED} "
        f"(KUBEVIRT_EXPAND_FUZZ_SEED={fuzzing.SEED} repeats it); examples run: {ran}"
    )
