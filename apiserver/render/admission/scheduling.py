"""Scheduling rules (``vmi-create-admitter.go``: ``validateSpecAffinity``, ``validateSpecTopologySpreadConstraints``;
``validate-k8s-utils.go``: KubeVirt's copy of the Kubernetes pod affinity and spread-constraint checks).

Every ``field.Error`` becomes a FieldValueInvalid cause whose message is the error's full text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apiserver.render.admission._go import Causes, invalid, items, num, obj, text
from apiserver.render.admission.k8svalidation import (
    FieldError,
    NamedString,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    is_dns1123_label,
    is_dns1123_subdomain,
    validate_label_name,
    validate_label_selector,
)


def _causes(errors: Sequence[FieldError]) -> Causes:
    return [invalid(e.field, str(e)) for e in errors]


def validate_affinity(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateSpecAffinity``."""
    affinity = obj(spec, "affinity")
    if affinity is None:
        return []
    path = field  # KubeVirt passes the spec's path, not the affinity's
    errors: list[FieldError] = []
    node = obj(affinity, "nodeAffinity")
    if node is not None:
        errors += _node_affinity(node, f"{path}.nodeAffinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        pod = obj(affinity, kind)
        if pod is None:
            continue
        at = f"{path}.{kind}"
        required = pod.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            for i, term in enumerate(required):
                errors += _pod_affinity_term(
                    term, f"{at}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                )
        preferred = pod.get("preferredDuringSchedulingIgnoredDuringExecution")
        if preferred is not None:
            for j, weighted in enumerate(preferred):
                wat = f"{at}.preferredDuringSchedulingIgnoredDuringExecution[{j}]"
                weight = num(weighted, "weight")
                if weight <= 0 or weight > 100:
                    errors.append(field_invalid(f"{wat}.weight", weight, "must be in the range 1-100"))
                errors += _pod_affinity_term(obj(weighted, "podAffinityTerm") or {}, f"{wat}.podAffinityTerm")
    return _causes(errors)


def _node_affinity(node: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    required = obj(node, "requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = items(required, "nodeSelectorTerms")
        if not terms:
            errors.append(field_required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errors += _node_selector_term(term, f"{terms_path}[{i}]")
    preferred = items(node, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(preferred):
        at = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        weight = num(term, "weight")
        if weight <= 0 or weight > 100:
            errors.append(field_invalid(f"{at}.weight", weight, "must be in the range 1-100"))
        errors += _node_selector_term(obj(term, "preference") or {}, f"{at}.preference")
    return errors


def _node_selector_term(term: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateNodeSelectorTerm``."""
    errors: list[FieldError] = []
    for j, req in enumerate(items(term, "matchExpressions")):
        at = f"{path}.matchExpressions[{j}]"
        operator, values = text(req, "operator"), req.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    field_required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    field_forbidden(
                        f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    )
                )
        elif operator in ("Gt", "Lt"):
            if len(values) != 1:
                errors.append(
                    field_required(
                        f"{at}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"
                    )
                )
        else:
            errors.append(
                field_invalid(f"{at}.operator", NamedString(operator), "not a valid selector operator")
            )
        errors += validate_label_name(text(req, "key"), f"{at}.key")
    for j, req in enumerate(items(term, "matchFields")):
        at = f"{path}.matchFields[{j}]"
        operator, values = text(req, "operator"), req.get("values") or []
        if operator in ("In", "NotIn"):
            if len(values) != 1:
                errors.append(
                    field_required(
                        f"{at}.values",
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    )
                )
        else:
            errors.append(
                field_invalid(f"{at}.operator", NamedString(operator), "not a valid selector operator")
            )
        if text(req, "key") != "metadata.name":
            errors.append(field_invalid(f"{at}.key", text(req, "key"), "not a valid field selector key"))
        else:
            for i, value in enumerate(values):
                errors += [field_invalid(f"{at}.values[{i}]", value, m) for m in is_dns1123_subdomain(value)]
    return errors


def _pod_affinity_term(term: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validatePodAffinityTerm``."""
    errors: list[FieldError] = []
    errors += validate_label_selector(obj(term, "labelSelector"), f"{path}.labelSelector")
    errors += validate_label_selector(obj(term, "namespaceSelector"), f"{path}.namespaceSelector")
    for name in term.get("namespaces") or []:
        errors += [field_invalid(f"{path}.namespace", name, m) for m in is_dns1123_label(name)]
    topology_key = text(term, "topologyKey")
    if not topology_key:
        errors.append(field_required(f"{path}.topologyKey", "can not be empty"))
    errors += validate_label_name(topology_key, f"{path}.topologyKey")
    return errors


def validate_topology_spread_constraints(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateSpecTopologySpreadConstraints`` (the label selector path has no index, as KubeVirt's)."""
    constraints = spec.get("topologySpreadConstraints")
    if constraints is None:
        return []
    path = f"{field}.topologySpreadConstraints"
    errors: list[FieldError] = []
    for i, constraint in enumerate(constraints):
        at = f"{path}[{i}]"
        max_skew = num(constraint, "maxSkew")
        if max_skew <= 0:
            errors.append(field_invalid(f"{at}.maxSkew", max_skew, "must be greater than zero"))
        key = text(constraint, "topologyKey")
        if not key:
            errors.append(field_required(f"{at}.topologyKey", "can not be empty"))
        else:
            errors += validate_label_name(key, f"{at}.topologyKey")
        action = text(constraint, "whenUnsatisfiable")
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            errors.append(
                field_not_supported(
                    f"{at}.whenUnsatisfiable", NamedString(action), ["DoNotSchedule", "ScheduleAnyway"]
                )
            )
        errors += validate_label_selector(obj(constraint, "labelSelector"), f"{path}.labelSelector")
        for rest in constraints[i + 1 :]:
            if text(rest, "topologyKey") == key and text(rest, "whenUnsatisfiable") == action:
                errors.append(
                    field_duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}")
                )
                break
    return _causes(errors)
