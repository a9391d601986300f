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
