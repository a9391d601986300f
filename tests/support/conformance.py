"""Loading and judging the golden cases of ../shared/conformance (read in place, never copied)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.shared import CASES_DIR, problem

__all__ = ["CASES_DIR", "Case", "case_files", "error_matches", "iter_cases", "load"]

# Superseded by legacy-065 (same input): it records KubeVirt v1.7+ refusing a revision we decode.
SUPERSEDED = {"revision-021"}


@dataclass(frozen=True)
class Case:
    id: str
    data: dict[str, Any]

    @property
    def input(self) -> dict[str, Any]:
        return self.data["input"]  # type: ignore[no-any-return]

    @property
    def expected(self) -> dict[str, Any]:
        return self.data["expected"]  # type: ignore[no-any-return]


def case_files() -> list[Path]:
    """Every case file; none when the folder is absent (the tests reading them carry ``needs_shared``)."""
    if problem(CASES_DIR) is not None:
        return []
    return sorted(p for p in CASES_DIR.glob("*.json") if p.stem not in SUPERSEDED)


def load(path: Path) -> Case:
    return Case(path.stem, json.loads(path.read_text()))


def iter_cases() -> Iterator[Case]:
    for p in case_files():
        yield load(p)


def error_matches(expected: Mapping[str, Any], message: str) -> bool:
    """Compare an error as the corpus README says: exact, by prefix, or (panic) only that it failed."""
    if expected.get("kind") == "panic":
        return True
    prefix = expected.get("errorPrefix")
    if prefix:
        return message.startswith(prefix)
    return message == str(expected["error"])
