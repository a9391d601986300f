"""A VM whose instancetype carries common-instancetypes' deprecation label gets a ``Warning`` header (299)
naming it, on GET expand-spec and PUT expand-vm-spec alike; the body is KubeVirt's, unchanged. KubeVirt's
own virt-api sends no such warning (it reads no such label)."""

from __future__ import annotations

from pathlib import Path

import yaml

from apiserver import expand
from apiserver.sources.folder import FolderSource
from tests.render.instancetype.test_deprecation import instancetype, vm, warning
from tests.support.http_helpers import put_path, running_server, vm_path


async def test_get_and_put_warn_of_a_deprecated_instancetype(tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    folder.mkdir()
    stored = vm()
    (folder / "objects.yaml").write_text(yaml.safe_dump_all([stored, instancetype()]))
    expected = expand(stored, [instancetype()]).vm
    async with running_server(FolderSource(folder, watch=False), tmp_path) as srv:
        got = await srv.get(vm_path(namespace="team", name="farm"))
        put = await srv.put(put_path(namespace="team"), json_body=stored)
    text = warning("VirtualMachineClusterInstancetype", "gn1.xlarge")
    for reply in (got, put):
        assert reply.status == 200, reply.body
        assert reply.json() == expected
        assert reply.header_lists["warning"] == [f'299 - "{text}"']
