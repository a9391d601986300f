"""Suite-wide hooks: the fuzz profile and seed in the terminal summary, so a run can be repeated."""

from __future__ import annotations

import sys

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    fuzzing = sys.modules.get("tests.fuzzing")
    if fuzzing is None or not any(fuzzing.RAN.values()):
        return
    terminalreporter.write_line(
        f"fuzz: profile {fuzzing.PROFILE} (KUBEVIRT_EXPAND_FUZZ_SEED=N repeats a seed)"
    )
    for target, n in fuzzing.RAN.items():
        if n:
            terminalreporter.write_line(f"fuzz: {target}: {n} examples, seed {fuzzing.seed_of(target)}")
