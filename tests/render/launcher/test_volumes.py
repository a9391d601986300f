"""The claims the template service needs before it creates the pod (``withVMIVolumes``,
``addPVCToLaunchManifest``): which volumes need one, which are skipped as hotplugged, what is read."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.render.templateservice.resources import RenderError
from apiserver.render.templateservice.volumes import Claim, volume_claims


def _vmi(*volumes: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    vmi: dict[str, Any] = {"metadata": {"name": "v", "namespace": "ns"}, "spec": {"volumes": list(volumes)}}
    if status is not None:
        vmi["status"] = status
    return vmi


CLAIMS = {
    ("ns", "fs"): {"spec": {"volumeMode": "Filesystem", "accessModes": ["ReadWriteMany"]}},
    ("ns", "blk"): {"spec": {"volumeMode": "Block"}},
    ("other", "there"): {"spec": {}},
}


def lookup(namespace: str, name: str) -> dict[str, Any] | None:
    return CLAIMS.get((namespace, name))


def test_each_claim_kind_is_looked_up_in_the_vmis_namespace() -> None:
    vmi = _vmi(
        {"name": "a", "persistentVolumeClaim": {"claimName": "fs"}},
        {"name": "b", "dataVolume": {"name": "blk"}},
        {"name": "c", "ephemeral": {"persistentVolumeClaim": {"claimName": "fs"}}},
        {"name": "d", "containerDisk": {"image": "x"}},
        {"name": "e", "hostDisk": {"path": "/x", "type": "Disk"}},
    )
    assert volume_claims(vmi, lookup) == [Claim("a", "fs"), Claim("b", "blk", block=True), Claim("c", "fs")]


def test_a_claim_of_another_namespace_is_not_found() -> None:
    with pytest.raises(RenderError, match=r"^didn't find PVC there$"):
        volume_claims(_vmi({"name": "a", "persistentVolumeClaim": {"claimName": "there"}}), lookup)


def test_hotplugged_volumes_need_no_claim() -> None:
    vmi = _vmi(
        {"name": "a", "persistentVolumeClaim": {"claimName": "gone", "hotpluggable": True}},
        {"name": "b", "dataVolume": {"name": "gone", "hotpluggable": True}},
        {"name": "c", "persistentVolumeClaim": {"claimName": "gone"}},
        status={"volumeStatus": [{"name": "c", "hotplugVolume": {}}]},
    )
    assert volume_claims(vmi, None) == []


def test_missing_claims_are_assumed_only_on_request() -> None:
    vmi = _vmi({"name": "a", "persistentVolumeClaim": {"claimName": "gone"}})
    with pytest.raises(RenderError, match=r"^didn't find PVC gone$"):
        volume_claims(vmi, None)
    assert volume_claims(vmi, None, assume_missing=True) == [Claim("a", "gone", assumed=True)]


def test_an_ephemeral_volume_without_its_claim_is_refused_clearly() -> None:
    with pytest.raises(RenderError, match="ephemeral volume a names no persistentVolumeClaim"):
        volume_claims(_vmi({"name": "a", "ephemeral": {}}), lookup)
