"""Probe rules (``vmi-create-admitter.go``: ``validateProbe``,
``appendStatusCauseForProbeNotAllowedWithNoPodNetworkPresent``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission._go import Causes, has, invalid, items, required


def validate_probe(field: str, probe: Mapping[str, Any] | None) -> Causes:
    """``validateProbe``: exactly one handler."""
    if probe is None:
        return []
    handlers = sum(has(probe, k) for k in ("httpGet", "tcpSocket", "exec", "guestAgentPing"))
    if handlers > 1:
        return [invalid(field, f"{field} must have exactly one probe type set")]
    if handlers < 1:
        return [
            required(
                field,
                f"either {field}.tcpSocket, {field}.exec or {field}.httpGet must be set if a {field} is specified",
            )
        ]
    return []


def validate_probes(field: str, spec: Mapping[str, Any]) -> Causes:
    """Both probes, then (without a pod network) the HTTP and TCP handlers that need one."""
    causes: Causes = []
    causes += validate_probe(f"{field}.readinessProbe", spec.get("readinessProbe"))
    causes += validate_probe(f"{field}.livenessProbe", spec.get("livenessProbe"))
    if not any(has(n, "pod") for n in items(spec, "networks")):
        for name in ("readinessProbe", "livenessProbe"):
            probe = spec.get(name)
            if probe is None:
                continue
            for handler in ("httpGet", "tcpSocket"):
                if has(probe, handler):
                    path = f"{field}.{name}.{handler}"
                    causes.append(invalid(path, f"{path} is only allowed if the Pod Network is attached"))
    return causes
