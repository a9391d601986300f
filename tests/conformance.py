"""Loading and judging the golden cases of ../shared/conformance (read in place, never copied)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# KUBEVIRT_EXPAND_CONFORMANCE points at another cases folder (the held-back cases, built the same way).
CASES_DIR = Path(
    os.environ.get("KUBEVIRT_EXPAND_CONFORMANCE", REPO.parent / "shared" / "conformance" / "cases")
)

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
    if not CASES_DIR.is_dir():
        raise RuntimeError(f"conformance cases not found at {CASES_DIR} (shared/ must sit beside the repo)")
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
