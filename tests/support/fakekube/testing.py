"""Object builders and helpers shared by the tests that run against the fake (``eventually``: from
tests/support/waiting.py, importable from here too)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from apiserver.sources.cluster import ClusterSource
from tests.support.fakekube import FakeKube
from tests.support.patience import patience
from tests.support.waiting import eventually as eventually  # re-exported: the fake's tests import it here

IT = "instancetype.kubevirt.io/v1beta1"


def obj(kind: str, name: str, ns: str | None = "default", api: str = IT, **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns is not None:
        meta["namespace"] = ns
    meta.update(fields.pop("metadata", {}))
    return {"apiVersion": api, "kind": kind, "metadata": meta, **fields}


def stored_vm(fake: FakeKube, vm: Mapping[str, Any]) -> dict[str, Any]:
    """``vm`` stored as on a cluster running KubeVirt: created by its user (a status in it ignored, as
    the VM CRD's status subresource does), then its status written through ``/status`` as virt-controller
    writes it (the revisions it captured in ``status.instancetypeRef``/``preferenceRef``)."""
    created = fake.create(vm)
    if "status" in vm:
        return fake.update_status({**created, "status": vm["status"]})
    return created


def instancetype(
    name: str, ns: str | None = "default", cpus: int = 1, *, cluster: bool = False
) -> dict[str, Any]:
    kind = "VirtualMachineClusterInstancetype" if cluster else "VirtualMachineInstancetype"
    return obj(kind, name, None if cluster else ns, spec={"cpu": {"guest": cpus}, "memory": {"guest": "1Gi"}})


def preference(name: str, ns: str | None = "default", *, cluster: bool = False) -> dict[str, Any]:
    kind = "VirtualMachineClusterPreference" if cluster else "VirtualMachinePreference"
    return obj(kind, name, None if cluster else ns, spec={"cpu": {"preferredCPUTopology": "cores"}})


def kubeconfig(fake: FakeKube, path: Path, token: str | None = None) -> str:
    user: dict[str, Any] = {"token": token} if token else {}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(doc))
    return str(path)


async def synced(source: ClusterSource, fake: FakeKube) -> None:
    """Every cache of ``source`` listed and its watch open on ``fake``."""
    async with asyncio.timeout(patience(5)):
        await source.wait_synced()
    await eventually(
        lambda: fake.open_watches == sum(1 for c in source.caches.values() if c.missing is False)
    )
