"""Loading many long-lived objects without the cyclic garbage collector walking them again and again.

Why: a list of 100,000 VMs makes millions of containers, all young; each time the old generation has
grown by a quarter CPython runs a full collection over everything kept so far. Parsing list pages cost
52 us per VM at 100,000 VMs (7.7 us with the collector off), and the full collections after such a
relist took 342-768 ms with the loop stopped, until the next freeze of :mod:`apiserver.cli.gctune`
(at most once a minute). So what a list page left in the cache is frozen as soon as it is stored
(``gc.freeze``: constant time, it splices the generations onto the permanent one): collections then
only ever walk what is younger than the last page. Decoded JSON holds no reference cycles, and frozen
objects are still freed by reference counting when a later change drops them; only a cycle that became
garbage in the moments before a freeze stays in memory.
"""

from __future__ import annotations

import gc


def freeze_loaded() -> None:
    """Move everything alive now out of the collector's reach (call right after storing a page)."""
    gc.freeze()
