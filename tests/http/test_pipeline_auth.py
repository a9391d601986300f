"""Cached answers given at once (no middleware run) only to callers the gate remembers admitting.

The server is wired as ``serve`` wires it: the authentication filter, which can also admit synchronously,
over the examples folder (whose answers the response cache keeps). What a caller sees must not depend
on which way the request went: same bodies, same refusals, same access-log user.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from apiserver.auth.config import TrustOptions
from apiserver.auth.options import AuthOptions
from apiserver.http.keys import PIPELINE, Installs
from apiserver.sources.folder import FolderSource
from tests.support.auth_fixtures import AuthEnv, auth_env
from tests.support.fakekube.reviews import Rule
from tests.support.http_helpers import EXAMPLES, vm_path

ALICE = [("X-Remote-User", "alice"), ("X-Remote-Group", "dev"), ("Accept", "application/json")]
BOB = [("X-Remote-User", "bob"), ("X-Remote-Group", "dev"), ("Accept", "application/json")]
JSON = [("Content-Type", "application/json")]


def dispatcher(env: AuthEnv) -> Installs:
    return env.server.server.app[PIPELINE]


def short_ttl() -> AuthOptions:
    return AuthOptions(trust=TrustOptions(), authorized_ttl=0.5, unauthorized_ttl=0.5)


async def test_a_remembered_caller_gets_the_cached_answer_at_once(tmp_path: Path) -> None:
    async with auth_env(tmp_path, source=FolderSource(EXAMPLES, watch=False)) as env:
        env.reviews.rules[:] = [Rule("allow", user="alice")]
        at_once = dispatcher(env).answered_at_once
        first = await env.call(vm_path(), cert=env.pki.aggregator, headers=ALICE)
        second = await env.call(vm_path(), cert=env.pki.aggregator, headers=ALICE)
        assert first[0] == second[0] == 200
        assert first[2] == second[2] and second[2]["metadata"]["name"] == "fedora"
        assert first[1]["ETag"] == second[1]["ETag"]
        assert dispatcher(env).answered_at_once == at_once + 1  # the second one
        assert len(env.reviews.access_reviews) == 1


async def test_refusals_never_come_from_the_shortcut(tmp_path: Path) -> None:
    async with auth_env(tmp_path, source=FolderSource(EXAMPLES, watch=False), options=short_ttl()) as env:
        env.reviews.rules[:] = [Rule("allow", user="alice")]
        assert (await env.call(vm_path(), cert=env.pki.aggregator, headers=ALICE))[0] == 200
        at_once = dispatcher(env).answered_at_once
        # Another user with the answer cached: reviewed (and refused), not served.
        assert (await env.call(vm_path(), cert=env.pki.aggregator, headers=BOB))[0] == 403
        # Identity headers from a peer without the front-proxy certificate: 401 every time.
        for _ in range(2):
            assert (await env.call(vm_path(), headers=ALICE))[0] == 401
        # A certificate of the wrong name cannot borrow alice's remembered admission.
        assert (await env.call(vm_path(), cert=env.pki.wrong_cn, headers=ALICE))[0] == 401
        # The cluster changes its mind: once the allow has expired, alice is refused.
        env.reviews.rules[:] = [Rule("deny", user="alice")]
        await asyncio.sleep(0.6)  # the allow's TTL (0.5 s) running out is the behaviour under test
        assert (await env.call(vm_path(), cert=env.pki.aggregator, headers=ALICE))[0] == 403
        assert dispatcher(env).answered_at_once == at_once


async def test_reference_reviews_are_not_skipped(tmp_path: Path) -> None:
    async with auth_env(tmp_path, source=FolderSource(EXAMPLES, watch=False)) as env:
        env.reviews.rules[:] = [Rule("allow", user="alice", resource="virtualmachines")]
        env.runtime.gate.authorize_references = True
        assert (await env.call(vm_path(), cert=env.pki.aggregator, headers=ALICE))[0] == 403
        at_once = dispatcher(env).answered_at_once
        assert (await env.call(vm_path(), cert=env.pki.aggregator, headers=ALICE))[0] == 403
        assert dispatcher(env).answered_at_once == at_once


async def test_the_access_log_names_the_caller_either_way(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with auth_env(tmp_path, source=FolderSource(EXAMPLES, watch=False)) as env:
        env.reviews.rules[:] = [Rule("allow", user="alice")]
        with caplog.at_level(logging.INFO, logger="apiserver.access"):
            for _ in range(2):
                assert (await env.call(vm_path(), cert=env.pki.aggregator, headers=ALICE))[0] == 200
        lines = [r.getMessage() for r in caplog.records if r.name == "apiserver.access"]
        assert len(lines) == 2 and all(line.endswith(" user=alice") for line in lines)
        assert all(f"GET {vm_path()} 200 " in line for line in lines)


async def test_an_answer_that_needed_reviews_is_given_to_another_caller_only_after_them(
    tmp_path: Path,
) -> None:
    """alice may read the PVC her VM infers its instancetype from; bob may only expand. bob's identical
    request is refused as if rendered for him, although alice's answer (and error) is cached, and never
    from the shortcut; alice keeps getting it, after her cached review."""
    import shutil

    import yaml

    folder = tmp_path / "objects"
    shutil.copytree(EXAMPLES, folder)
    labels = {"instancetype.kubevirt.io/default-instancetype": "cmedium"}
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "disk", "namespace": "ns-b", "labels": labels},
    }
    (folder / "pvc.yaml").write_text(yaml.safe_dump(pvc))
    put = vm_path().replace("virtualmachines/fedora/expand-spec", "expand-vm-spec")
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "x"},
        "spec": {
            "instancetype": {"inferFromVolume": "root"},
            "dataVolumeTemplates": [
                {
                    "metadata": {"name": "dv"},
                    "spec": {"source": {"pvc": {"namespace": "ns-b", "name": "disk"}}},
                }
            ],
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [{"name": "root", "dataVolume": {"name": "dv"}}],
                }
            },
        },
    }
    async with auth_env(tmp_path, source=FolderSource(folder, watch=False)) as env:
        env.reviews.rules[:] = [
            Rule("allow", user="alice"),
            Rule("allow", user="bob", resource="expand-vm-spec"),
        ]
        for _ in range(2):
            code, _, body = await env.call(
                put, cert=env.pki.aggregator, headers=ALICE + JSON, method="PUT", body=vm
            )
            assert code == 200, body
        at_once = dispatcher(env).answered_at_once
        for _ in range(2):
            code, _, body = await env.call(
                put, cert=env.pki.aggregator, headers=BOB + JSON, method="PUT", body=vm
            )
            assert code == 403
            assert body["message"] == (
                'persistentvolumeclaims "disk" is forbidden: User "bob" cannot get resource '
                '"persistentvolumeclaims" in API group "" in the namespace "ns-b"'
            )
        assert dispatcher(env).answered_at_once == at_once
        pvc_reviews = [
            r["spec"]
            for r in env.reviews.access_reviews
            if r["spec"]["resourceAttributes"].get("resource") == "persistentvolumeclaims"
        ]
        assert [s["user"] for s in pvc_reviews] == ["alice", "bob"]  # each cached afterwards
