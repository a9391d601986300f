"""The whole VMI virt-api's webhook leaves, asked of KubeVirt live for every input of the launcher corpus,
where its ``expand-launcher`` oracle is built (``KUBEVIRT_EXPAND_LAUNCHER_ORACLE``, else
../oracle/bin/expand-launcher): ours (``start_vmi`` then ``mutate_vmi``; for a VMI given whole, ``admit_vmi``)
must give the same spec, metadata and status. Left aside: the uid and owner reference the oracle's harness
makes, the phase transition's time, and the random firmware UUID the webhook draws for a VMI given without
one. CI has no oracle: the test skips, saying why."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

from apiserver.render import ObjectIndex, expand
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.launcher import admit_vmi
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


def _without_drawn_uuid(vmi: dict[str, Any]) -> dict[str, Any]:
    """The VMI without the firmware UUID ``SetDefaults_Firmware`` draws at random (``uuid.NewString``)."""
    out = json.loads(json.dumps(vmi))
    firmware = ((out.get("spec") or {}).get("domain") or {}).get("firmware")
    if isinstance(firmware, dict):
        firmware.pop("uuid", None)
    return out


@pytest.mark.skipif(
    not ORACLE.exists(), reason=f"no expand-launcher oracle at {ORACLE} (not built on this machine)"
)
def test_the_webhooks_vmi_is_kubevirts_for_every_vmi_given_whole() -> None:
    """The vmis family: a user's VMI through the webhook alone (no VM controller), as launch_vmi admits it;
    a refusal must be the webhook's, with its message."""
    inputs = [json.loads(line)["input"] for line in (CASES / "vmis.jsonl").read_text().splitlines()]
    answers = _ask(inputs)
    compared = refused = 0
    differ: list[str] = []
    for index, (given, answer) in enumerate(zip(inputs, answers, strict=True)):
        kubevirt = CORPUS.harness_kubevirt(given.get("kubevirt"), given.get("arch") or "amd64")
        try:
            ours, _ = admit_vmi(launcher_config(kubevirt), given["vmi"])
        except ExpandError as err:
            assert answer.get("stage") == "vmi-mutation", (index, err.message)
            assert answer["error"] == f"admission denied: {err.message}"
            refused += 1
            continue
        assert answer.get("vmi"), (index, answer.get("error"))
        compared += 1
        if _comparable(_without_drawn_uuid(ours)) != _comparable(_without_drawn_uuid(answer["vmi"])):
            differ.append(f"vmi-{index}")
    assert compared >= 90 and refused >= 1
    assert not differ, f"{len(differ)} of {compared} differ, first: {differ[:5]}"


def _ask(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The oracle's whole answers (``CORPUS.ask_oracle`` keeps only the corpus's parts)."""
    text = "".join(json.dumps(i) + "\n" for i in inputs)
    done = subprocess.run([str(ORACLE)], input=text, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]
