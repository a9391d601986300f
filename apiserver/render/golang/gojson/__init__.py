"""Go ``encoding/json`` semantics for KubeVirt's API types.

``decode`` keeps what ``json.Unmarshal`` into the typed struct keeps, ``encode`` writes what
``json.Marshal`` writes, ``roundtrip`` does both, and ``check`` lists a body's schema problems. ``root`` is
a root key (``VirtualMachine``, ``VirtualMachineInstancetype``, ``VirtualMachineClusterPreference``,
``KubeVirt``, ``KubeVirtConfiguration``, ``ControllerRevision``, ...) or a full Go type name such as
``kubevirt.io/api/core/v1.DomainSpec``.
"""

from apiserver.render.golang.gojson.check import check, check_first
from apiserver.render.golang.gojson.codec import ZERO_TIME, decode, encode, roundtrip
from apiserver.render.golang.gojson.errors import GoDecodeError, SchemaProblem
from apiserver.render.golang.gojson.types import ROOTS

DecodeError = GoDecodeError  # the name some callers use

__all__ = [
    "ROOTS",
    "ZERO_TIME",
    "DecodeError",
    "GoDecodeError",
    "SchemaProblem",
    "check",
    "check_first",
    "decode",
    "encode",
    "roundtrip",
]
