"""Notice when files change: filesystem events when available, and a poll that never misses one.

Kubernetes updates a mounted Secret or ConfigMap by swapping a ``..data`` symlink, which some event
backends report late or not at all; the poll (one minute by default, as k8s.io/apiserver's
dynamiccertificates) is the guarantee, events only make it quick.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence

log = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL = 60.0


def digest(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


class FileWatcher:
    """Calls ``on_change()`` whenever the content of one of ``paths`` differs from the last look."""

    def __init__(
        self,
        paths: Sequence[str],
        on_change: Callable[[], Awaitable[object]],
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> None:
        self.paths = [p for p in dict.fromkeys(paths) if p]
        self._on_change = on_change
        self._poll_interval = poll_interval
        self._seen = {p: digest(p) for p in self.paths}
        self._dirs = sorted({os.path.dirname(os.path.abspath(p)) for p in self.paths})
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        if not self.paths or self._tasks:
            return
        self._tasks.append(asyncio.create_task(self._poll(), name="filewatch-poll"))
        self._tasks.append(asyncio.create_task(self._events(), name="filewatch-events"))

    async def close(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    async def check(self) -> bool:
        """Compare now; call ``on_change`` once if anything changed. Returns whether it did."""
        async with self._lock:
            now = {p: digest(p) for p in self.paths}
            if now == self._seen:
                return False
            self._seen = now
            try:
                await self._on_change()
            except Exception:
                log.exception("reloading after a change of %s failed", ", ".join(self.paths))
            return True

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_interval)
            await self.check()

    async def _events(self) -> None:
        try:
            from watchfiles import awatch
        except ImportError:  # the poll alone is enough
            return
        dirs = self._dirs
        names = {os.path.basename(p) for p in self.paths}

        def relevant(_change: object, path: str) -> bool:
            # The files themselves, or a mounted Secret's ``..data`` swap; not the folder's other files
            # (a log written beside the certificate would otherwise wake this on every line).
            name = os.path.basename(path)
            return name in names or name.startswith("..")

        try:
            async for _changes in awatch(
                *dirs, stop_event=self._stop, debounce=200, recursive=False, watch_filter=relevant
            ):
                await self.check()
        except (OSError, RuntimeError) as exc:
            log.info("file events unavailable for %s (%s); polling every %gs", dirs, exc, self._poll_interval)
