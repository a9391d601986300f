"""Hostile running state: a VM as started, a running VMI or a proposed VM with any member replaced by a
value of another type gets a verdict or an ExpandError (a Status naming the field), never a crash."""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.objects import ObjectIndex
from apiserver.render.vmcontroller.preview import VERDICTS, preview

CORPUS = Path(__file__).with_name("corpus")
SETTLE = Path(__file__).with_name("settle")
BOGUS: list[Any] = [None, "", "x", 0, -1, 3.5, True, [], {}, [1], {"a": 1}, "1Gi", "-5", [None], [{}]]


def _paths(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if at:
        yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*at, index))


@pytest.mark.parametrize("seed", range(4))
def test_any_member_of_another_type_is_a_verdict_or_a_status(seed: int) -> None:
    rng = random.Random(seed)
    records = []
    for path in sorted(CORPUS.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            records += [json.loads(line) for line in lines]
    for _ in range(150):
        inp = copy.deepcopy(rng.choice(records)["input"])
        which = rng.choice(["vm", "vmi", "vmi", "startVM"])
        target = rng.choice(list(_paths(inp[which])))
        node = inp[which]
        for key in target[:-1]:
            node = node[key]
        node[target[-1]] = rng.choice(BOGUS)
        try:
            result = preview(
                inp["vm"],
                ObjectIndex(inp["objects"]),
                current=inp["startVM"],
                vmi=inp["vmi"],
                start_vm=inp["startVM"],
                kubevirt=inp["kubevirt"],
            )
        except ExpandError as err:
            assert err.code in (400, 422), err.status
            continue
        assert result.verdict in VERDICTS


@pytest.mark.parametrize("seed", range(4))
def test_hostile_volume_migration_state_is_a_verdict_or_a_status(seed: int) -> None:
    """The same on the recorded migration and hotplug cases, the PVCs and DataVolumes they read included."""
    rng = random.Random(seed)
    records = []
    for name in ("migration", "hotplug"):
        with gzip.open(SETTLE / f"{name}.jsonl.gz", "rt", encoding="utf-8") as lines:
            records += [json.loads(line) for line in lines]
    for _ in range(150):
        inp = copy.deepcopy(rng.choice(records)["input"])
        which = rng.choice(["vm", "vmi", "vmi", "objects"])
        paths = list(_paths(inp[which]))
        if not paths:
            continue
        target = rng.choice(paths)
        node = inp[which]
        for key in target[:-1]:
            node = node[key]
        node[target[-1]] = rng.choice(BOGUS)
        objects = [o for o in inp["objects"] if isinstance(o, dict)]
        try:
            result = preview(
                inp["vm"],
                ObjectIndex(objects),
                current=inp["startVM"],
                vmi=inp["vmi"],
                start_vm=inp["startVM"],
                kubevirt=inp["kubevirt"],
            )
        except ExpandError as err:
            assert err.code in (400, 422), err.status
            continue
        assert result.verdict in VERDICTS


@pytest.mark.parametrize("member", ["interfaces", "conditions", "volumeStatus", "migratedVolumes"])
@pytest.mark.parametrize("value", [3.5, "x", {"a": 1}, True])
def test_a_vmi_status_list_of_another_type_is_a_status_naming_it(member: str, value: Any) -> None:
    with gzip.open(SETTLE / "migration.jsonl.gz", "rt", encoding="utf-8") as lines:
        inp = json.loads(next(lines))["input"]
    inp["vmi"]["status"][member] = value
    with pytest.raises(ExpandError) as raised:
        preview(
            inp["vm"],
            ObjectIndex(inp["objects"]),
            current=inp["startVM"],
            vmi=inp["vmi"],
            start_vm=inp["startVM"],
            kubevirt=inp["kubevirt"],
        )
    assert raised.value.code == 422
    causes = raised.value.status["details"]["causes"]
    assert [c["field"] for c in causes] == [f"status.{member}"]
    assert "must be a list" in raised.value.message
