#!/usr/bin/env python3
"""Generate apiserver/render/admission/openapi.json: the OpenAPI schemas KubeVirt's VM webhook checks a VM against.

virt-api validates the ``spec`` and ``status`` of a VirtualMachine against its OpenAPI definitions before any
other rule (``pkg/util/openapi``). This script keeps, from ../shared/spec/kubevirt-types/swagger.json, the
definitions reachable from ``v1.VirtualMachineSpec`` and ``v1.VirtualMachineStatus``, and of each only what
validation reads (type, format, nullable, enum, required, which members have defaults, properties, items,
additionalProperties). The product never reads ../shared; rerun this script when the shared description
changes:

    .venv/bin/python -m hack.generators.admission_schema
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "spec" / "kubevirt-types"
OUT = REPO / "apiserver" / "render" / "admission" / "openapi.json"
ROOTS = ("v1.VirtualMachineSpec", "v1.VirtualMachineStatus")
_PREFIX = "#/definitions/"


def compact(schema: dict[str, Any], pending: list[str]) -> dict[str, Any]:
    """The parts of one schema that validation reads; ``$ref`` targets are queued."""
    out: dict[str, Any] = {}
    ref = schema.get("$ref")
    if ref:
        name = ref.removeprefix(_PREFIX)
        pending.append(name)
        out["$ref"] = name
    kind = schema.get("type")
    if kind:
        out["type"] = kind if isinstance(kind, list) else [kind]
    for key in ("format", "nullable", "enum"):
        if key in schema:
            out[key] = schema[key]
    if "default" in schema:
        out["default"] = True
    if schema.get("required"):
        out["required"] = schema["required"]
    props = schema.get("properties")
    if props:
        out["properties"] = {name: compact(sub, pending) for name, sub in props.items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = compact(schema["items"], pending)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = compact(extra, pending)
    elif isinstance(extra, bool):
        out["additionalProperties"] = extra
    return out


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    definitions = json.loads((SHARED / "swagger.json").read_text())["definitions"]
    pending = list(ROOTS)
    kept: dict[str, Any] = {}
    while pending:
        name = pending.pop()
        if name in kept:
            continue
        if name not in definitions:
            print(f"missing definition {name}", file=sys.stderr)
            return 1
        kept[name] = compact(definitions[name], pending)
    out = {
        "format": "kubevirt-expand-admission-openapi/v1",
        "generatedBy": "hack/generators/admission_schema.py from shared/spec/kubevirt-types/swagger.json",
        "roots": list(ROOTS),
        "definitions": dict(sorted(kept.items())),
    }
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT.relative_to(REPO)}: {len(kept)} definitions, {OUT.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
