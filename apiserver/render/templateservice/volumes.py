"""The PersistentVolumeClaims virt-controller reads before it creates the virt-launcher pod.

Mirrors the claim part of the template service's volume renderer (``pkg/virt-controller/services/
rendervolumes.go``): ``withVMIVolumes`` walks the VMI's volumes but the hotplugged ones (``hotplugVolumes``:
named in ``status.volumeStatus`` with ``hotplugVolume``, or a ``dataVolume``/``persistentVolumeClaim`` marked
``hotpluggable``), and ``handlePVCVolume``, ``handleEphemeralVolume`` and ``handleDataVolume`` each look the
claim up in virt-controller's PVC informer (``addPVCToLaunchManifest``, ``storage/types.IsPVCBlockFromStore``):
a claim that is not there fails the render with ``didn't find PVC <name>``, and no pod is created. What it
reads from the claim (``volumeMode: Block`` gives a device, else a mount; ``ReadWriteMany`` a shared path)
places the volume in the pod, and changes none of its resources.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.render.templateservice import vmi as traits
from apiserver.render.templateservice.resources import RenderError

JSON = dict[str, Any]

PVCLookup = Callable[[str, str], Mapping[str, Any] | None]
"""The PVC ``name`` of namespace ``namespace``, or None where there is none."""


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim a volume of the pod needs: whether it was found or assumed (a filesystem PVC), and
    whether it is a block device."""

    volume: str
    name: str
    block: bool = False
    assumed: bool = False


def hotplug_volumes(vmi: JSON) -> set[str]:
    """``hotplugVolumes``: the volumes the pod does not mount (virt-handler attaches them later)."""
    names = {
        s.get("name", "")
        for s in ((vmi.get("status") or {}).get("volumeStatus") or ())
        if isinstance(s, dict) and s.get("hotplugVolume") is not None
    }
    for volume in traits.spec_of(vmi).get("volumes") or ():
        dv = volume.get("dataVolume")
        pvc = volume.get("persistentVolumeClaim")
        if (isinstance(dv, dict) and dv.get("hotpluggable")) or (
            isinstance(pvc, dict) and pvc.get("hotpluggable")
        ):
            names.add(volume.get("name", ""))
    return names


def _claim_names(volume: JSON) -> list[str]:
    """The claims ``withVMIVolumes`` looks up for one volume, in its order (PVC, ephemeral, DataVolume)."""
    names = []
    pvc = volume.get("persistentVolumeClaim")
    if pvc is not None:
        names.append(str(pvc.get("claimName", "")))
    ephemeral = volume.get("ephemeral")
    if ephemeral is not None:
        inner = ephemeral.get("persistentVolumeClaim")
        if inner is None:
            # Go dereferences the missing claim and virt-controller's sync panics: no pod either way
            raise RenderError(f"ephemeral volume {volume.get('name', '')} names no persistentVolumeClaim")
        names.append(str(inner.get("claimName", "")))
    dv = volume.get("dataVolume")
    if dv is not None:
        names.append(str(dv.get("name", "")))
    return names


def volume_claims(vmi: JSON, pvcs: PVCLookup | None, *, assume_missing: bool = False) -> list[Claim]:
    """Every claim the pod's volumes need, looked up in the VMI's namespace through ``pvcs`` (None: no
    claim is known). A claim not found raises :class:`RenderError` with KubeVirt's message, unless
    ``assume_missing``: then it is taken as an existing filesystem PVC and marked ``assumed``."""
    namespace = str((vmi.get("metadata") or {}).get("namespace") or "")
    hotplugged = hotplug_volumes(vmi)
    claims = []
    for volume in traits.spec_of(vmi).get("volumes") or ():
        name = str(volume.get("name", ""))
        if name in hotplugged:
            continue
        for claim_name in _claim_names(volume):
            found = pvcs(namespace, claim_name) if pvcs is not None else None
            if found is None:
                if not assume_missing:
                    raise RenderError(f"didn't find PVC {claim_name}")
                claims.append(Claim(name, claim_name, assumed=True))
                continue
            block = (found.get("spec") or {}).get("volumeMode") == "Block"
            claims.append(Claim(name, claim_name, block=block))
    return claims
