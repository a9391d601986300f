"""A VM's drift with the upgrade's verdict (apiserver/render/vmcontroller/drift.py): computed only for a
stale VM, by the change preview with the VM assumed to run as its current revisions render it; the
Stale condition says so."""

from __future__ import annotations

from typing import Any

from apiserver.render.expand import expand
from apiserver.render.objects import ObjectIndex
from apiserver.render.vmcontroller.assumedvmi import assumed_vmi
from apiserver.render.vmcontroller.drift import ASSUMED, drift_of
from apiserver.render.vmcontroller.preview import preview as preview_change
from apiserver.render.vmcontroller.preview import propose
from tests.render.instancetype.test_drift import MATCHER, NS, instancetype, pinned_vm
from tests.support.revisions import captured


def _setup(edited: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], ObjectIndex]:
    rev = captured("vm", NS, instancetype())
    vm = pinned_vm(("instancetype", MATCHER, rev))
    vm["spec"]["runStrategy"] = "Always"
    rendered = expand(vm, ObjectIndex([rev])).vm
    return vm, rendered, ObjectIndex([edited, rev])


def test_current_vm_has_no_upgrade_and_a_false_condition() -> None:
    vm, rendered, lookup = _setup(instancetype())
    drift = drift_of(vm, rendered, lookup, None)
    assert not drift.stale and drift.upgrade is None
    condition = drift.condition()
    assert condition is not None
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Stale",
        "False",
        "RevisionCurrent",
    )


def test_within_max_sockets_is_live_beyond_is_restart_with_kubevirts_message() -> None:
    for cpus, verdict in ((4, "live"), (64, "restart")):
        edited = instancetype(cpus=cpus)
        vm, rendered, lookup = _setup(edited)
        drift = drift_of(vm, rendered, lookup, None)
        assert drift.stale and drift.upgrade is not None
        # the same as the preview of the upgrade made by hand, with the assumed VMI
        by_hand = preview_change(
            propose(vm, upgrade=True),
            lookup,
            current=vm,
            vmi=_assumed(rendered),
            start_vm=vm,
        )
        assert drift.upgrade.verdict == by_hand.verdict == verdict
        assert drift.upgrade.message == (by_hand.message if verdict == "restart" else "")
        condition = drift.condition()
        assert (
            condition is not None
            and condition["status"] == "True"
            and condition["reason"] == "RevisionOutdated"
        )
        assert (
            f"taking the latest revision: {verdict}" in condition["message"]
            and ASSUMED in condition["message"]
        )
        if verdict == "restart":
            assert by_hand.message and by_hand.message in condition["message"]


def test_a_vm_that_does_not_render_gets_no_upgrade() -> None:
    vm, _, lookup = _setup(instancetype(cpus=4))
    drift = drift_of(vm, None, lookup, None)
    assert drift.stale and drift.upgrade is None


def test_a_vm_without_matchers_has_no_condition() -> None:
    drift = drift_of(pinned_vm(), None, ObjectIndex([]), None)
    assert not drift.applies and drift.condition() is None


def _assumed(rendered: dict[str, Any]) -> dict[str, Any]:
    return assumed_vmi(rendered, None, live_update=True)
