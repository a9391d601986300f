"""glibc's allocator told to keep large blocks in mappings of their own, so that the memory of a large
request goes back to the system once the request is done.

glibc serves an allocation of 128 KiB or more with a mapping of its own, returned when freed, but it
raises that threshold to the size of every such block freed (up to 32 MiB): after the first
multi-megabyte body, the later ones land in the heap, and what is freed there leaves holes the process
keeps. Twenty 2.4 MB PUT bodies handled one after another took RSS from 63 to 242 MB while 48 MB was
still referenced; with a fixed threshold (``mallopt(M_MMAP_THRESHOLD)``, which also stops the raising)
131 MB. What it costs: a ``mmap``/``munmap`` per block of 128 KiB or more, which only large bodies and
answers need.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

_log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
THRESHOLD = 128 * 1024  # glibc's own default, kept fixed


def fix_mmap_threshold(threshold: int = THRESHOLD) -> bool:
    """Fix glibc's mmap threshold; False (nothing done) where the C library has no ``mallopt`` (musl)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(M_MMAP_THRESHOLD, threshold))
    if not done:
        _log.debug("mallopt(M_MMAP_THRESHOLD, %d) refused", threshold)
    return done
