"""Every golden case of the KubeVirt conformance corpus, through the Python API.

The cases record KubeVirt's expand, which decodes the VM leniently as Go's ``encoding/json`` does: the
``Ignore`` field-validation level. ``Warn`` expands the same way and reports what ``Strict`` refuses.
"""

from __future__ import annotations

import json
from pathlib import Path

from apiserver import ExpandError, expand, expand_vm
from apiserver.render.admission import AdmissionDenied
from apiserver.render.golang import gojson
from tests.support import shared
from tests.support.admission_cases import check_refusal, golden_verdicts
from tests.support.conformance import case_files, error_matches, load

FILES = case_files()
IDS = [p.stem for p in FILES]
needs_cases = shared.needs_shared(shared.CASES_DIR)


def schema_findings(vm: dict[str, object]) -> list[tuple[str, str]]:
    return [(p.path, p.reason) for p in gojson.check(vm, "VirtualMachine")]


@needs_cases
def test_corpus_is_present() -> None:
    assert len(FILES) > 2000


@shared.parametrize("path", FILES, IDS)
def test_expand(path: Path) -> None:
    case = load(path)
    inp, exp = case.input, case.expected
    presets = case.id.startswith("presets-")
    try:
        result = expand(
            inp["vm"], inp["objects"], inp.get("kubevirt"), presets=presets, field_validation="Ignore"
        )
    except ExpandError as err:
        assert "error" in exp, f"unexpected failure: {err.status}"
        assert error_matches(exp, err.message), err.message
        assert err.code == 422 and err.reason == "Invalid"
        return
    assert "error" not in exp, f"expected failure {exp.get('error')!r}, got an expanded VM"
    got = result.vm
    assert got == exp["expanded"]
    # The preset warnings come back too (the server's Warning headers).
    for warning in exp.get("warnings", []):
        assert any(warning["preset"] in text for text in result.warnings), (warning, result.warnings)
    if not presets:
        assert result.warnings == ()
    # Member order too, at every level: the renderer writes Go's order, so the bytes equal KubeVirt's.
    assert json.dumps(got) == json.dumps(exp["expanded"])


# The whole webhook's verdict on inputs of this corpus, where ../shared/conformance-admission holds it.
GOLDEN = golden_verdicts()
# Stages that are the instancetype/preference part of the webhook (this corpus's ``admission`` block).
INSTANCETYPE_STAGES = ("instancetype", "requirements", "panic")


@shared.parametrize("path", FILES, IDS)
def test_admission(path: Path) -> None:
    """``validate=True`` runs the whole webhook; the ``admission`` block records its instancetype part.

    A refusal by that part carries the block's causes; a refusal by another stage means that part passed
    (and, where ../shared/conformance-admission holds the input, equals KubeVirt's whole verdict).
    """
    case = load(path)
    inp, exp = case.input, case.expected
    admission = exp["admission"]
    golden = GOLDEN.get(case.id)
    # In area presets, kinds presets and panic come from the presets step, after a successful expand.
    expand_failed = "error" in exp and not (
        case.id.startswith("presets-") and exp["kind"] in ("presets", "panic")
    )
    try:
        expand_vm(inp["vm"], inp["objects"], inp.get("kubevirt"), validate=True, field_validation="Ignore")
    except AdmissionDenied as err:
        if golden is not None:
            check_refusal(golden, err)
        if err.verdict.stage in INSTANCETYPE_STAGES:
            assert admission["allowed"] is False, f"denied but admission allows: {err.status}"
            if err.verdict.stage != "panic":
                assert err.causes == admission["causes"]
        elif err.verdict.stage != "schema":
            assert admission["allowed"] is True or expand_failed, (admission, err.status)
            assert golden is not None or not shared.CASES_DIR_IS_SHARED, (
                f"refused at stage {err.verdict.stage} where the golden admission cases have no verdict: {err.status}"
            )
        return
    except ExpandError as err:
        if expand_failed:
            # Expand itself fails first; what admission would say is beside the point.
            assert error_matches(exp, err.message)
            return
        assert admission["allowed"] is False, f"denied but admission allows: {err.status}"
        assert err.message == admission["error"]
        return
    assert not expand_failed
    assert admission["allowed"] is True, f"admitted but admission denies: {admission}"
    assert golden is None or golden["allowed"] is True


@needs_cases
def test_strict_refuses_exactly_the_schema_invalid_inputs() -> None:
    """Two corpus VMs spell ``dedicatedCPUPlacement`` in another case and three have ``inputs[]``
    without ``type``: Go's decoder lets them through, Strict refuses them with those causes, Warn
    expands them as the cases record and warns, and every other case is unaffected by the level."""
    refused: dict[str, list[tuple[str, str]]] = {}
    invalid = set()
    for path in FILES:
        case = load(path)
        inp, exp = case.input, case.expected
        findings = schema_findings(inp["vm"])
        if findings:
            invalid.add(case.id)
        try:
            expand(inp["vm"], inp["objects"], inp.get("kubevirt"))  # Strict, the default
        except ExpandError as err:
            if findings:
                assert err.code == 422 and err.reason == "Invalid"
                assert [(c["field"], c["reason"]) for c in err.causes] == findings
                refused[case.id] = findings
                if "expanded" in exp:
                    warned = expand(inp["vm"], inp["objects"], inp.get("kubevirt"), field_validation="Warn")
                    assert warned.vm == exp["expanded"]
                    assert len(warned.warnings) == len(findings)
                continue
            assert "error" in exp, f"{case.id}: refused at Strict only: {err.status}"
            continue
        assert not findings, case.id
    assert set(refused) == invalid and invalid  # five in the shared corpus
    assert {reason for found in refused.values() for _, reason in found} == {
        "FieldValueRequired",
        "FieldValueUnknownField",
    }
