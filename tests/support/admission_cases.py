"""Loading and judging the golden cases of ../shared/conformance-admission (read in place, never copied).

Each case is KubeVirt's own VM webhook verdict for a CREATE. A case is met when ``validate=True``:

* refuses it with KubeVirt's causes, in KubeVirt's order (at most ten, as the webhook returns them) and
  KubeVirt's message after our prefix, when KubeVirt refuses it with causes;
* refuses it (any Status) when KubeVirt's code panics or answers with a bare error;
* admits it with KubeVirt's warnings, or answers with a rendering error (a VM KubeVirt admits but that
  cannot be rendered, such as one naming a missing instancetype), when KubeVirt admits it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiserver import Expanded, ExpandError, expand
from apiserver.render.admission import PREFIX, AdmissionDenied
from tests.support.shared import ADMISSION_CASES_DIR, problem


@dataclass(frozen=True)
class AdmissionCase:
    id: str
    data: dict[str, Any]

    @property
    def area(self) -> str:
        return self.id.rsplit("-", 1)[0]

    @property
    def input(self) -> dict[str, Any]:
        return self.data["input"]  # type: ignore[no-any-return]

    @property
    def verdict(self) -> dict[str, Any]:
        return self.data["expected"]["admission"]  # type: ignore[no-any-return]


def case_files() -> list[Path]:
    if problem(ADMISSION_CASES_DIR) is not None:
        return []
    return sorted(ADMISSION_CASES_DIR.glob("*.json"))


def load(path: Path) -> AdmissionCase:
    return AdmissionCase(path.stem, json.loads(path.read_text()))


def golden_verdicts() -> dict[str, dict[str, Any]]:
    """The whole-webhook verdicts of ../shared/conformance inputs (area ``golden``), by conformance case id."""
    out = {}
    for path in case_files():
        if path.stem.startswith("golden-"):
            case = load(path)
            out[case.data["name"].removesuffix(".json")] = case.verdict
    return out


def check_refusal(verdict: Mapping[str, Any], err: ExpandError) -> None:
    """``err`` is what KubeVirt's refusal ``verdict`` should be."""
    assert verdict.get("allowed") is not True, f"KubeVirt admits it; we refuse: {err.status}"
    if "causes" in verdict:
        assert isinstance(err, AdmissionDenied), err.status
        assert err.causes == verdict["causes"]
        assert err.message == PREFIX + verdict["result"]["message"]
        assert err.code == 422 and err.reason == "Invalid"
    else:  # a panic or a bare error: any refusal
        assert err.code in (400, 422), err.status


def check_case(case: AdmissionCase, render: Callable[..., Expanded] = expand) -> None:
    """Run a case through the Python API (``render``: :func:`apiserver.expand` or a function taking its
    arguments) and judge it as the module docstring says."""
    inp, verdict = case.input, case.verdict
    try:
        result = render(
            inp["vm"], inp["objects"], inp.get("kubevirt"), validate=True, field_validation="Ignore"
        )
    except AdmissionDenied as err:
        check_refusal(verdict, err)
        return
    except ExpandError as err:
        if verdict.get("allowed") is True:
            return  # KubeVirt admits a VM that cannot be rendered: the rendering error stands
        check_refusal(verdict, err)
        return
    assert verdict.get("allowed") is True, f"KubeVirt refuses it: {verdict}"
    assert list(result.warnings) == verdict.get("warnings", [])
