"""``json.UnmarshalStrict``'s unknown-member check for members holding KubeVirt core types."""

from __future__ import annotations

from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.golang.gojson.errors import UNKNOWN_FIELD


class StrictDecodeError(ValueError):
    """A member the Go type does not have: a strict decode fails on it."""


def check_strict(value: Any, go_type: str) -> None:
    """Raise :class:`StrictDecodeError` for a member ``go_type`` lacks (exact names, any depth).

    Only unknown members count here: type errors fail Go's lenient decode as well, and ``required``
    is an OpenAPI notion that Go's decoder does not have.
    """
    for problem in gojson.check(value, go_type):
        if problem.reason == UNKNOWN_FIELD:
            raise StrictDecodeError(problem.message)
