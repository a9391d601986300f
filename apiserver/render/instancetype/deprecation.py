"""The deprecation label of common-instancetypes: a warning for a VM that uses a deprecated object.

KubeVirt itself reads no such label (neither ``pkg/instancetype/find`` nor virt-api's ``expand-spec``
warn); ``instancetype.kubevirt.io/deprecated: "true"`` is the convention of kubevirt/common-instancetypes
(its ``gn1`` series, and the ``server``/``highperformance`` classes before it), set on objects to be
removed in a later release. The warning names the object the rendering read: the live instancetype or
preference, or the copy a pinned ControllerRevision holds (its labels as they were when the revision was
taken); no other object is read for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

DEPRECATED_LABEL = "instancetype.kubevirt.io/deprecated"
_LABEL_BYTES = DEPRECATED_LABEL.encode()


def _is_mapping(value: Any) -> bool:
    # type() first: this runs on every rendering, and an ABC isinstance check costs more than the rest.
    return type(value) is dict or isinstance(value, Mapping)


def is_deprecated(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` carries ``instancetype.kubevirt.io/deprecated: "true"``."""
    meta = obj.get("metadata")
    if not meta or not _is_mapping(meta):
        return False
    labels = meta.get("labels")
    return bool(labels) and _is_mapping(labels) and labels.get(DEPRECATED_LABEL) == "true"


def revision_deprecated(rev: Mapping[str, Any]) -> bool:
    """Whether the object a ControllerRevision holds (``data``: JSON value or raw bytes) is deprecated;
    raw data is parsed only when it holds the label's name at all."""
    data = rev.get("data")
    if isinstance(data, bytes | bytearray):
        if _LABEL_BYTES not in data:
            return False
        try:
            data = json.loads(data)
        except ValueError:
            return False
    if type(data) is not dict and not isinstance(data, Mapping):
        return False
    return is_deprecated(data)


def deprecation_warning(kind: str, namespace: str, name: str) -> str:
    """``VirtualMachineClusterInstancetype gn1.xlarge is deprecated (label
    instancetype.kubevirt.io/deprecated=true) and may be removed in a future release`` (no quotes: it goes
    into a quoted ``Warning`` header as it is)."""
    qualified = f"{namespace}/{name}" if namespace else name
    return f"{kind} {qualified} is deprecated (label {DEPRECATED_LABEL}=true) and may be removed in a future release"
