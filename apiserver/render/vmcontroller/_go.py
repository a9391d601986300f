"""Go semantics the VM controller leans on: deep copies, ``equality.Semantic.DeepEqual`` and the
VirtualMachine condition manager (``pkg/controller/conditions.go``: ``UpdateCondition``,
``RemoveCondition``, ``GetCondition``).

Objects here are VMs decoded by :func:`apiserver.render.golang.gojson.decode` (Go's view: unknown members
dropped, zero scalars absent, quantities as :class:`~apiserver.render.kubernetes.quantity.QuantityText`).
"""

from __future__ import annotations

from typing import Any

from apiserver.render.golang import gojson

JSON = dict[str, Any]

VMI_SPEC = "kubevirt.io/api/core/v1.VirtualMachineInstanceSpec"
RESTART_REQUIRED = "RestartRequired"


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {}


def _same(a: Any, b: Any) -> bool:
    if type(a) is dict and type(b) is dict:
        for key in a.keys() | b.keys():
            if key not in a or key not in b:
                # An absent member is a nil pointer, or an empty (omitted) slice or map: equal only to null
                # or another empty slice (Semantic equates nil and empty slices and maps).
                other = b.get(key) if key not in a else a.get(key)
                if not (other is None or other == []):
                    return False
                continue
            if not _same(a[key], b[key]):
                return False
        return True
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if _empty(a) and _empty(b) and (a is None or b is None or type(a) is type(b)):
        return True
    return bool(a == b)


def semantic_equal(a: Any, b: Any, go_type: str) -> bool:
    """``equality.Semantic.DeepEqual`` of two decoded values of ``go_type``: compared as Go's encoder writes
    them, so zero-valued structs equal absent ones and nil slices and maps equal empty ones, while a nil
    pointer differs from a pointer to an empty struct."""
    return _same(gojson.encode(a, go_type), gojson.encode(b, go_type))


def spec_field_equal(a: JSON, b: JSON, member: str) -> bool:
    """``equality.Semantic.DeepEqual`` of one member of two VMI specs (template specs)."""
    left = {member: a[member]} if member in a else {}
    right = {member: b[member]} if member in b else {}
    return semantic_equal(left, right, VMI_SPEC)


def conditions(obj: JSON) -> list[JSON]:
    status = obj.get("status") or {}
    found = status.get("conditions")
    return found if isinstance(found, list) else []


def get_condition(obj: JSON, ctype: str) -> JSON | None:
    for cond in conditions(obj):
        if isinstance(cond, dict) and cond.get("type") == ctype:
            return cond
    return None


def has_condition_status(obj: JSON, ctype: str, status: str) -> bool:
    cond = get_condition(obj, ctype)
    return cond is not None and cond.get("status", "") == status


def set_restart_required(vm: JSON, message: str) -> None:
    """``setRestartRequired`` through ``UpdateCondition``: a RestartRequired condition already there keeps
    its message unless its status or reason differs (so the first message set in a pass wins)."""
    new = {"type": RESTART_REQUIRED, "status": "True", "message": message}
    status = vm.setdefault("status", {})
    conds = status.get("conditions")
    if not isinstance(conds, list):
        conds = status["conditions"] = []
    for i, cond in enumerate(conds):
        if not isinstance(cond, dict) or cond.get("type") != RESTART_REQUIRED:
            continue
        if cond.get("status", "") != "True" or cond.get("reason", "") != "":
            conds[i] = new
        return
    conds.append(new)


def remove_condition(vm: JSON, ctype: str) -> None:
    status = vm.get("status")
    if not status or not isinstance(status.get("conditions"), list):
        return
    kept = [c for c in status["conditions"] if not (isinstance(c, dict) and c.get("type") == ctype)]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def restart_required(vm: JSON) -> tuple[bool, str]:
    """Whether the VM carries RestartRequired=True, and its message."""
    cond = get_condition(vm, RESTART_REQUIRED)
    if cond is None or cond.get("status") != "True":
        return False, ""
    return True, str(cond.get("message") or "")


def template_spec(vm: JSON) -> JSON:
    """``vm.Spec.Template.Spec``, created when absent (Go reads a zero struct there)."""
    spec = vm.setdefault("spec", {})
    template = spec.get("template")
    if template is None:
        template = spec["template"] = {}
    tspec = template.get("spec")
    if tspec is None:
        tspec = template["spec"] = {}
    return tspec  # type: ignore[no-any-return]


def domain(spec: JSON) -> JSON:
    found = spec.get("domain")
    if found is None:
        found = spec["domain"] = {}
    return found


def devices(spec: JSON) -> JSON:
    dom = domain(spec)
    found = dom.get("devices")
    if found is None:
        found = dom["devices"] = {}
    return found
