"""A source over a folder of YAML/JSON manifests, re-read when it changes.

Every reload builds a complete new index and swaps it in with one assignment, so a request never sees
a half-read folder. Unchanged files (same size, mtime and inode) are not parsed again. A file that
fails to parse keeps serving the objects it last had, and is reported (one log line per change, the
``kubevirt_expand_source_errors`` gauge, a warning on the ``manifests`` readiness check) until it is fixed;
a deleted file takes its objects with it. The source is ready once one read of the whole folder succeeded:
before that a broken file fails the check (a rollout with a broken ConfigMap stops at its first pod), after
it a broken file only warns (every replica reads the same ConfigMap, and unready replicas would stop
serving the objects that are still good). Changes are noticed through ``watchfiles`` and, as a safety net
(network filesystems, ConfigMap volumes), a cheap periodic stat of every file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiserver.documents.manifests import MANIFEST_SUFFIXES, ManifestError, parse_manifests
from apiserver.render.objects import KUBEVIRT, PRESET, VIRTUAL_MACHINE, ObjectIndex, ObjectRef, ref_of
from apiserver.sources.base import CacheStats, Check

_log = logging.getLogger(__name__)

CHECK_NAME = "manifests"
_CATALOG_KINDS = (
    "VirtualMachineInstancetype",
    "VirtualMachineClusterInstancetype",
    "VirtualMachinePreference",
    "VirtualMachineClusterPreference",
)


@dataclass(frozen=True, slots=True)
class _FileState:
    stamp: tuple[int, int, int]  # (size, mtime_ns, inode)
    objects: tuple[Mapping[str, Any], ...]
    error: str | None = None


@dataclass(slots=True)
class _Snapshot:
    """Everything one reload found; replaced whole, never changed."""

    objects: ObjectIndex = field(default_factory=ObjectIndex)
    vms: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    kubevirt: Mapping[str, Any] | None = None
    presets: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    directory_error: str | None = None


def _manifest_files(directory: Path) -> Iterator[Path]:
    """Manifest files under ``directory`` in name order; hidden entries (``..data``) skipped."""
    seen: set[str] = set()

    def walk(path: Path) -> Iterator[Path]:
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            with contextlib.suppress(OSError):
                if entry.is_dir():
                    yield from walk(Path(entry.path))
                elif entry.name.endswith(MANIFEST_SUFFIXES):
                    yield Path(entry.path)

    yield from walk(directory)


class FolderSource:
    """VMs, instancetypes, preferences, ControllerRevisions, presets and a KubeVirt CR from a folder."""

    def __init__(
        self, directory: str | os.PathLike[str], *, poll_interval: float = 2.0, watch: bool = True
    ) -> None:
        self.directory = Path(directory)
        self.poll_interval = poll_interval
        self.watch = watch
        self._files: dict[str, _FileState] = {}
        self._snapshot = _Snapshot()
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        # (hits, misses) per cache, reported through cache_stats().
        self._lookups = {"virtualmachines": [0, 0], "objects": [0, 0]}
        self.reloads = 0
        self.scans = 0  # looks at the folder, changed or not
        self._read = False  # until the first read finished, the empty snapshot is no answer
        self._good = False  # one read of the whole folder without an error: ready from then on

    # -- loading -----------------------------------------------------------------------------

    def _scan(self) -> tuple[dict[str, _FileState], _Snapshot] | None:
        """Read what changed; return the new file table and snapshot, or None when nothing did."""
        try:
            paths = list(_manifest_files(self.directory))
        except OSError as err:
            message = f"cannot read directory {self.directory}: {err.strerror or err}"
            if self._snapshot.directory_error == message:
                return None
            _log.error("%s (keeping the objects read before)", message)
            snapshot = self._build(self._files)
            snapshot.directory_error = message
            return self._files, snapshot
        files: dict[str, _FileState] = {}
        changed = set(self._files) - {str(p) for p in paths}
        for path in paths:
            name = str(path)
            try:
                st = path.stat()
            except OSError:
                continue
            stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
            old = self._files.get(name)
            if old is not None and old.stamp == stamp:
                files[name] = old
                continue
            changed.add(name)
            try:
                objects = tuple(parse_manifests(path.read_bytes(), name))
            except (ManifestError, OSError) as err:
                problem = str(err) if isinstance(err, ManifestError) else f"{name}: {err.strerror or err}"
                kept = old.objects if old is not None else ()
                if not kept:
                    # A new file: "serving the 0 object(s) read from it before" suggested it had been read.
                    _log.error("%s (nothing from it is served)", problem)
                else:
                    _log.error("%s (serving the %d object(s) read from it before)", problem, len(kept))
                files[name] = _FileState(stamp, kept, problem)
                continue
            if old is not None and old.error:
                _log.info("%s: read without errors again (%d object(s))", name, len(objects))
            files[name] = _FileState(stamp, objects)
        if not changed and self._snapshot.directory_error is None:
            return None
        return files, self._build(files)

    @staticmethod
    def _build(files: Mapping[str, _FileState]) -> _Snapshot:
        snapshot = _Snapshot()
        for name, state in files.items():
            if state.error:
                snapshot.errors[name] = state.error
            for obj in state.objects:
                ref = ref_of(obj)
                if ref is None:
                    continue
                if ref.kind == VIRTUAL_MACHINE:
                    snapshot.vms[(ref.namespace, ref.name)] = obj
                elif ref.kind == KUBEVIRT:
                    if snapshot.kubevirt is not None:
                        _log.warning("%s: a second KubeVirt CR (%s) replaces the first", name, ref.name)
                    snapshot.kubevirt = obj
                else:
                    snapshot.objects.add(obj)
                    snapshot.presets += ref.kind == PRESET
        return snapshot

    async def reload(self) -> bool:
        """Re-read the folder; True when anything changed. Safe to call at any time."""
        async with self._lock:
            result = await asyncio.to_thread(self._scan)
            self._read = True
            self.scans += 1
            if result is None:
                self._good = self._good or not self.problems()
                return False
            self._files, self._snapshot = result
            self._good = self._good or not self.problems()
            self.reloads += 1
            snap = self._snapshot
            _log.info(
                "read %s: %d VM(s), %d other object(s), %d file(s) with errors",
                self.directory,
                len(snap.vms),
                len(snap.objects),
                len(snap.errors),
            )
            return True

    async def _poll(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.poll_interval)
            if not self._stop.is_set():
                await self._reload_logged()

    async def _watch(self) -> None:
        import watchfiles

        try:
            async for _changes in watchfiles.awatch(
                self.directory, stop_event=self._stop, debounce=100, step=20, watch_filter=_may_hold_manifests
            ):
                await self._reload_logged()
        except Exception as err:  # inotify unavailable, directory gone: the poll loop carries on
            _log.warning(
                "not watching %s for changes (%s); polling every %gs", self.directory, err, self.poll_interval
            )

    async def _reload_logged(self) -> None:
        try:
            await self.reload()
        except Exception:  # a bug must not stop the reload loops
            _log.exception("reloading %s failed", self.directory)

    # -- Source protocol -----------------------------------------------------------------------

    async def start(self) -> None:
        self._stop.clear()
        await self.reload()
        self._tasks.append(asyncio.create_task(self._poll(), name="folder-poll"))
        if self.watch:
            self._tasks.append(asyncio.create_task(self._watch(), name="folder-watch"))

    async def close(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    def _count(self, cache: str, found: bool) -> None:
        self._lookups[cache][0 if found else 1] += 1

    async def get_vm(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        vm = self._snapshot.vms.get((namespace, name))
        self._count("virtualmachines", vm is not None)
        return vm

    async def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        obj = self._snapshot.objects.get(ref)
        self._count("objects", obj is not None)
        return obj

    async def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        return self._snapshot.objects.presets(namespace)

    async def kubevirt(self) -> Mapping[str, Any] | None:
        return self._snapshot.kubevirt

    async def launch_objects(
        self, namespace: str
    ) -> tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]:
        """What a virt-launcher pod's resources read beside the VM: the Namespace object (its labels) and
        the ResourceQuotas of ``namespace`` (apiserver.render.launcher)."""
        objects = self._snapshot.objects
        return objects.get(ObjectRef("Namespace", "", namespace)), objects.of_kind("ResourceQuota", namespace)

    # HoldsFleet: the snapshot holds every object.

    def holds_fleet(self) -> bool:
        return True

    def fleet_vms(self) -> Mapping[tuple[str, str], Mapping[str, Any]]:
        return dict(self._snapshot.vms)

    def catalog_objects(self) -> Sequence[Mapping[str, Any]]:
        objects = self._snapshot.objects
        return [o for kind in _CATALOG_KINDS for o in objects.of_kind(kind, None)]

    async def quotas(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        return self._snapshot.objects.of_kind("ResourceQuota", namespace)

    # Peekable: the snapshot answers everything synchronously, absence included.

    def peek(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        obj = self._snapshot.objects.get(ref)
        self._count("objects", obj is not None)
        return obj

    def peek_vm(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        vm = self._snapshot.vms.get((namespace, name))
        self._count("virtualmachines", vm is not None)
        return vm

    def peek_presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        return self._snapshot.objects.presets(namespace)

    def peek_kubevirt(self) -> Mapping[str, Any] | None:
        return self._snapshot.kubevirt

    def problems(self) -> Sequence[str]:
        """What the latest read could not read: the folder itself, then each broken file."""
        snap = self._snapshot
        return ([snap.directory_error] if snap.directory_error else []) + list(snap.errors.values())

    def checks(self) -> Sequence[Check]:
        if not self._read:
            return [Check(CHECK_NAME, False, f"{self.directory} not read yet")]
        problems = self.problems()
        if not self._good:
            return [Check(CHECK_NAME, False, "; ".join(problems) or f"{self.directory} not read yet")]
        if problems:
            # Ready: what was read before is served; the check says what is wrong.
            return [Check(CHECK_NAME, True, "warning, serving what was read before: " + "; ".join(problems))]
        return [Check(CHECK_NAME, True)]

    def cache_stats(self) -> Sequence[CacheStats]:
        snap = self._snapshot
        vm_hits, vm_misses = self._lookups["virtualmachines"]
        hits, misses = self._lookups["objects"]
        return [
            CacheStats("virtualmachines", len(snap.vms), vm_hits, vm_misses),
            CacheStats("objects", len(snap.objects) - snap.presets, hits, misses),
            CacheStats("presets", snap.presets),
        ]


def _may_hold_manifests(_change: object, path: str) -> bool:
    """Whether a change under the folder can matter: manifest files, folders (no suffix), and the
    ``..data`` swaps of a mounted ConfigMap. Anything else (a log file written into the folder, an
    editor's swap file) would otherwise trigger a re-read per write, and with the log in the same
    folder a re-read per re-read."""
    name = os.path.basename(path)
    return name.startswith("..") or name.endswith(MANIFEST_SUFFIXES) or "." not in name
