"""Guest CPU topology from the instancetype's vCPU count and the preference (KubeVirt applyGuestCPUTopology)."""

from __future__ import annotations

from typing import Any

from apiserver.render.kubernetes.errors import Cause, ExpandError

JSON = dict[str, Any]

CORES = frozenset({"cores", "preferCores"})
SOCKETS = frozenset({"sockets", "preferSockets", "any", "preferAny"})
THREADS = frozenset({"threads", "preferThreads"})
SPREAD = frozenset({"spread", "preferSpread"})

ACROSS_SOCKETS_CORES = "SocketsCores"
ACROSS_CORES_THREADS = "CoresThreads"
ACROSS_SOCKETS_CORES_THREADS = "SocketsCoresThreads"
THREADS_PER_CORE = 2
DEFAULT_SPREAD_RATIO = 2


def preferred_topology(preference: JSON | None) -> str:
    """The preference's topology, ``sockets`` when it names none (GetPreferredTopology)."""
    if preference is not None:
        value = (preference.get("cpu") or {}).get("preferredCPUTopology")
        if value is not None:
            return str(value)
    return "sockets"


def spread_options(preference: JSON) -> tuple[int, str]:
    """(ratio, across) as GetSpreadOptions computes them: an explicit ratio overrides, even 0."""
    ratio = preference.get("preferSpreadSocketToCoreRatio") or DEFAULT_SPREAD_RATIO
    across = ACROSS_SOCKETS_CORES
    options = (preference.get("cpu") or {}).get("spreadOptions")
    if options is not None:
        if options.get("across") is not None:
            across = options["across"]
        if options.get("ratio") is not None:
            ratio = options["ratio"]
    return int(ratio), str(across)


def _zero_ratio() -> ExpandError:
    # KubeVirt divides by zero here and its server drops the connection; we answer cleanly instead.
    message = "spreadOptions.ratio of 0 cannot spread vCPUs (KubeVirt panics: integer divide by zero)"
    return ExpandError.invalid(message, Cause("preference.spec.cpu.spreadOptions.ratio", message))


def guest_topology(vcpus: int, preference: JSON | None) -> tuple[int, int, int]:
    """(sockets, cores, threads); unknown topologies and ``across`` values keep 1/1/1 as KubeVirt does."""
    sockets = cores = threads = 1
    if vcpus == 1:
        return sockets, cores, threads
    topology = preferred_topology(preference)
    if topology in CORES:
        cores = vcpus
    elif topology in SOCKETS:
        sockets = vcpus
    elif topology in THREADS:
        threads = vcpus
    elif topology in SPREAD:
        assert preference is not None  # spread can only come from a preference
        ratio, across = spread_options(preference)
        if across == ACROSS_SOCKETS_CORES:
            if ratio == 0:
                raise _zero_ratio()
            cores, sockets = ratio, vcpus // ratio
        elif across == ACROSS_CORES_THREADS:
            if ratio == 0:
                raise _zero_ratio()
            threads, cores = ratio, vcpus // ratio
        elif across == ACROSS_SOCKETS_CORES_THREADS:
            if ratio == 0:
                raise _zero_ratio()
            threads, cores, sockets = THREADS_PER_CORE, ratio, vcpus // THREADS_PER_CORE // ratio
    return sockets, cores, threads
