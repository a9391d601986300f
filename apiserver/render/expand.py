"""The expand pipeline: find, default, apply the instancetype and preference, default again, strip."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.objects import ObjectLookup


@dataclass(slots=True)
class ExpandResult:
    """The expanded VM (Go-encoded member order) and what the caller should surface beside it."""

    vm: dict[str, Any]
    # Human-readable warnings (preset conflicts, deprecations), sent as HTTP ``Warning`` headers.
    warnings: list[str] = field(default_factory=list)


def expand(
    vm: Mapping[str, Any],
    lookup: ObjectLookup,
    *,
    kubevirt: Mapping[str, Any] | None = None,
    presets: bool = False,
    validate: bool = False,
    exact_names: bool = False,
) -> ExpandResult:
    """Expand ``vm`` as KubeVirt does.

    ``kubevirt`` is a KubeVirt CR or its ``spec.configuration``. ``exact_names`` decodes member names
    case-sensitively, as client-go does for objects read from the API server; request bodies and files
    are decoded like ``encoding/json`` (a case-insensitive match when no exact one exists).
    Raises :class:`~apiserver.render.errors.ExpandError` with the Status to send, or
    :class:`~apiserver.render.objects.LookupPending` when ``lookup`` must fetch an object first.
    """
    raise NotImplementedError
