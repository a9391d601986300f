"""Loading many long-lived objects without the cyclic garbage collector walking them again and again.

Why: a list of 100,000 VMs makes millions of containers, all young; each time the old generation has
grown by a quarter CPython runs a full collection over everything kept so far. Parsing list pages cost
52 us per VM at 100,000 VMs (7.7 us with the collector off), and the full collections after such a
relist took 342-768 ms with the loop stopped, until the next freeze of :mod:`apiserver.runtime.gctune`
(at most once a minute). So what a list page left in the cache is frozen as soon as it is stored
(``gc.freeze``: constant time, it splices the generations onto the permanent one): collections then
only ever walk what is younger than the last page. Decoded JSON holds no reference cycles, and frozen
objects are still freed by reference counting when a later change drops them; only a cycle that became
garbage in the moments before a freeze stays in memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import time
from collections.abc import Callable


def freeze_loaded() -> None:
    """Move everything alive now out of the collector's reach (call right after storing a page)."""
    gc.freeze()


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_TRIM = _malloc_trim()


def return_freed() -> float:
    """Give the C heap's free pages back to the system; the seconds it took (0 where unsupported).

    Why: after a relist in which every VM changed, the old items and VMs are freed, but glibc keeps the
    pages of what it had allocated outside Python's small-object arenas (item bodies and other objects
    over 512 bytes), so RSS stayed at the relist's peak. At 30,000 VMs (hack/benchmarks/collection_memory.py --relist)
    this gives back 42 of the 111 MiB the relist had added, in 8 ms; the rest is in Python's own arenas,
    which are given back only once wholly empty.
    """
    if _TRIM is None:
        return 0.0
    started = time.monotonic()
    _TRIM(0)
    return time.monotonic() - started
