"""The whole VMI virt-api's webhook leaves, asked of KubeVirt live for every input of the launcher corpus,
where its ``expand-launcher`` oracle is built (``KUBEVIRT_EXPAND_LAUNCHER_ORACLE``, else
../oracle/bin/expand-launcher): ours (``start_vmi`` then ``mutate_vmi``) must give the same spec, metadata
and status. Left aside: the uid and owner reference the oracle's harness makes, and the phase transition's
time. CI has no oracle: the test skips, saying why."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

from apiserver.render import ObjectIndex, expand
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.templateservice.config import launcher_config
from apiserver.render.vmcontroller.startvmi import start_vmi
from apiserver.render.vmimutation.mutate import mutate_vmi
from hack.oracle import launcher_corpus as CORPUS

ORACLE = Path(CORPUS.DEFAULT_ORACLE)
CASES = Path(__file__).parent / "cases"


def _ours(given: dict[str, Any]) -> dict[str, Any] | None:
    kubevirt = CORPUS.harness_kubevirt(given.get("kubevirt"), given.get("arch") or "amd64")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expanded = expand(given["vm"], ObjectIndex(given.get("objects") or []), kubevirt=kubevirt)
    except ExpandError:
        return None
    config = launcher_config(kubevirt)
    vmi = start_vmi(expanded.vm, config.admission.render, written=given["vm"], preference=expanded.preference)
    return mutate_vmi(config, vmi)


def _comparable(vmi: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in vmi["metadata"].items() if k not in ("uid", "ownerReferences")}
    status = {k: v for k, v in (vmi.get("status") or {}).items() if k != "phaseTransitionTimestamps"}
    return json.loads(json.dumps({"metadata": meta, "spec": vmi["spec"], "status": status}))


@pytest.mark.skipif(
    not ORACLE.exists(), reason=f"no expand-launcher oracle at {ORACLE} (not built on this machine)"
)
def test_the_webhooks_vmi_is_kubevirts_for_every_corpus_input() -> None:
    inputs = [
        json.loads(line)["input"]
        for path in sorted(CASES.glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    inputs = [given for given in inputs if "vm" in given]
    assert len(inputs) >= 800
    answers = _ask(inputs)
    compared = differ = 0
    first: list[str] = []
    for given, answer in zip(inputs, answers, strict=True):
        ours = _ours(given)
        if not answer.get("vmi") or ours is None:
            continue
        compared += 1
        if _comparable(ours) != _comparable(answer["vmi"]):
            differ += 1
            first.append(str(given["vm"].get("metadata", {}).get("name")))
    assert compared >= 800
    assert differ == 0, f"{differ} of {compared} differ, first: {first[:5]}"


def _ask(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The oracle's whole answers (``CORPUS.ask_oracle`` keeps only the corpus's parts)."""
    text = "".join(json.dumps(i) + "\n" for i in inputs)
    done = subprocess.run([str(ORACLE)], input=text, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]
