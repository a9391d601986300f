"""The pure rendering engine: no I/O, no web, no cluster access."""

from apiserver.render.expand import ExpandResult, expand
from apiserver.render.kubernetes.errors import Cause, ExpandError
from apiserver.render.objects import LookupPending, ObjectIndex, ObjectLookup, ObjectRef

__all__ = [
    "Cause",
    "ExpandError",
    "ExpandResult",
    "LookupPending",
    "ObjectIndex",
    "ObjectLookup",
    "ObjectRef",
    "expand",
]
