"""The assumed VMI (offline previews) against the VMIs KubeVirt's own startVMI and VMI webhook made for
every running VM of the corpus: the fields the live-update rules read are equal."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from apiserver.render.expand import expand
from apiserver.render.objects import ObjectIndex
from apiserver.render.vmcontroller.assumedvmi import assumed_vmi
from apiserver.render.vmcontroller.sync import controller_config

CORPUS = Path(__file__).with_name("corpus")
FAMILIES = sorted(p.name.removesuffix(".jsonl.gz") for p in CORPUS.glob("*.jsonl.gz"))


def _read(vmi: dict[str, Any]) -> dict[str, Any]:
    domain = vmi["spec"]["domain"]
    cpu, memory = domain.get("cpu") or {}, domain.get("memory") or {}
    return {
        "sockets": cpu.get("sockets"),
        "cores": cpu.get("cores"),
        "threads": cpu.get("threads"),
        "maxSockets": cpu.get("maxSockets"),
        "guest": memory.get("guest"),
        "maxGuest": memory.get("maxGuest"),
        "guestAtBoot": (vmi["status"].get("memory") or {}).get("guestAtBoot"),
        "uuid": (domain.get("firmware") or {}).get("uuid"),
        "architecture": vmi["spec"].get("architecture"),
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_the_fields_live_updates_read_are_kubevirts(family: str) -> None:
    with gzip.open(CORPUS / f"{family}.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    differ = []
    for record in records:
        inp = record["input"]
        rendered = expand(inp["startVM"], ObjectIndex(inp["objects"]), kubevirt=inp["kubevirt"]).vm
        live = controller_config(inp["kubevirt"]).live_update
        mine = json.loads(json.dumps(_read(assumed_vmi(rendered, inp["kubevirt"], live_update=live))))
        if mine != _read(inp["vmi"]):
            differ.append((record["name"], mine, _read(inp["vmi"])))
    assert not differ, f"{len(differ)} of {len(records)} differ: {differ[:2]}"
