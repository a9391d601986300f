#!/usr/bin/env python3
"""Generate apiserver/render/golang/gojson/gotypes.json from the shared KubeVirt type description.

Reads ../shared/spec/kubevirt-types/go-json-fields.json (Go's view of every type reachable from the API
roots) and swagger.json (for the ``required`` lists), keeps only what the Go JSON codec needs, and writes
a compact file into the package. The product never reads ../shared; rerun this script when the shared
description changes:

    .venv/bin/python -m hack.generators.gotypes
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "spec" / "kubevirt-types"
OUT = REPO / "apiserver" / "render" / "golang" / "gojson" / "gotypes.json"

CUSTOM = {
    "k8s.io/apimachinery/pkg/api/resource.Quantity": "quantity",
    "k8s.io/apimachinery/pkg/apis/meta/v1.Time": "time",
    "k8s.io/apimachinery/pkg/apis/meta/v1.Duration": "duration",
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": "intorstring",
    "k8s.io/apimachinery/pkg/runtime.RawExtension": "raw",
    "k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1": "raw",
}
HOOKS = {
    "kubevirt.io/api/core/v1.VirtualMachineInstanceSpec": "dnsNameservers",
    "kubevirt.io/api/core/v1.DHCPOptions": "ntpServers",
    "kubevirt.io/api/core/v1.PodNetwork": "vmNetworkCIDR",
}


def short_go_type(name: str) -> str:
    """Go's reflect.Type.String() for a full type name: ``kubevirt.io/api/core/v1.Disk`` -> ``v1.Disk``."""
    if name.startswith("[]"):
        return "[]" + short_go_type(name[2:])
    if name.startswith("*"):
        return "*" + short_go_type(name[1:])
    if name.startswith("map["):
        depth, i = 0, 3
        for i in range(3, len(name)):
            depth += {"[": 1, "]": -1}.get(name[i], 0)
            if depth == 0:
                break
        return f"map[{short_go_type(name[4:i])}]{short_go_type(name[i + 1 :])}"
    slash = name.rfind("/")
    return name[slash + 1 :] if "." in name[slash + 1 :] else name


def compact_ref(ref: dict[str, Any], custom: set[str]) -> dict[str, Any]:
    kind = ref["kind"]
    out: dict[str, Any] = {"k": kind, "g": short_go_type(ref["type"])}
    if ref.get("pointer"):
        out["p"] = 1
    if kind == "struct":
        out["t"] = ref["type"]
        if ref["type"] in custom:
            out["k"] = "custom"
            out["c"] = CUSTOM[ref["type"]]
    if "key" in ref:
        out["key"] = compact_ref(ref["key"], custom)
    if "elem" in ref:
        out["elem"] = compact_ref(ref["elem"], custom)
    return out


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    fields_doc = json.loads((SHARED / "go-json-fields.json").read_text())
    swagger = json.loads((SHARED / "swagger.json").read_text())["definitions"]
    types = fields_doc["types"]
    custom = set(fields_doc["customMarshalTypes"])
    unknown = custom - set(CUSTOM)
    if unknown:
        print(f"custom marshal types without a codec: {sorted(unknown)}", file=sys.stderr)
        return 1

    structs: dict[str, Any] = {}
    for name, entry in sorted(types.items()):
        if entry["kind"] != "struct" or entry.get("customMarshal"):
            continue
        fields = []
        for member in entry["jsonFields"]:
            omit = ("e" if member["omitempty"] else "") + ("z" if member["omitzero"] else "")
            fields.append([member["json"], compact_ref(member, custom), omit])
        definition = swagger.get(entry.get("swaggerDefinition") or "", {})
        item: dict[str, Any] = {"go": entry["goName"], "fields": fields}
        if definition.get("required"):
            item["required"] = definition["required"]
        if name in HOOKS:
            item["hook"] = HOOKS[name]
        structs[name] = item
    missing_hooks = set(fields_doc["decodeHookTypes"]) - set(HOOKS)
    if missing_hooks:
        print(f"decode hooks not implemented: {sorted(missing_hooks)}", file=sys.stderr)
        return 1

    out = {
        "format": "kubevirt-expand-gotypes/v1",
        "generatedBy": "hack/generators/gotypes.py from shared/spec/kubevirt-types/{go-json-fields,swagger}.json",
        "source": fields_doc["source"],
        "roots": fields_doc["roots"],
        "structs": structs,
    }
    OUT.write_text(json.dumps(out, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(REPO)}: {len(structs)} structs, {OUT.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
