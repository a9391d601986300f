"""Suite-wide hooks: tests that read ``../shared`` skip with one reason without it (see tests/shared.py)."""

from __future__ import annotations

import pytest

from tests import shared


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{shared.MARK}(path): reads path in ../shared; skips without it")
    demanded = shared.demanded_by()
    if shared.MISSING is not None and demanded is not None:
        raise pytest.UsageError(f"{shared.MISSING}; {demanded} is set, so these tests must run, not skip")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture: a session fixture (the real control plane) would otherwise skip for a reason of
    # its own. Raised from this one line, every such skip folds into one line of the summary.
    for mark in item.iter_markers(shared.MARK):
        found = shared.problem(mark.args[0] if mark.args else shared.SHARED)
        if found is not None:
            skip, why = found
            if skip:
                pytest.skip(why)
            pytest.fail(why, pytrace=False)
