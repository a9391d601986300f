"""KubeVirt's ``checkMergeConflicts`` and ``mergeDomainSpec`` on the sections presets touch.

Only seven sections of a preset's domain are ever looked at; everything else is ignored without a word.
A section is copied only into a VMI that lacks it entirely, and compared as a whole. Sections are held in
their Go-encoded JSON form (omitempty applied, nil pointers absent), where Go's semantic deep equality
is plain equality: none of these sections holds a quantity or a collection whose nil and empty values
encode differently. Requests are the exception and are kept as parsed quantities, because KubeVirt
compares them with Go ``!=`` on the internal representation in the conflict check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.render.kubernetes.quantity import Quantity, QuantityError, parse_quantity

# KubeVirt's names for the checked sections, in the order its conflict check reports them.
FIELD_CPU = "spec.cpu"
FIELD_FIRMWARE = "spec.firmware"
FIELD_CLOCK_OFFSET = "spec.clock.clockoffset"
FIELD_CLOCK_TIMER = "spec.clock.timer"
FIELD_FEATURES = "spec.features"
FIELD_WATCHDOG = "spec.devices.watchdog"
FIELD_IOTHREADS_POLICY = "spec.ioThreadsPolicy"

# Where each KubeVirt name lives in a DomainSpec (for our causes and for users reading them).
DOMAIN_PATHS = {
    FIELD_CPU: "cpu",
    FIELD_FIRMWARE: "firmware",
    FIELD_CLOCK_OFFSET: "clock",
    FIELD_CLOCK_TIMER: "clock.timer",
    FIELD_FEATURES: "features",
    FIELD_WATCHDOG: "devices.watchdog",
    FIELD_IOTHREADS_POLICY: "ioThreadsPolicy",
}

_OFFSET_KEYS = ("utc", "timezone")


def requests_field(key: str) -> str:
    return f"spec.resources.requests[{key}]"


def domain_path(field: str) -> str:
    """The path inside a DomainSpec of one of KubeVirt's section names."""
    if field.startswith("spec.resources.requests["):
        return "resources.requests" + field[len("spec.resources.requests") :]
    return DOMAIN_PATHS[field]


@dataclass(frozen=True, slots=True)
class Request:
    """One request: the text shown to users and the quantity as Go parsed it from that text."""

    text: str
    quantity: Quantity


@dataclass(frozen=True, slots=True)
class Conflict:
    """One failed check: KubeVirt's section name and our rendering of ``<field>: <a> != <b>``."""

    field: str
    text: str


@dataclass(slots=True)
class Sections:
    """The mergeable sections of a DomainSpec; ``None`` is Go's nil (absent in JSON)."""

    requests: dict[str, Request] | None = None
    cpu: dict[str, Any] | None = None
    firmware: dict[str, Any] | None = None
    clock: dict[str, Any] | None = None
    features: dict[str, Any] | None = None
    watchdog: dict[str, Any] | None = None
    io_threads_policy: str | None = None


class RequestError(ValueError):
    """A request value Go could not decode; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _object(value: Any) -> dict[str, Any] | None:
    return _copy(value) if isinstance(value, Mapping) else None


def sections_of(domain: Mapping[str, Any]) -> Sections:
    """Read the sections from a Go-encoded DomainSpec (as the codec writes it).

    Raises :class:`RequestError` for a request value that is not a quantity.
    """
    resources = domain.get("resources")
    raw_requests = resources.get("requests") if isinstance(resources, Mapping) else None
    requests: dict[str, Request] | None = None
    if isinstance(raw_requests, Mapping) and raw_requests:
        requests = {}
        for key, raw in raw_requests.items():
            if isinstance(raw, bool) or not isinstance(raw, str | int | float):
                raise RequestError(key, "must be a quantity (a string such as 1Gi or a number)")
            try:
                quantity = parse_quantity(raw)
            except QuantityError as exc:
                raise RequestError(key, str(exc)) from None
            requests[str(key)] = Request(raw if isinstance(raw, str) else json.dumps(raw), quantity)
    devices = domain.get("devices")
    watchdog = devices.get("watchdog") if isinstance(devices, Mapping) else None
    policy = domain.get("ioThreadsPolicy")
    return Sections(
        requests=requests,
        cpu=_object(domain.get("cpu")),
        firmware=_object(domain.get("firmware")),
        clock=_object(domain.get("clock")),
        features=_object(domain.get("features")),
        watchdog=_object(watchdog),
        io_threads_policy=policy if isinstance(policy, str) else None,
    )


def write_sections(domain: dict[str, Any], sections: Sections) -> None:
    """Put the sections back into a DomainSpec dict (member order is restored by the codec)."""
    if sections.requests is not None:
        resources = domain.setdefault("resources", {})
        resources["requests"] = {key: r.quantity.canonical() for key, r in sections.requests.items()}
    for name, value in (
        ("cpu", sections.cpu),
        ("firmware", sections.firmware),
        ("clock", sections.clock),
        ("features", sections.features),
        ("ioThreadsPolicy", sections.io_threads_policy),
    ):
        if value is not None:
            domain[name] = _copy(value)
    if sections.watchdog is not None:
        domain.setdefault("devices", {})["watchdog"] = _copy(sections.watchdog)


_SHOW_LIMIT = 240


def _show(value: Any) -> str:
    """A section as compact JSON, shortened: these texts end up in HTTP ``Warning`` headers."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."


def _offset(clock: Mapping[str, Any]) -> dict[str, Any]:
    return {key: clock[key] for key in _OFFSET_KEYS if key in clock}


def _request_text(preset: Request, target: Request) -> str:
    if preset.quantity == target.quantity:
        # Equal values that Go's struct comparison still tells apart (cached text, slow path).
        return f"{preset.text} != {target.text} (same value, compared as Go structs)"
    return f"{preset.text} != {target.text}"


def check_merge_conflicts(preset: Sections, target: Sections) -> list[Conflict]:
    """``checkMergeConflicts(preset, target)``: one conflict per failed check, in KubeVirt's order.

    Go walks the preset's requests map in random order; we walk it sorted by key.
    """
    conflicts: list[Conflict] = []

    def add(field: str, a: Any, b: Any) -> None:
        conflicts.append(Conflict(field, f"{field}: {_show(a)} != {_show(b)}"))

    if preset.requests and target.requests is not None:
        for key in sorted(preset.requests):
            theirs = target.requests.get(key)
            mine = preset.requests[key]
            if theirs is not None and not mine.quantity.go_equal(theirs.quantity):
                field = requests_field(key)
                conflicts.append(Conflict(field, f"{field}: {_request_text(mine, theirs)}"))
    if preset.cpu is not None and target.cpu is not None and preset.cpu != target.cpu:
        add(FIELD_CPU, preset.cpu, target.cpu)
    if preset.firmware is not None and target.firmware is not None and preset.firmware != target.firmware:
        add(FIELD_FIRMWARE, preset.firmware, target.firmware)
    if preset.clock is not None and target.clock is not None:
        mine_offset, their_offset = _offset(preset.clock), _offset(target.clock)
        if mine_offset != their_offset:
            add(FIELD_CLOCK_OFFSET, mine_offset, their_offset)
        mine_timer, their_timer = preset.clock.get("timer"), target.clock.get("timer")
        if mine_timer is not None and their_timer is not None and mine_timer != their_timer:
            add(FIELD_CLOCK_TIMER, mine_timer, their_timer)
    if preset.features is not None and target.features is not None and preset.features != target.features:
        add(FIELD_FEATURES, preset.features, target.features)
    if preset.watchdog is not None and target.watchdog is not None and preset.watchdog != target.watchdog:
        add(FIELD_WATCHDOG, preset.watchdog, target.watchdog)
    if (
        preset.io_threads_policy is not None
        and target.io_threads_policy is not None
        and preset.io_threads_policy != target.io_threads_policy
    ):
        add(FIELD_IOTHREADS_POLICY, preset.io_threads_policy, target.io_threads_policy)
    return conflicts


def _requests_equal(a: Mapping[str, Request], b: Mapping[str, Request]) -> bool:
    """Semantic deep equality of two ResourceLists: same keys, values equal by ``Cmp``."""
    return a.keys() == b.keys() and all(a[key].quantity == b[key].quantity for key in a)


def merge_domain(preset: Sections, vmi: Sections) -> tuple[bool, list[Conflict]]:
    """``mergeDomainSpec``: copy the sections the VMI lacks; return (applied, conflicts).

    Applied means at least one preset section equals the VMI's afterwards. The conflicts are computed
    before anything is copied, as KubeVirt does.
    """
    conflicts = check_merge_conflicts(preset, vmi)
    applied = False
    if preset.requests:
        if vmi.requests is None:
            vmi.requests = dict(preset.requests)
        applied |= _requests_equal(vmi.requests, preset.requests)
    if preset.cpu is not None:
        if vmi.cpu is None:
            vmi.cpu = _copy(preset.cpu)
        applied |= vmi.cpu == preset.cpu
    if preset.firmware is not None:
        if vmi.firmware is None:
            vmi.firmware = _copy(preset.firmware)
        applied |= vmi.firmware == preset.firmware
    if preset.clock is not None:
        if vmi.clock is None:
            vmi.clock = _offset(preset.clock)
        applied |= vmi.clock == preset.clock
        timer = preset.clock.get("timer")
        if timer is not None:
            if vmi.clock.get("timer") is None:
                vmi.clock["timer"] = _copy(timer)
            applied |= vmi.clock["timer"] == timer
    if preset.features is not None:
        if vmi.features is None:
            vmi.features = _copy(preset.features)
        applied |= vmi.features == preset.features
    if preset.watchdog is not None:
        if vmi.watchdog is None:
            vmi.watchdog = _copy(preset.watchdog)
        applied |= vmi.watchdog == preset.watchdog
    if preset.io_threads_policy is not None:
        if vmi.io_threads_policy is None:
            vmi.io_threads_policy = preset.io_threads_policy
        applied |= vmi.io_threads_policy == preset.io_threads_policy
    return applied, conflicts
