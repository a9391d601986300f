"""The Python API returns the preset warnings the server sends as ``Warning`` headers (issue 11)."""

from __future__ import annotations

import copy
import warnings
from pathlib import Path
from typing import Any

import pytest

from apiserver import ExpandWarning, expand, expand_vm
from apiserver.documents.manifests import read_manifest_paths
from tests.support.http_helpers import EXAMPLES, examples_server, put_path

OBJECTS = [obj for _, obj in read_manifest_paths([str(EXAMPLES)])]
PINNED = next(o for o in OBJECTS if o["metadata"]["name"] == "fedora-pinned")


def conflicting_vm() -> dict[str, Any]:
    """fedora-pinned with its own clock: the utc-clock preset's clock is not applied."""
    vm = copy.deepcopy(PINNED)
    vm["spec"]["template"]["spec"].setdefault("domain", {})["clock"] = {"timezone": "Europe/Paris"}
    return vm


def test_expand_returns_preset_conflicts_and_the_deprecation() -> None:
    result = expand(conflicting_vm(), OBJECTS, presets=True)
    assert result.warnings == (
        "Some settings were not applied for VirtualMachineInstancePreset 'utc-clock': "
        'spec.clock.clockoffset: {"utc":{}} != {"timezone":"Europe/Paris"}',
        "kubevirt.io/v1 VirtualMachineInstancePresets is now deprecated and will be removed in v2.",
    )
    assert result.vm["spec"]["template"]["spec"]["domain"]["clock"]["timezone"] == "Europe/Paris"  # kept
    assert expand(conflicting_vm(), OBJECTS).warnings == ()  # without presets: nothing to report


def test_expand_vm_issues_them_as_warnings() -> None:
    with pytest.warns(ExpandWarning) as caught:
        vm = expand_vm(conflicting_vm(), OBJECTS, presets=True)
    assert [str(w.message) for w in caught] == list(expand(conflicting_vm(), OBJECTS, presets=True).warnings)
    assert vm == expand(conflicting_vm(), OBJECTS, presets=True).vm
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all without presets
        expand_vm(conflicting_vm(), OBJECTS)


async def test_same_texts_as_the_servers_warning_headers(tmp_path: Path) -> None:
    async with examples_server(tmp_path) as srv:
        reply = await srv.put(put_path() + "?presets=true", json_body=conflicting_vm())
    assert reply.status == 200, reply.body
    headers = reply.header_lists["warning"]
    expected = [
        '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        for text in expand(conflicting_vm(), OBJECTS, presets=True).warnings
    ]
    assert headers == expected
