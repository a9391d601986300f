"""What the server knows of itself at run time: whether it is shutting down, and what readiness asks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apiserver.sources.base import Check

# The readiness checks beyond the server's own (the source's, authentication's trust settings).
ChecksFn = Callable[[], Sequence[Check]]


@dataclass(slots=True)
class ServerState:
    """What the server itself knows about its readiness."""

    shutting_down: bool = False

    def checks(self) -> list[Check]:
        if self.shutting_down:
            return [Check("shutdown", False, "the server is shutting down")]
        return [Check("shutdown", True)]
