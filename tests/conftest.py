"""Suite-wide hooks: tests that read ``../shared`` skip with one reason without it (see tests/shared.py)."""

from __future__ import annotations

import pytest

from tests import shared

# Tests per pytest-xdist work unit; see pytest_collection_modifyitems.
CHUNK = 200


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{shared.MARK}(path): reads path in ../shared; skips without it")
    demanded = shared.demanded_by()
    if shared.MISSING is not None and demanded is not None:
        raise pytest.UsageError(f"{shared.MISSING}; {demanded} is set, so these tests must run, not skip")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the groups into node ids (a plain hook)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # With --dist loadgroup an ungrouped test is a work unit of its own, and thousands of millisecond tests
    # then wait on the controller's round trips (measured slower than one process). So consecutive tests of
    # a module go out together, up to CHUNK at a time; an explicit xdist_group (one control plane, one
    # wheel build) is kept. Only in an xdist worker with loadgroup (so `-k group` keeps its meaning elsewhere).
    if not getattr(config.option, "loadgroup", False):
        return
    seen: dict[str, int] = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = item.nodeid.split("::", 1)[0]
        index = seen[module] = seen.get(module, -1) + 1
        item.add_marker(pytest.mark.xdist_group(f"{module}#{index // CHUNK}"))


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
