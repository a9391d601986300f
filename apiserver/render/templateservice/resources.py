"""The compute container's requests and limits: virt-controller's resource renderer.

Mirrors ``pkg/virt-controller/services/renderresources.go`` (``NewResourceRenderer`` and its options
``WithEphemeralStorageRequest``, ``WithVirtualizationResources`` over ``getRequiredResources``,
``WithMemoryRequests``, ``WithCPUPinning``, ``WithoutDedicatedCPU``, ``WithHugePages``,
``WithMemoryOverhead``, ``WithAutoMemoryLimits`` over ``getMemoryLimitsRatio``, ``WithNetworkResources``,
``WithGPUsDevicePlugins``/``WithGPUsDRA``, ``WithHostDevicesDevicePlugins``/``WithHostDevicesDRA``,
``WithNetworksDRA``, ``WithSEV``, ``WithTDX``, ``WithPersistentReservation``, ``WithIOMMUFD``;
``validatePermittedHostDevices``) and ``template.go``'s ``newResourceRenderer``,
``VMIResourcePredicates`` (the rules, in their order), ``doesVMIRequireAutoResourceLimits`` and
``doesVMIRequireAutoCPULimits``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from apiserver.render.kubernetes.quantity import BINARY_SI, DECIMAL_SI, Quantity
from apiserver.render.kubernetes.quantitymath import (
    ResourceList,
    add,
    memory_of,
    must_parse,
    new_quantity,
    new_scaled,
    resource_list,
    sub,
)
from apiserver.render.templateservice import vmi as traits
from apiserver.render.templateservice.config import LauncherConfig
from apiserver.render.templateservice.overhead import go_parse_float

JSON = dict[str, Any]

DEVICE_PREFIX = "devices.kubevirt.io"
TUN = DEVICE_PREFIX + "/tun"
VHOST_NET = DEVICE_PREFIX + "/vhost-net"
VHOST_VSOCK = DEVICE_PREFIX + "/vhost-vsock"
PR_HELPER = DEVICE_PREFIX + "/pr-helper"
SEV_DEVICE = DEVICE_PREFIX + "/sev"
TDX_DEVICE = DEVICE_PREFIX + "/tdx"
IOMMUFD_DEVICE = DEVICE_PREFIX + "/iommufd"
EPHEMERAL_STORAGE_OVERHEAD = "50M"
DEFAULT_MEMORY_LIMIT_RATIO = 2.0
AUTO_MEMORY_LIMITS_RATIO_LABEL = "alpha.kubevirt.io/auto-memory-limits-ratio"
EMULATOR_THREAD_EVEN_PARITY = "alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity"
_INT64_MIN = -(1 << 63)


class RenderError(ValueError):
    """An error ``RenderLaunchManifest`` returns (KubeVirt would not create the pod)."""


@dataclass(slots=True)
class Renderer:
    """``ResourceRenderer``: the VMI's own limits and requests, and the ones the options calculate."""

    vm_limits: ResourceList
    vm_requests: ResourceList
    calculated_limits: ResourceList = field(default_factory=dict)
    calculated_requests: ResourceList = field(default_factory=dict)
    claims: list[JSON] = field(default_factory=list)

    def limits(self) -> ResourceList:
        return {**self.calculated_limits, **self.vm_limits}

    def requests(self) -> ResourceList:
        return {**self.calculated_requests, **self.vm_requests}

    def request_device(self, name: str) -> None:
        """``requestResource`` on a copy of the requirements, copied back into the calculated lists."""
        limits, requests = self.limits(), self.requests()
        for resources in (limits, requests):
            resources[name] = (
                add(resources[name], new_quantity(1, DECIMAL_SI))
                if name in resources
                else new_quantity(1, DECIMAL_SI)
            )
        self.calculated_limits.update(limits)
        self.calculated_requests.update(requests)


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the template service reads of the cluster beside the configuration: the VMI's namespace
    (its labels), the ResourceQuotas there, and the architecture virt-controller runs on."""

    arch: str = "amd64"
    namespace: JSON | None = None
    quotas: Sequence[JSON] = ()


def go_format_g(value: float) -> str:
    """``fmt.Sprintf("%g", value)``: the shortest digits, exponent form below 1e-4 or from 1e6."""
    if value == 0:
        return "0"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    exp = len(text) + exponent - 1
    neg = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{neg}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exponent >= 0:
        return neg + text + "0" * exponent
    point = len(text) + exponent
    if point > 0:
        return f"{neg}{text[:point]}.{text[point:]}"
    return f"{neg}0.{'0' * -point}{text}"


def _io_threads(vmi: JSON) -> int:
    count = (traits.domain_of(vmi).get("ioThreads") or {}).get("supplementalPoolThreadCount")
    return int(count) if count is not None else 0


def _calc_vcpus(vmi: JSON) -> int:
    cpu = traits.domain_of(vmi).get("cpu")
    return traits.number_of_vcpus(cpu) if cpu is not None else 1


def with_ephemeral_storage_request(r: Renderer) -> None:
    overhead = must_parse(EPHEMERAL_STORAGE_OVERHEAD)
    requested = r.vm_requests.get("ephemeral-storage", new_scaled(0, 0))
    r.vm_requests["ephemeral-storage"] = add(requested, overhead)
    if "ephemeral-storage" in r.vm_limits:
        r.vm_limits["ephemeral-storage"] = add(r.vm_limits["ephemeral-storage"], overhead)


def required_resources(vmi: JSON, hypervisor_device: str, allow_emulation: bool) -> ResourceList:
    """``getRequiredResources``."""
    res: ResourceList = {}
    if traits.requires_tun(vmi):
        res[TUN] = must_parse("1")
    if traits.requires_vhost_net(vmi, allow_emulation):
        res[VHOST_NET] = must_parse("1")
    if not allow_emulation:
        res[hypervisor_device] = must_parse("1")
    if traits.auto_attach_vsock(vmi):
        res[VHOST_VSOCK] = must_parse("1")
    return res


def with_memory_requests(r: Renderer, memory: JSON | None, overcommit: int) -> None:
    limit = r.vm_limits.get("memory")
    request = r.vm_requests.get("memory")
    if limit is not None and not limit.is_zero() and (request is None or request.is_zero()):
        r.vm_requests["memory"] = limit
    if "memory" in r.vm_requests:
        return
    quantity: Quantity | None = None
    if memory is not None and memory.get("guest") is not None:
        quantity = _quantity(memory["guest"])
    elif memory is not None and memory.get("hugepages") is not None:
        quantity = _parse_or_none(str((memory.get("hugepages") or {}).get("pageSize", "")))
    if quantity is not None and quantity.value_ceil() > 0:
        if overcommit == 100:
            r.vm_requests["memory"] = quantity
        else:
            value = _go_div(quantity.value_ceil() * 100, overcommit)
            r.vm_requests["memory"] = new_quantity(value, quantity.format)


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _parse_or_none(text: str) -> Quantity | None:
    try:
        return must_parse(text)
    except ValueError:
        return None


def _quantity(raw: Any) -> Quantity:
    return resource_list({"q": raw})["q"]


def with_cpu_pinning(r: Renderer, vmi: JSON, annotations: Mapping[str, str], additional_cpus: int) -> None:
    cpu = traits.domain_of(vmi).get("cpu") or {}
    vcpus = traits.number_of_vcpus(cpu)
    io_threads = _io_threads(vmi)
    if vcpus != 0:
        total = vcpus + io_threads
        r.vm_limits["cpu"] = new_quantity(total, BINARY_SI)
        r.vm_requests["cpu"] = new_quantity(total, BINARY_SI)
    else:
        extra = new_quantity(io_threads, BINARY_SI)
        if "cpu" in r.vm_limits:
            r.vm_limits["cpu"] = add(r.vm_limits["cpu"], extra)
        if "cpu" in r.vm_requests:
            r.vm_requests["cpu"] = add(r.vm_requests["cpu"], extra)
    if cpu.get("isolateEmulatorThread"):
        emulator = new_quantity(1, BINARY_SI)
        limits = r.vm_limits.get("cpu", new_scaled(0, 0))
        if EMULATOR_THREAD_EVEN_PARITY in annotations and (limits.value_ceil() + additional_cpus) % 2 == 0:
            emulator = new_quantity(2, BINARY_SI)
        r.vm_limits["cpu"] = add(limits, emulator)
        if "cpu" in r.vm_requests:
            r.vm_requests["cpu"] = add(r.vm_requests["cpu"], emulator)
    if "memory" in r.vm_requests:
        r.vm_limits["memory"] = r.vm_requests["memory"]


def with_cpu_without_pinning(r: Renderer, vmi: JSON, ratio: int, with_limits: bool) -> None:
    total = _calc_vcpus(vmi) + _io_threads(vmi)
    if total != 0 and ratio > 0:
        val = float(total) / float(ratio)
        text = go_format_g(val)
        if val < 1:
            val *= 1000
            text = go_format_g(val) + "m"
        r.calculated_requests["cpu"] = must_parse(text)
        if with_limits:
            r.calculated_limits["cpu"] = must_parse(str(total))


def with_hugepages(r: Renderer, memory: JSON, overhead: Quantity) -> None:
    hugepage = "hugepages-" + str((memory.get("hugepages") or {}).get("pageSize", ""))
    hugepages_request = memory_of(r.vm_requests)
    guest = _quantity(memory["guest"]) if memory.get("guest") is not None else None
    if guest is not None and hugepages_request.value_ceil() > guest.value_ceil():
        hugepages_request = guest
    r.calculated_requests[hugepage] = hugepages_request
    r.calculated_limits[hugepage] = hugepages_request

    req_diff = new_scaled(0, 3)
    lim_diff = new_scaled(0, 3)
    if guest is not None:
        requests = memory_of(r.vm_requests)
        limits = memory_of(r.vm_limits)
        if requests.value_ceil() > guest.value_ceil():
            req_diff = sub(add(req_diff, requests), guest)
        if limits.value_ceil() > guest.value_ceil():
            lim_diff = sub(add(lim_diff, limits), guest)
    r.vm_requests["memory"] = add(req_diff, overhead)
    if "memory" in r.vm_limits:
        r.vm_limits["memory"] = add(lim_diff, overhead)


def with_memory_overhead(r: Renderer, vmi: JSON, overhead: Quantity) -> None:
    request = r.vm_requests.get("memory", new_scaled(0, 0))
    if not (traits.domain_of(vmi).get("resources") or {}).get("overcommitGuestOverhead"):
        request = add(request, overhead)
    r.vm_requests["memory"] = request
    if "memory" in r.vm_limits:
        r.vm_limits["memory"] = add(r.vm_limits["memory"], overhead)


def memory_limits_ratio(namespace: JSON | None) -> float:
    """``getMemoryLimitsRatio``: the namespace's label, else 2."""
    if namespace is None:
        return DEFAULT_MEMORY_LIMIT_RATIO
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    text = labels.get(AUTO_MEMORY_LIMITS_RATIO_LABEL)
    if text is None:
        return DEFAULT_MEMORY_LIMIT_RATIO
    ratio = go_parse_float(str(text))
    if ratio is None or ratio < 1.0:
        return DEFAULT_MEMORY_LIMIT_RATIO
    return ratio


def with_auto_memory_limits(r: Renderer, namespace: JSON | None) -> None:
    ratio = memory_limits_ratio(namespace)
    request = r.vm_requests.get("memory", new_scaled(0, 0))
    product = float(request.value_ceil()) * ratio
    value = int(product) if math.isfinite(product) and abs(product) < 2.0**63 else _INT64_MIN
    r.calculated_limits["memory"] = new_quantity(value, request.format)


def requires_auto_limits(vmi: JSON, resource: str, quotas: Sequence[JSON]) -> bool:
    """``doesVMIRequireAutoResourceLimits``: no limit of its own, and a quota of the VMI's namespace
    sets ``limits.<resource>``."""
    if resource in traits.limits_of(vmi):
        return False
    namespace = (vmi.get("metadata") or {}).get("namespace", "")
    for quota in quotas:
        hard = (quota.get("spec") or {}).get("hard") or {}
        if f"limits.{resource}" in hard and (quota.get("metadata") or {}).get("namespace", "") == namespace:
            return True
    return False


def requires_auto_cpu_limits(config: LauncherConfig, vmi: JSON, cluster: Cluster) -> bool:
    """``doesVMIRequireAutoCPULimits``: a quota, or the namespace matching
    ``autoCPULimitNamespaceLabelSelector``."""
    if requires_auto_limits(vmi, "cpu", cluster.quotas):
        return True
    selector = config.auto_cpu_limit_selector
    if selector is None or "cpu" in traits.limits_of(vmi):
        return False
    if cluster.namespace is None:
        return False
    labels = (cluster.namespace.get("metadata") or {}).get("labels") or {}
    return label_selector_matches(selector, labels)


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``; an invalid selector matches nothing."""
    for key, want in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != want:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In":
            if not values or labels.get(key) not in values:
                return False
        elif op == "NotIn":
            if not values:
                return False
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if values or key not in labels:
                return False
        elif op == "DoesNotExist":
            if values or key in labels:
                return False
        else:
            return False
    return True


def validate_permitted_host_devices(vmi: JSON, config: LauncherConfig) -> None:
    """``validatePermittedHostDevices``: with ``permittedHostDevices`` configured, every GPU and host
    device (but DRA-claimed ones while their gate is on) must name a permitted resource."""
    permitted = config.permitted_host_devices
    if permitted is None:
        return
    names = {
        d.get("resourceName", "")
        for group in ("pciHostDevices", "mediatedDevices", "usb")
        for d in permitted.get(group) or ()
    }
    devices = traits.devices_of(vmi)
    errors = []
    gpus_dra = config.enabled("GPUsWithDRA")
    for gpu in devices.get("gpus") or ():
        if gpus_dra and gpu.get("claimRequest") is not None:
            continue
        if gpu.get("deviceName", "") not in names:
            errors.append(
                f"GPU {gpu.get('deviceName', '')} is not permitted in permittedHostDevices configuration"
            )
    hd_dra = config.enabled("HostDevicesWithDRA")
    for dev in devices.get("hostDevices") or ():
        if hd_dra and dev.get("claimRequest") is not None:
            continue
        if dev.get("deviceName", "") not in names:
            errors.append(
                f"HostDevice {dev.get('deviceName', '')} is not permitted in permittedHostDevices configuration"
            )
    if errors:
        raise RenderError(" ".join(errors))


def _claim(request: JSON) -> JSON:
    claim = {"name": request.get("claimName", "")}
    if request.get("requestName"):
        claim["request"] = request["requestName"]
    return claim


def render_compute_resources(
    config: LauncherConfig,
    vmi: JSON,
    cluster: Cluster,
    overhead: Quantity,
    network_resources: Mapping[str, str] | None = None,
) -> Renderer:
    """``newResourceRenderer`` with every rule whose predicate holds, in ``VMIResourcePredicates``' order."""
    domain = traits.domain_of(vmi)
    r = Renderer(dict(traits.limits_of(vmi)), dict(traits.requests_of(vmi)))
    with_ephemeral_storage_request(r)
    hypervisor_device = f"{DEVICE_PREFIX}/{'mshv' if config.hypervisor == 'hyperv-direct' else 'kvm'}"
    r.vm_limits.update(required_resources(vmi, hypervisor_device, config.use_emulation))
    validate_permitted_host_devices(vmi, config)

    with_cpu_limits = requires_auto_cpu_limits(config, vmi, cluster)
    additional_cpus = 0
    if domain.get("ioThreadsPolicy") == "supplementalPool":
        count = (domain.get("ioThreads") or {}).get("supplementalPoolThreadCount")
        if count is not None:
            additional_cpus = int(count)
    memory = domain.get("memory")
    annotations = (vmi.get("metadata") or {}).get("annotations") or {}
    dedicated = traits.is_cpu_dedicated(vmi)
    hugepages = traits.has_hugepages(vmi)
    devices = traits.devices_of(vmi)

    if traits.memory_request(vmi).is_zero():
        with_memory_requests(r, memory, config.memory_overcommit)
    if dedicated:
        with_cpu_pinning(r, vmi, annotations, additional_cpus)
    else:
        with_cpu_without_pinning(r, vmi, config.cpu_allocation_ratio, with_cpu_limits)
    if hugepages:
        assert isinstance(memory, dict)
        with_hugepages(r, memory, overhead)
    else:
        with_memory_overhead(r, vmi, overhead)
    if requires_auto_limits(vmi, "memory", cluster.quotas):
        with_auto_memory_limits(r, cluster.namespace)
    if network_resources:
        for name in network_resources.values():
            if name:
                r.request_device(name)
    gpus = devices.get("gpus") or ()
    if any(g.get("deviceName") and g.get("claimRequest") is None for g in gpus):
        for g in gpus:
            if g.get("deviceName") and g.get("claimRequest") is None:
                r.request_device(g["deviceName"])
    if config.enabled("GPUsWithDRA") and any(
        not g.get("deviceName") and g.get("claimRequest") is not None for g in gpus
    ):
        r.claims.extend(
            _claim(g["claimRequest"])
            for g in gpus
            if not g.get("deviceName") and g.get("claimRequest") is not None
        )
    host_devices = devices.get("hostDevices") or ()
    if any(h.get("deviceName") and h.get("claimRequest") is None for h in host_devices):
        for h in host_devices:
            if h.get("deviceName") and h.get("claimRequest") is None:
                r.request_device(h["deviceName"])
    if config.enabled("HostDevicesWithDRA") and any(
        not h.get("deviceName") and h.get("claimRequest") is not None for h in host_devices
    ):
        r.claims.extend(
            _claim(h["claimRequest"])
            for h in host_devices
            if not h.get("deviceName") and h.get("claimRequest") is not None
        )
    networks = traits.spec_of(vmi).get("networks") or ()
    dra_networks = [n for n in networks if n.get("resourceClaim") is not None]
    if config.enabled("NetworkDevicesWithDRA") and dra_networks:
        r.claims.extend(_claim(n["resourceClaim"]) for n in dra_networks)
    if traits.is_sev_vmi(vmi):
        r.request_device(SEV_DEVICE)
    if traits.is_tdx(vmi):
        r.request_device(TDX_DEVICE)
    if traits.has_persistent_reservation(vmi):
        r.request_device(PR_HELPER)
    if config.enabled("IOMMUFD"):
        r.request_device(IOMMUFD_DEVICE)
    return r
