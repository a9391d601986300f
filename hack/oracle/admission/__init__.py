"""The checks of KubeVirt's VM webhook on a CREATE (``VMsAdmitter.Admit`` at d923fdb), with inputs for each.

Written from KubeVirt's code, independently of the golden cases: every ``StatusCause`` the webhook can
return on a VM CREATE is a :class:`Check` (the KubeVirt function, the feature gate it depends on, the
cause it gives); every area has a list of :class:`Variant` changes that break its checks, just miss
them, or sit on their boundaries. ``hack/oracle/fuzz_admission.py`` applies them to a few base VMs, with the
relevant gates on and off, asks KubeVirt (the ``expand-admit`` oracle) and ``validate=True``, and diffs.
It also writes docs/reference/admission-rules.md from :data:`CHECKS`, with a break and a near-miss input per
check taken from what the oracle answered.

Each area is a module named after the module of ``apiserver/render/admission`` that ports it (``base``
holds what they share). The webhook's order runs across areas, so the areas only define their variants
and checks; the two lists below register them in that order: :data:`VARIANTS` in the order of
ValidateVirtualMachineInstanceSpec and VMsAdmitter.Admit, :data:`CHECKS` in the order the webhook returns
its causes (the rules table lists them so, and the fuzzer seeds its combinations from the variants' order).
"""

from __future__ import annotations

from collections.abc import Callable

from hack.oracle.admission import (
    accesscredentials,
    cpu,
    decoding,
    devices,
    disks,
    dns,
    dra,
    featuregates,
    firmware,
    formatting,
    hostdevices,
    instancetype,
    launchsecurity,
    memory,
    metadata,
    network,
    probes,
    scheduling,
    schema,
    vm_shapes,
    vm_spec,
    volumerequests,
    volumes,
)
from hack.oracle.admission.base import (
    BASES,
    CHECKS,
    JSON,
    VARIANTS,
    Base,
    Check,
    Mutation,
    Variant,
    check,
    go_file,
    sweep,
    variant,
)
from hack.oracle.admission.formatting import SPECIAL

__all__ = [
    "BASES",
    "CHECKS",
    "CHECKS_IN_ORDER",
    "JSON",
    "SPECIAL",
    "VARIANTS",
    "VARIANTS_IN_ORDER",
    "Base",
    "Check",
    "Mutation",
    "Variant",
    "check",
    "go_file",
    "sweep",
    "variant",
]

# The variants, area by area, in the order of ValidateVirtualMachineInstanceSpec and VMsAdmitter.Admit.
VARIANTS_IN_ORDER: tuple[Callable[[], None], ...] = (
    dns.hostname_variants,
    memory.variants,
    memory.live_update_variants,
    cpu.live_update_variants,
    firmware.machine_variants,
    firmware.acpi_variants,
    cpu.variants,
    devices.start_strategy_variants,
    scheduling.affinity_variants,
    scheduling.topology_spread_variants,
    network.variants,
    network.dra_variants,
    dra.variants,
    disks.boot_order_variants,
    devices.input_variants,
    probes.variants,
    disks.variants,
    firmware.boot_variants,
    volumes.variants,
    accesscredentials.variants,
    dns.policy_variants,
    devices.eviction_and_gpu_variants,
    hostdevices.variants,
    devices.variants,
    launchsecurity.variants,
    metadata.variants,
    vm_spec.data_volume_template_variants,
    vm_spec.run_strategy_variants,
    featuregates.discontinued_variants,
    instancetype.variants,
    featuregates.gate_shape_variants,
    volumerequests.variants,
    formatting.variants,
    decoding.variants,
    vm_shapes.variants,
)

# The checks: every StatusCause the webhook can return for a VM CREATE, in the webhook's order.
CHECKS_IN_ORDER: tuple[Callable[[], None], ...] = (
    # stage 1: schema (util/webhooks ValidateSchema, util/openapi Validator.Validate, go-openapi)
    schema.checks,
    # stages 3 and 5: instancetype and preference (ApplyToVM), preference requirements
    instancetype.checks,
    # stage 6: discontinued gates and bindings
    featuregates.checks,
    network.discontinued_binding_checks,
    # stage 7: ValidateVirtualMachineSpec
    vm_spec.template_check,
    metadata.checks,
    hostdevices.annotation_checks,
    # ValidateVirtualMachineInstanceSpec, in its order
    dns.hostname_checks,
    memory.checks,
    firmware.machine_checks,
    cpu.checks,
    devices.start_strategy_checks,
    cpu.realtime_checks,
    scheduling.checks,
    network.checks,
    dra.checks,
    disks.boot_order_checks,
    devices.input_checks,
    probes.checks,
    # validateDomainSpec: storage ValidateDisks, firmware, secure boot
    disks.checks,
    firmware.checks,
    volumes.checks,
    accesscredentials.checks,
    dns.policy_checks,
    devices.eviction_and_gpu_checks,
    hostdevices.checks,
    devices.sound_checks,
    launchsecurity.checks,
    devices.vsock_reservation_metrics_checks,
    volumes.virtiofs_check,
    devices.video_panic_reboot_checks,
    memory.reserved_overhead_check,
    volumes.service_account_checks,
    # back in ValidateVirtualMachineSpec
    vm_spec.data_volume_template_checks,
    vm_spec.run_strategy_checks,
    cpu.live_update_check,
    memory.live_update_checks,
    # stage 8: storage Admit
    vm_spec.namespace_check,
    # stage 9: status.volumeRequests
    volumerequests.checks,
)

for _register in (*VARIANTS_IN_ORDER, *CHECKS_IN_ORDER):
    _register()
