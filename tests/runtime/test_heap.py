"""apiserver/runtime/heap.py: the C heap's free pages given back after a large batch is freed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apiserver.runtime import heap


def rss_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(
    heap._TRIM is None or not Path("/proc/self/statm").exists(), reason="no glibc malloc_trim"
)
def test_freed_bodies_are_given_back_to_the_system() -> None:
    """Like a relist's old item bodies: many objects over 512 bytes (outside Python's arenas), freed while
    every tenth stays (so the heap's top does not shrink by itself). RSS drops only once returned."""
    bodies = [bytes(2_000) + i.to_bytes(4, "little") for i in range(60_000)]  # ~120 MiB
    kept = bodies[::10]
    del bodies
    before = rss_mib()
    took = heap.return_freed()
    after = rss_mib()
    assert before - after > 50, f"RSS {before:.0f} -> {after:.0f} MiB"
    assert 0 <= took < 1
    assert len(kept) == 6_000
