"""Every golden case of KubeVirt's VM webhook (../shared/conformance-admission): ``validate=true`` gives
KubeVirt's verdict. Every case runs through the Python API; a sample of every area through the server
(``PUT .../expand-vm-spec?validate=true``) and through the command line (``expand --validate``).

``KUBEVIRT_EXPAND_ADMISSION_CASES`` runs the same tests on another folder of cases (the held-back ones).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apiserver import ExpandError
from apiserver.cli import main
from apiserver.render.admission import PREFIX
from tests.cli.test_expand import dump, sample, status_lines
from tests.support import shared
from tests.support.admission_cases import AdmissionCase, case_files, check_case, load
from tests.support.http_helpers import MemorySource, put_path, running_server

FILES = case_files()
IDS = [p.stem for p in FILES]
SAMPLE = sample(FILES, per_area=3)
needs_cases = shared.needs_shared(shared.ADMISSION_CASES_DIR)


@needs_cases
def test_corpus_is_present() -> None:
    assert len(FILES) >= 1476


@needs_cases
def test_sample_covers_every_area() -> None:
    assert {p.stem.rsplit("-", 1)[0] for p in SAMPLE} == {p.stem.rsplit("-", 1)[0] for p in FILES}


@shared.parametrize("path", FILES, IDS, needs=shared.ADMISSION_CASES_DIR)
def test_case(path: Path) -> None:
    check_case(load(path))


# --- through the server ------------------------------------------------------------------------------


def _namespace(case: AdmissionCase) -> str:
    return str(case.input["vm"].get("metadata", {}).get("namespace") or "default")


@shared.parametrize("path", SAMPLE, [p.stem for p in SAMPLE], needs=shared.ADMISSION_CASES_DIR)
async def test_case_through_the_server(path: Path, tmp_path: Path) -> None:
    case = load(path)
    inp, verdict = case.input, case.verdict
    source = MemorySource(objects=inp["objects"], kubevirt_cr=inp.get("kubevirt"))
    async with running_server(source, tmp_path) as srv:
        reply = await srv.put(
            put_path(_namespace(case)) + "?validate=true&fieldValidation=Ignore", json_body=inp["vm"]
        )
    body = reply.json()
    if verdict.get("allowed") is True:
        if reply.status != 200:  # KubeVirt admits a VM that cannot be rendered: the rendering error stands
            assert reply.status == 422 and not body["message"].startswith(PREFIX), body
            return
        assert body["kind"] == "VirtualMachine"
        warnings = reply.header_lists.get("warning", [])
        for text in verdict.get("warnings", []):
            assert any(text in w for w in warnings), (text, warnings)
        return
    assert reply.status in (400, 422), body
    if "causes" in verdict:
        assert body["details"]["causes"] == verdict["causes"]
        assert body["message"] == PREFIX + verdict["result"]["message"]


# --- through the command line ------------------------------------------------------------------------


@shared.parametrize("path", SAMPLE, [p.stem for p in SAMPLE], needs=shared.ADMISSION_CASES_DIR)
def test_case_through_the_command_line(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = load(path)
    inp, verdict = case.input, case.verdict
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "vm.yaml").write_text(dump([inp["vm"]]))
    if inp["objects"]:
        (folder / "objects.yaml").write_text(dump(inp["objects"]))
    args = ["expand", "-f", str(folder), "-o", "json", "--validate", "--field-validation", "Ignore"]
    if "kubevirt" in inp:
        kubevirt_file = tmp_path / "kubevirt.yaml"
        kubevirt_file.write_text(dump([inp["kubevirt"]]))
        args += ["--kubevirt", str(kubevirt_file)]
    code = main(args)
    out, err = capsys.readouterr()
    if verdict.get("allowed") is True:
        if code == 0:
            assert json.loads(out)["kind"] == "VirtualMachine"
            for text in verdict.get("warnings", []):
                assert any(
                    line.startswith("Warning: ") and line.endswith(text) for line in err.splitlines()
                ), err
        else:  # the rendering error stands
            ((_, status),) = status_lines(err)
            assert not status["message"].startswith(PREFIX), status
        return
    assert code == 1, err
    ((_, status),) = status_lines(err)
    if "causes" in verdict:
        assert status["details"]["causes"] == verdict["causes"]
        assert status["message"] == PREFIX + verdict["result"]["message"]


def test_refusal_is_an_expand_error() -> None:
    """``AdmissionDenied`` is an ``ExpandError``: callers that catch the latter keep working."""
    from apiserver.render.admission import AdmissionDenied

    assert issubclass(AdmissionDenied, ExpandError)
