"""Every golden case of the KubeVirt conformance corpus, through the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apiserver import ExpandError, expand_vm
from tests.conformance import case_files, error_matches, load

FILES = case_files()


def test_corpus_is_present() -> None:
    assert len(FILES) > 2000


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_expand(path: Path) -> None:
    case = load(path)
    inp, exp = case.input, case.expected
    presets = case.id.startswith("presets-")
    try:
        got = expand_vm(inp["vm"], inp["objects"], inp.get("kubevirt"), presets=presets)
    except ExpandError as err:
        assert "error" in exp, f"unexpected failure: {err.status}"
        assert error_matches(exp, err.message), err.message
        assert err.code == 422 and err.reason == "Invalid"
        return
    assert "error" not in exp, f"expected failure {exp.get('error')!r}, got an expanded VM"
    assert got == exp["expanded"]
    # Member order too, at every level: the renderer writes Go's order, so the bytes equal KubeVirt's.
    assert json.dumps(got) == json.dumps(exp["expanded"])


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_admission(path: Path) -> None:
    case = load(path)
    inp, exp = case.input, case.expected
    admission = exp["admission"]
    # In area presets, kinds presets and panic come from the presets step, after a successful expand.
    expand_failed = "error" in exp and not (
        case.id.startswith("presets-") and exp["kind"] in ("presets", "panic")
    )
    try:
        expand_vm(inp["vm"], inp["objects"], inp.get("kubevirt"), validate=True)
    except ExpandError as err:
        if expand_failed:
            # Expand itself fails first; what admission would say is beside the point.
            assert error_matches(exp, err.message)
            return
        assert admission["allowed"] is False, f"denied but admission allows: {err.status}"
        if "causes" in admission:
            assert err.causes == admission["causes"]
        else:
            assert err.message == admission["error"]
        return
    assert not expand_failed
    assert admission["allowed"] is True, f"admitted but admission denies: {admission}"
