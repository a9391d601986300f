"""The firmware synchronizer: a VM without a firmware UUID gets the one its VMI was started with.

Mirrors ``pkg/virt-controller/watch/vm/firmware.go`` (``FirmwareController.Sync``, ``vmFirmwarePatch``,
``CalculateLegacyUUID``).
"""

from __future__ import annotations

import uuid
from typing import Any

from apiserver.render.golang.tree import clone
from apiserver.render.vmcontroller._go import JSON, domain, template_spec

_FIRMWARE_NAMESPACE = uuid.UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895")
FIRMWARE_PATH = "/spec/template/spec/domain/firmware"


def legacy_uuid(name: str) -> str:
    """``CalculateLegacyUUID``: a name-based (SHA-1) UUID of the VM's name."""
    return str(uuid.uuid5(_FIRMWARE_NAMESPACE, name))


def sync_firmware(vm: JSON) -> dict[str, Any] | None:
    """``FirmwareController.Sync``: None when the template has a firmware UUID; else the VM patch KubeVirt
    writes (``{path: firmware}``), after setting it on ``vm``."""
    tspec = template_spec(vm)
    firmware = (tspec.get("domain") or {}).get("firmware")
    if firmware is not None and firmware.get("uuid"):
        return None
    firmware = clone(firmware) if firmware is not None else {}
    firmware["uuid"] = legacy_uuid(str((vm.get("metadata") or {}).get("name", "")))
    domain(tspec)["firmware"] = firmware
    return {FIRMWARE_PATH: clone(firmware)}
