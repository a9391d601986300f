"""The memory virt-controller adds to a VMI's guest memory for the virt-launcher pod, with its parts named.

Mirrors ``services.CalculateMemoryOverhead`` (``pkg/virt-controller/services/template.go``): the
hypervisor's ``GetMemoryOverhead`` (``pkg/hypervisor/kvm/hypervisorbackend.go``, with
``addProbeOverheads`` and ``MultiplyMemory``) for the VMI's architecture, plus the network bindings'
(``pkg/network/resources/memory.go``: ``MemoryCalculator.Calculate``). The arithmetic is Go's:
``resource.Quantity`` ``Add`` in KubeVirt's order, the page tables from ``ScaledValue(Kilo)`` and an
int64 division, the ratio through a float64 and a truncating int64 conversion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.render.kubernetes.quantity import BINARY_SI, Quantity
from apiserver.render.kubernetes.quantitymath import (
    add,
    must_parse,
    new_quantity,
    new_scaled,
    resource_list,
)
from apiserver.render.kubernetes.quantitymath import total as sum_of
from apiserver.render.templateservice import vmi as traits
from apiserver.render.templateservice.config import LauncherConfig

JSON = dict[str, Any]

KILO = 3
_MI8 = must_parse("8Mi")


@dataclass(frozen=True, slots=True)
class Overhead:
    """The total (as ``CalculateMemoryOverhead`` returns it) and each addend, in KubeVirt's order."""

    total: Quantity
    parts: tuple[tuple[str, Quantity], ...]


def go_parse_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)``, or None where Go fails (no spaces, no ``_`` in decimals)."""
    if not text or text != text.strip() or "_" in text:
        return None
    lowered = text.lower().lstrip("+-")
    if lowered.startswith("0x"):
        try:
            return float.fromhex(text)
        except ValueError:
            return None
    if lowered in ("inf", "infinity", "nan"):
        return float(text)
    if not all(c in "0123456789.eE+-" for c in text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _go_int64(value: float) -> int:
    """Go's ``int64(f)`` on amd64: truncation; NaN and out of range give MinInt64."""
    if math.isnan(value) or not -(2.0**63) <= value < 2.0**63:
        return -(1 << 63)
    return int(value)


def _vcpus_for_overhead(domain: JSON) -> int:
    cpu = domain.get("cpu")
    if cpu is not None:
        vcpus = traits.number_of_vcpus(cpu)
    else:
        resources = domain.get("resources") or {}
        limits = resource_list(resources.get("limits"))
        requests = resource_list(resources.get("requests"))
        if "cpu" in limits:
            vcpus = limits["cpu"].value_ceil()
        elif "cpu" in requests:
            vcpus = requests["cpu"].value_ceil()
        else:
            vcpus = 0
    return max(vcpus, 1)


def _probe_parts(spec: JSON) -> list[tuple[str, Quantity]]:
    liveness = (spec.get("livenessProbe") or {}).get("exec") is not None
    readiness = (spec.get("readinessProbe") or {}).get("exec") is not None
    parts = []
    if liveness:
        parts.append(("livenessProbe", must_parse("10Mi")))
    if readiness:
        parts.append(("readinessProbe", must_parse("10Mi")))
    if liveness or readiness:
        parts.append(("virtProbe", must_parse("100Mi")))
    return parts


def kvm_memory_overhead(vmi: JSON, arch: str, ratio_text: str | None) -> Overhead:
    """``KvmHypervisorBackend.GetMemoryOverhead``."""
    spec = vmi.get("spec") or {}
    domain = spec.get("domain") or {}
    devices = domain.get("devices") or {}
    memory_request = traits.memory_request(vmi)

    parts: list[tuple[str, Quantity]] = []
    # NewScaledQuantity(ScaledValue(Kilo), Kilo), then Set(Value() / 512), which keeps DecimalSI
    pagetables = new_scaled(new_scaled(memory_request.scaled_value(KILO), KILO).value_ceil() // 512, 0)
    parts.append(("pageTables", pagetables))
    parts.append(("virtLauncherMonitor", must_parse("25Mi")))
    parts.append(("virtLauncher", must_parse("100Mi")))
    parts.append(("virtlogd", must_parse("25Mi")))
    parts.append(("virtqemud", must_parse("40Mi")))
    parts.append(("qemu", must_parse("50Mi")))
    vcpus = _vcpus_for_overhead(domain)
    parts.append(("vcpus", new_quantity(_MI8.value_ceil() * vcpus, BINARY_SI)))
    parts.append(("ioThread", must_parse("8Mi")))
    if devices.get("autoattachGraphicsDevice") is None or devices.get("autoattachGraphicsDevice") is True:
        parts.append(("video", must_parse("32Mi")))
    if arch == "arm64":
        parts.append(("arm64Firmware", must_parse("128Mi")))
    if traits.has_vfio(vmi):
        parts.append(("vfio", must_parse("1Gi")))
    if traits.has_downward_metrics_disk(vmi):
        parts.append(("downwardMetrics", must_parse("1Mi")))
    parts.extend(_probe_parts(spec))
    if traits.is_sev(vmi):
        parts.append(("sev", must_parse("256Mi")))
    if traits.has_tpm(vmi):
        parts.append(("tpm", must_parse("53Mi")))
    if traits.is_cpu_dedicated(vmi) or traits.wants_guaranteed_qos(vmi):
        parts.append(("dedicatedCPUOrGuaranteedQOS", must_parse("100Mi")))
    added = traits.reserved_added_overhead(vmi)
    if added is not None:
        parts.append(("reservedOverhead", added))

    total = sum_of(new_scaled(0, KILO), [part for _, part in parts])

    if ratio_text:
        ratio = go_parse_float(ratio_text)
        if ratio is not None:
            addition = float(total.scaled_value(KILO)) * (ratio - 1.0)
            extra = new_scaled(_go_int64(addition), KILO)
            parts.append(("additionalGuestMemoryOverheadRatio", extra))
            total = add(total, extra)
    return Overhead(total, tuple(parts))


def network_memory_overhead(vmi: JSON, bindings: Mapping[str, Any]) -> list[tuple[str, Quantity]]:
    """``MemoryCalculator.Calculate``: passt's fixed 250Mi, then each distinct registered binding
    plugin's ``computeResourceOverhead.requests.memory``, by interface order."""
    interfaces = ((vmi.get("spec") or {}).get("domain") or {}).get("devices", {}).get("interfaces") or []
    parts: list[tuple[str, Quantity]] = []
    if any(iface.get("passtBinding") is not None for iface in interfaces):
        parts.append(("passtBinding", must_parse("250Mi")))
    seen: set[str] = set()
    for iface in interfaces:
        binding = iface.get("binding")
        if binding is None:
            continue
        name = binding.get("name", "")
        if name in seen or name not in bindings:
            continue
        seen.add(name)
        plugin = bindings[name] or {}
        requests = resource_list((plugin.get("computeResourceOverhead") or {}).get("requests"))
        if "memory" in requests:
            parts.append((f"networkBinding/{name}", requests["memory"]))
    return parts


def calculate_memory_overhead(config: LauncherConfig, vmi: JSON, cluster_arch: str) -> Overhead:
    """``CalculateMemoryOverhead``: the VMI's architecture (the cluster's when unset), the hypervisor's
    overhead, then the network's added to it."""
    arch = (vmi.get("spec") or {}).get("architecture") or cluster_arch
    overhead = kvm_memory_overhead(vmi, arch, config.additional_overhead_ratio)
    network = network_memory_overhead(vmi, config.network_bindings)
    net_total = sum_of(_zero_plain(), [part for _, part in network])
    total = add(overhead.total, net_total)
    return Overhead(total, overhead.parts + tuple(network))


def _zero_plain() -> Quantity:
    # resource.Quantity{}: zero with no format; Add takes the first addend's format.
    return new_scaled(0, 0)
