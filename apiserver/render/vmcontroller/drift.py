"""Drift of a VM: whether the revisions it captured are the latest, and what taking them would do.

Puts two pieces together for the ``expandedvirtualmachines`` collection (no KubeVirt function of its
own): :mod:`apiserver.render.instancetype.drift` (``revision.Compare`` of the captured revision with
the live object) for each matcher, and, only for a stale VM, the change preview
(:func:`.preview.preview`) of the upgrade :func:`.preview.propose` names (the live objects instead of
the captured revisions), as KubeVirt's VM controller would judge it against the VM as it runs. The
collection does not read VMIs: the VM is *assumed* to run as its current revisions render it
(:func:`.assumedvmi.assumed_vmi`, the VM's own spec as its start revision), and the answer says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.golang.gojson import GoDecodeError
from apiserver.render.instancetype.drift import (
    CURRENT,
    INFERRED,
    NO_REVISION,
    NOT_COMPARABLE,
    OBJECT_NOT_FOUND,
    Drift,
    vm_drift,
)
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.objects import ObjectLookup
from apiserver.render.vmcontroller.assumedvmi import assumed_vmi
from apiserver.render.vmcontroller.preview import ERROR, RESTART, propose
from apiserver.render.vmcontroller.preview import preview as preview_change
from apiserver.render.vmcontroller.sync import controller_config

CONDITION_STALE = "Stale"
ASSUMED = "assuming the VM runs as its current revisions render it (the collection reads no VMIs)"
# The reason a VM that is not stale shows, when its matchers give different ones: the first that applies.
_ORDER = (OBJECT_NOT_FOUND, NOT_COMPARABLE, NO_REVISION, INFERRED, CURRENT)

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Upgrade:
    """What taking the latest revisions would do: ``verdict`` is the preview's (live, restart, refused,
    error), ``message`` KubeVirt's (RestartRequired's, the webhook's refusal, the sync error)."""

    verdict: str
    message: str
    # The VM once upgraded, rendered (None where the upgrade is refused or fails): what its pod would
    # request, beside what it requests now.
    rendered: JSON | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class VMDrift:
    instancetype: Drift | None
    preference: Drift | None
    upgrade: Upgrade | None = None

    @property
    def stale(self) -> bool:
        return any(d is not None and d.stale for d in (self.instancetype, self.preference))

    @property
    def applies(self) -> bool:
        """Whether the VM has a matcher at all (else it shows no Stale condition)."""
        return self.instancetype is not None or self.preference is not None

    def of(self, member: str) -> Drift | None:
        return self.instancetype if member == "instancetype" else self.preference

    def condition(self) -> JSON | None:
        """The item's ``Stale`` condition (None for a VM with neither matcher)."""
        found = [d for d in (self.instancetype, self.preference) if d is not None]
        if not found:
            return None
        stale = [d for d in found if d.stale]
        if stale:
            message = "; ".join(d.message for d in stale)
            if self.upgrade is not None:
                message += f"; taking the latest revision: {self.upgrade.verdict}"
                if self.upgrade.message:
                    message += f" ({self.upgrade.message})"
                message += f", {ASSUMED}"
            return {"type": CONDITION_STALE, "status": "True", "reason": stale[0].reason, "message": message}
        reason = next(r for r in _ORDER if any(d.reason == r for d in found))
        return {
            "type": CONDITION_STALE,
            "status": "False",
            "reason": reason,
            "message": "; ".join(d.message for d in found),
        }


def _message(status: Mapping[str, Any] | None) -> str:
    return str((status or {}).get("message") or "")


def upgrade_of(
    vm: Mapping[str, Any],
    rendered: Mapping[str, Any],
    lookup: ObjectLookup,
    kubevirt: Mapping[str, Any] | None,
) -> Upgrade:
    """The preview of taking the latest revisions of ``vm`` (as stored, status included), which renders
    to ``rendered`` now, with the VM assumed to run as ``rendered``. Raises ``LookupPending``."""
    config = controller_config(kubevirt)
    vmi = assumed_vmi(rendered, kubevirt, live_update=config.live_update)
    proposed = propose(vm, upgrade=True)
    try:
        result = preview_change(
            proposed, lookup, current=vm, vmi=vmi, start_vm=vm, kubevirt=kubevirt, include_rendered=True
        )
    except (ExpandError, GoDecodeError) as err:
        return Upgrade(ERROR, getattr(err, "message", str(err)))
    if result.verdict == RESTART:
        return Upgrade(RESTART, result.message, result.proposed)
    if result.refusal is not None:
        return Upgrade(result.verdict, _message(result.refusal))
    if result.sync_error is not None:
        return Upgrade(result.verdict, _message(result.sync_error), result.proposed)
    return Upgrade(result.verdict, "", result.proposed)


def drift_of(
    vm: Mapping[str, Any],
    rendered: Mapping[str, Any] | None,
    lookup: ObjectLookup,
    kubevirt: Mapping[str, Any] | None,
) -> VMDrift:
    """The drift of ``vm`` (as stored), with the upgrade's verdict when it is stale and rendered
    (``rendered``: its rendering now; None when it fails). Raises ``LookupPending``."""
    instancetype, preference = vm_drift(vm, lookup)
    found = VMDrift(instancetype, preference)
    if not found.stale or rendered is None:
        return found
    return VMDrift(instancetype, preference, upgrade_of(vm, rendered, lookup, kubevirt))
