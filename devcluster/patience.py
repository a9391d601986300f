"""How long a test or the dev cluster waits for something that will happen, on a machine that may be loaded.

A wait on a condition returns as soon as the condition holds, so its deadline costs nothing when things
work: it only decides how long a broken run takes to fail. Deadlines that suit an idle machine fail on a
loaded one (2 cores at load 15 stretch a server's start-up several times over, and the suite's own
workers add to the load), so waits scale theirs with :func:`patience`.
"""

from __future__ import annotations

import os
from typing import Final

SCALE_ENV: Final = "KUBEVIRT_EXPAND_TEST_PATIENCE"


def load_factor() -> float:
    """Runnable tasks per core (the larger of the 1- and 5-minute load averages), at least 1."""
    try:
        load = max(os.getloadavg()[:2])
    except OSError:  # no load average on this platform
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def patience(seconds: float) -> float:
    """``seconds``, ample on an idle machine, scaled by the load now and by ``KUBEVIRT_EXPAND_TEST_PATIENCE``
    (a factor, default 1: for a container whose CPU quota the load average does not show)."""
    return seconds * load_factor() * float(os.environ.get(SCALE_ENV) or 1)
